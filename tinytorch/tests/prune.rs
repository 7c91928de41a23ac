//! Pruning against `torch.nn.utils.prune` (fixtures/prune.safetensors from
//! scripts/fixtures/gen_prune_fixtures.py: the same weights give the same masks), masks that stay
//! applied through training, and structured pruning that removes channels with the masked
//! model's outputs.

mod common;
use common::{assert_close, load_fixture, Tol};

use std::collections::BTreeMap;
use tinytorch::models::{ImageShape, ModelKind};
use tinytorch::optim::{SgdOptions, SGD};
use tinytorch::prune::{
    global_unstructured, l1_unstructured, ln_structured, shrink, Amount, MaskedOptimizer,
    PruneMasks,
};
use tinytorch::{DType, Device, Tensor};

#[test]
fn masks_equal_pytorchs_on_the_same_weights() {
    let fx = load_fixture("prune.safetensors");
    let (conv, linear) = (&fx["conv.weight"], &fx["linear.weight"]);
    let m = l1_unstructured(conv, Amount::Fraction(0.3), None).unwrap();
    assert_close(&m, &fx["l1_conv_0.3"], Tol::EXACT, "l1 0.3");
    let m2 = l1_unstructured(conv, Amount::Fraction(0.5), Some(&m)).unwrap();
    assert_close(
        &m2,
        &fx["l1_conv_0.3_then_0.5"],
        Tol::EXACT,
        "l1 0.3 then 0.5 of the rest",
    );
    let m = l1_unstructured(linear, Amount::Count(37), None).unwrap();
    assert_close(&m, &fx["l1_linear_37"], Tol::EXACT, "l1 count");

    let g = global_unstructured(&[conv, linear], Amount::Fraction(0.6), &[None, None]).unwrap();
    assert_close(&g[0], &fx["global_0.6.conv"], Tol::EXACT, "global conv");
    assert_close(&g[1], &fx["global_0.6.linear"], Tol::EXACT, "global linear");

    let s = ln_structured(conv, Amount::Fraction(0.5), 2.0, 0, None).unwrap();
    assert_close(&s, &fx["ln2_conv_dim0_0.5"], Tol::EXACT, "ln2 dim 0");
    let s2 = ln_structured(conv, Amount::Fraction(0.5), 2.0, 0, Some(&s)).unwrap();
    assert_close(
        &s2,
        &fx["ln2_conv_dim0_0.5_then_0.5"],
        Tol::EXACT,
        "ln2 twice",
    );
    let s = ln_structured(linear, Amount::Count(3), 1.0, 0, None).unwrap();
    assert_close(&s, &fx["ln1_linear_dim0_3"], Tol::EXACT, "ln1 count");
    let s = ln_structured(linear, Amount::Fraction(0.25), 2.0, 1, None).unwrap();
    assert_close(&s, &fx["ln2_linear_dim1_0.25"], Tol::EXACT, "ln2 dim 1");
}

#[test]
fn bad_amounts_and_shapes_are_refused() {
    let w = Tensor::randn(&[4, 3], DType::F32, Device::Cpu).unwrap();
    for (amount, needle) in [
        (Amount::Fraction(1.5), "in [0, 1]"),
        (Amount::Count(13), "only 12 are left"),
    ] {
        let e = l1_unstructured(&w, amount, None).unwrap_err().to_string();
        assert!(e.contains("l1_unstructured") && e.contains(needle), "{e}");
    }
    let e = ln_structured(&w, Amount::Count(1), 2.0, 2, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("dim 2"), "{e}");
    let wrong = Tensor::ones(&[3, 4], DType::F32, Device::Cpu).unwrap();
    let e = l1_unstructured(&w, Amount::Count(1), Some(&wrong))
        .unwrap_err()
        .to_string();
    assert!(e.contains("mask of shape [3, 4]"), "{e}");
    let ints = Tensor::zeros(&[2], DType::I64, Device::Cpu).unwrap();
    assert!(l1_unstructured(&ints, Amount::Count(1), None).is_err());
}

fn mnist_batch() -> (Tensor, Tensor) {
    tinytorch::manual_seed(3);
    let x = Tensor::randn(&[16, 1, 28, 28], DType::F32, Device::Cpu).unwrap();
    let y = Tensor::from_vec((0..16).map(|i| i % 10).collect::<Vec<i64>>(), &[16]).unwrap();
    (x, y)
}

#[test]
fn pruned_weights_stay_zero_through_training_with_momentum() {
    tinytorch::manual_seed(0);
    let model = ModelKind::LeNet5.build(ImageShape::MNIST, 10).unwrap();
    let mut masks = PruneMasks::default();
    let weights: Vec<(String, Tensor)> = model
        .named_parameters()
        .into_iter()
        .filter(|(_, p)| p.ndim() >= 2)
        .collect();
    let refs: Vec<&Tensor> = weights.iter().map(|(_, p)| p).collect();
    let found = global_unstructured(&refs, Amount::Fraction(0.8), &vec![None; refs.len()]).unwrap();
    for ((name, p), m) in weights.iter().zip(found) {
        masks.set(name, p, m).unwrap();
    }
    masks.apply().unwrap();
    let before = masks.sparsity().unwrap().global();
    assert!((before - 0.8).abs() < 1e-6, "{before}");
    let sgd = SGD::new(
        model.parameters(),
        SgdOptions {
            lr: 0.1,
            momentum: 0.9,
            weight_decay: 1e-3,
            ..Default::default()
        },
    )
    .unwrap();
    let mut opt = MaskedOptimizer::new(Box::new(sgd), masks.clone());
    let (x, y) = mnist_batch();
    let first = tinytorch::train::train_step(model.as_ref(), &mut opt, &x, &y)
        .unwrap()
        .0;
    let mut last = first;
    for _ in 0..5 {
        last = tinytorch::train::train_step(model.as_ref(), &mut opt, &x, &y)
            .unwrap()
            .0;
    }
    assert!(last < first, "it still learns: {first} -> {last}");
    let report = masks.sparsity().unwrap();
    assert_eq!(report.global(), before, "{report}");
    assert!(report.to_string().contains("global sparsity 80.0%"));
}

#[test]
fn structured_pruning_removes_channels_with_the_masked_models_outputs() {
    for kind in [ModelKind::SeedCnn, ModelKind::LeNet5, ModelKind::Mlp] {
        tinytorch::manual_seed(1);
        let mut model = ModelKind::build(kind, ImageShape::MNIST, 10).unwrap();
        model.eval();
        let links = kind.channel_links(ImageShape::MNIST).unwrap();
        let params: BTreeMap<String, Tensor> = model.named_parameters().into_iter().collect();
        let mut masks = PruneMasks::default();
        for link in &links {
            let w = &params[&format!("{}.weight", link.layer)];
            let m = ln_structured(w, Amount::Fraction(0.5), 2.0, 0, None).unwrap();
            let b = params.get(&format!("{}.bias", link.layer));
            masks.set_channels(link.layer, w, b, m).unwrap();
        }
        masks.apply().unwrap();
        let (x, _) = mnist_batch();
        let masked = model.forward(&x).unwrap();
        let (widths, small) = shrink(kind, ImageShape::MNIST, 10, model.as_ref(), &masks).unwrap();
        let defaults = kind.default_widths().unwrap();
        let halves: Vec<usize> = defaults
            .iter()
            .map(|w| w - (*w as f64 * 0.5).round_ties_even() as usize)
            .collect();
        assert_eq!(widths, halves, "{kind}");
        assert!(
            small.num_parameters() * 10 < model.num_parameters() * 6,
            "{kind}: {} of {}",
            small.num_parameters(),
            model.num_parameters()
        );
        let out = small.forward(&x).unwrap();
        let diff = out
            .sub(&masked)
            .unwrap()
            .abs()
            .unwrap()
            .amax(&[0, 1], false)
            .unwrap();
        assert!(
            diff.item_f64().unwrap() < 1e-4,
            "{kind}: {}",
            diff.item_f64().unwrap()
        );
    }
    assert!(ModelKind::ResNet20
        .channel_links(ImageShape::CIFAR)
        .is_none());
}
