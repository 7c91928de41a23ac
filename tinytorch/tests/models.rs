//! The models of `tinytorch train` against their PyTorch twins (scripts/twins/torch_models.py):
//! the same state-dict keys, shapes and parameter counts, and the same output for the same
//! weights (tests/fixtures/golden.safetensors, from scripts/fixtures/gen_golden_fixtures.py).

mod common;

use common::load_fixture;
use std::collections::{BTreeMap, HashMap};
use tinytorch::models::{ImageShape, ModelKind};
use tinytorch::nn::Module;
use tinytorch::{DType, Result, Tensor};

fn fixture() -> BTreeMap<String, Tensor> {
    load_fixture("golden.safetensors")
}

/// PyTorch's `sum(p.numel() for p in model.parameters())` and `len(model.state_dict())`
/// for 1x28x28 inputs and 10 classes.
const TORCH_COUNTS: [(ModelKind, usize, usize); 4] = [
    (ModelKind::Mlp, 101_770, 4),
    (ModelKind::SeedCnn, 130_250, 8),
    (ModelKind::LeNet5, 61_706, 10),
    (ModelKind::ResNet20, 269_434, 116),
];

#[test]
fn parameter_counts_and_state_dict_sizes_match_pytorch() -> Result<()> {
    for (kind, params, keys) in TORCH_COUNTS {
        let m = kind.build(ImageShape::MNIST, 10)?;
        assert_eq!(m.num_parameters(), params, "{kind}");
        assert_eq!(m.state_dict().len(), keys, "{kind}");
    }
    Ok(())
}

#[test]
fn resnet20_names_follow_the_pytorch_port() -> Result<()> {
    let m = ModelKind::ResNet20.build(ImageShape::MNIST, 10)?;
    let sd = m.state_dict();
    for key in [
        "conv1.weight",
        "bn1.running_var",
        "layer1.0.conv1.weight",
        "layer2.0.bn2.num_batches_tracked",
        "layer3.2.conv2.weight",
        "linear.bias",
    ] {
        assert!(sd.contains_key(key), "missing {key}");
    }
    assert_eq!(sd["layer3.2.conv2.weight"].shape(), &[64, 64, 3, 3]);
    assert_eq!(sd["layer2.0.conv1.weight"].shape(), &[32, 16, 3, 3]);
    Ok(())
}

/// Every float entry gets `0.1 * sin(0.37 * i + k)` at element i, where k is the sum of the
/// key's bytes mod 97, as the fixture script does on the PyTorch side.
fn formula_fill(m: &dyn Module) -> Result<()> {
    let mut values = HashMap::new();
    for (key, t) in m.state_dict() {
        if !t.dtype().is_float() {
            continue;
        }
        let k = key.bytes().map(f64::from).sum::<f64>() % 97.0;
        let v: Vec<f32> = (0..t.numel())
            .map(|i| (0.1 * (0.37 * i as f64 + k).sin()) as f32)
            .collect();
        values.insert(key, Tensor::from_vec(v, t.shape())?);
    }
    m.load_state_dict(&values, false)
}

#[test]
fn outputs_match_pytorch_for_the_same_weights() -> Result<()> {
    let fx = fixture();
    for kind in ModelKind::ALL {
        let m = kind.build(ImageShape::MNIST, 10)?;
        formula_fill(m.as_ref())?;
        let out = m.forward(&fx[&format!("{kind}.x")])?;
        let want = &fx[&format!("{kind}.out")];
        assert_eq!(out.shape(), want.shape(), "{kind}");
        let diff = out.sub(want)?.abs()?.max_all()?.item::<f32>()?;
        assert!(diff < 1e-4, "{kind}: max difference {diff}");
        assert_eq!(out.dtype(), DType::F32);
    }
    Ok(())
}

#[test]
fn model_names_parse_and_bad_ones_are_clear_errors() {
    for kind in ModelKind::ALL {
        assert_eq!(kind.name().parse::<ModelKind>().unwrap(), kind);
    }
    let err = "vgg".parse::<ModelKind>().unwrap_err().to_string();
    assert!(
        err.contains("unknown model 'vgg'") && err.contains("resnet20"),
        "{err}"
    );
}

#[test]
fn models_build_for_cifar_images() -> Result<()> {
    for kind in ModelKind::ALL {
        let m = kind.build(ImageShape::CIFAR, 10)?;
        let x = Tensor::zeros(&[2, 3, 32, 32], DType::F32, tinytorch::Device::Cpu)?;
        assert_eq!(m.forward(&x)?.shape(), &[2, 10], "{kind}");
    }
    Ok(())
}
