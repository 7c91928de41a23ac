//! The profiler (`profile::summary`) against PyTorch: per-layer parameter counts and forward
//! FLOPs of mlp, seed-cnn, LeNet-5 and ResNet-20 equal those of
//! `torch.utils.flop_counter.FlopCounterMode` (fixtures/profile.json, from
//! scripts/fixtures/gen_profile_fixtures.py); phases, gradients and errors behave.
//!
//! The trace is process-wide, so every check here runs under one lock.

mod common;
use common::load_json_fixture;

use std::sync::Mutex;
use tinytorch::models::{ImageShape, ModelKind};
use tinytorch::nn::Module;
use tinytorch::optim::{SgdOptions, SGD};
use tinytorch::profile::{self, Bound};
use tinytorch::{DType, Device, Tensor};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

#[test]
fn parameters_and_flops_per_layer_match_pytorchs_flop_counter() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let fx = load_json_fixture("profile.json");
    for kind in ModelKind::ALL {
        let want = &fx["models"][kind.name()];
        let input: Vec<usize> = want["input"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as usize)
            .collect();
        let shape = ImageShape {
            channels: input[1],
            height: input[2],
            width: input[3],
        };
        let model = kind.build(shape, 10).unwrap();
        let x = Tensor::randn(&input, DType::F32, Device::Cpu).unwrap();
        let p = profile::summary(model.as_ref(), &x).unwrap();
        assert_eq!(
            p.total_flops(),
            want["total_flops"].as_u64().unwrap(),
            "{kind}"
        );
        assert_eq!(p.total_macs() * 2, p.total_flops());
        assert_eq!(
            p.total_parameters as u64,
            want["total_parameters"].as_u64().unwrap(),
            "{kind}"
        );
        let counted: usize = p.rows.iter().map(|r| r.parameters).sum();
        assert_eq!(
            counted, p.total_parameters,
            "{kind}: every parameter in one row"
        );
        for (layer, params) in want["layer_parameters"].as_object().unwrap() {
            let row = p
                .rows
                .iter()
                .find(|r| r.name.as_deref() == Some(layer))
                .unwrap_or_else(|| panic!("{kind}: no row for layer {layer}"));
            assert_eq!(
                row.parameters as u64,
                params.as_u64().unwrap(),
                "{kind} {layer}"
            );
            let flops = want["layer_flops"]
                .get(layer)
                .map_or(0, |f| f.as_u64().unwrap());
            assert_eq!(row.flops, flops, "{kind} {layer}");
        }
        // Rows follow the forward pass: the last is the classifier, of 10 outputs.
        assert_eq!(p.rows.last().unwrap().output_shape, vec![input[0], 10]);
        // Functional ops inside a module's forward get rows of their own, unnamed: the
        // ReLUs of the small models; ResNet-20's are inside its fused batch norm ops, and its
        // shortcut's channel padding has a row.
        let functional = match kind {
            ModelKind::ResNet20 => "pad",
            _ => "relu",
        };
        assert!(
            p.rows
                .iter()
                .any(|r| r.kind == functional && r.name.is_none()),
            "{kind}: no unnamed {functional} row in {:?}",
            p.rows
                .iter()
                .map(|r| (&r.name, &r.kind))
                .collect::<Vec<_>>()
        );
    }
}

#[test]
fn a_profile_times_each_phase_and_leaves_the_model_as_it_was() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let shape = ImageShape {
        channels: 1,
        height: 28,
        width: 28,
    };
    let model = ModelKind::SeedCnn.build(shape, 10).unwrap();
    let x = Tensor::randn(&[4, 1, 28, 28], DType::F32, Device::Cpu).unwrap();
    let p = profile::summary(model.as_ref(), &x).unwrap();
    // Gradients were None before and are None after.
    assert!(model.parameters().iter().all(|t| t.grad().is_none()));
    let conv = p
        .rows
        .iter()
        .find(|r| r.name.as_deref() == Some("2"))
        .unwrap();
    assert_eq!(conv.kind, "conv2d");
    assert_eq!(conv.output_shape, vec![4, 96, 28, 28]);
    assert_eq!(conv.activation_bytes, 4 * 96 * 28 * 28 * 4);
    assert_eq!(
        conv.bound,
        Bound::Compute,
        "a 5x5 convolution is compute-bound"
    );
    assert!(conv.forward > std::time::Duration::ZERO && conv.backward > conv.forward / 10);
    let relu = p.rows.iter().find(|r| r.kind == "relu").unwrap();
    assert_eq!(relu.bound, Bound::Memory);
    // The forward pass keeps the activations: its peak is at least the conv outputs.
    assert!(p.forward.peak_bytes >= p.start_bytes + conv.activation_bytes);
    assert!(p.backward.peak_bytes >= p.backward.end_bytes);
    assert!(p.step.is_none());
    let m = p.machine;
    assert!(m.peak_flops > 1e8 && m.peak_bandwidth > 1e8, "{m:?}");

    // With an optimizer, the step is a phase and updates the weights.
    let before = model.parameters()[0].to_vec_f64().unwrap();
    let mut sgd = SGD::new(
        model.parameters(),
        SgdOptions {
            lr: 0.1,
            ..Default::default()
        },
    )
    .unwrap();
    let p = profile::summary_with_step(model.as_ref(), &x, &mut sgd).unwrap();
    assert!(p.step.is_some());
    assert_ne!(model.parameters()[0].to_vec_f64().unwrap(), before);

    let json = p.to_json();
    assert_eq!(json["rows"].as_array().unwrap().len(), p.rows.len());
    assert_eq!(json["total"]["flops"].as_u64(), Some(p.total_flops()));
    assert!(json["phases"]["step"]["ms"].as_f64().is_some());
    let table = p.to_string();
    assert!(
        table.contains("conv2d") && table.contains("roofline"),
        "{table}"
    );
}

/// A model whose output is an integer tensor has no backward pass to profile.
struct Argmax;
impl Module for Argmax {
    fn forward(&self, x: &Tensor) -> tinytorch::Result<Tensor> {
        x.argmax(Some(-1), false)
    }
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        Vec::new()
    }
}

#[test]
fn an_integer_output_is_refused_clearly() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let x = Tensor::randn(&[2, 3], DType::F32, Device::Cpu).unwrap();
    let e = profile::summary(&Argmax, &x).unwrap_err().to_string();
    assert!(e.contains("profile") && e.contains("int64"), "{e}");
    // The failed run left no trace on.
    assert!(!tinytorch::autograd::trace::is_active());
}
