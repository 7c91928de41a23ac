//! The `Module` trait's provided methods: names, parameter count, state-dict round trip and
//! its errors.

use std::collections::HashMap;
use tinytorch::nn::{prefixed, Module};
use tinytorch::{DType, Device, Result, Tensor};

/// y = x * w + b, with PyTorch-style names.
struct Affine {
    w: Tensor,
    b: Tensor,
}

impl Module for Affine {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.mul(&self.w)?.add(&self.b)
    }
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        vec![
            ("weight".into(), self.w.clone()),
            ("bias".into(), self.b.clone()),
        ]
    }
}

fn affine(w: f64, b: f64) -> Affine {
    let t = |v: f64| {
        Tensor::full(&[2], v, DType::F32, Device::Cpu)
            .unwrap()
            .requires_grad_(true)
            .unwrap()
    };
    Affine { w: t(w), b: t(b) }
}

#[test]
fn state_dict_round_trip_copies_into_existing_handles() {
    let src = affine(2.0, 3.0);
    let dst = affine(0.0, 0.0);
    let handle = dst.w.clone();
    let state: HashMap<String, Tensor> = src.state_dict().into_iter().collect();
    dst.load_state_dict(&state, true).unwrap();
    assert_eq!(handle.to_vec::<f32>().unwrap(), vec![2.0, 2.0]);
    assert_eq!(dst.num_parameters(), 4);
    let x = Tensor::ones(&[2], DType::F32, Device::Cpu).unwrap();
    assert_eq!(
        dst.forward(&x).unwrap().to_vec::<f32>().unwrap(),
        vec![5.0, 5.0]
    );
    let names: Vec<String> = prefixed("layers.0", dst.named_parameters())
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, vec!["layers.0.weight", "layers.0.bias"]);
}

#[test]
fn load_state_dict_reports_missing_unexpected_and_mismatched_keys() {
    let m = affine(1.0, 1.0);
    let mut state: HashMap<String, Tensor> = HashMap::new();
    state.insert(
        "weight".into(),
        Tensor::zeros(&[3], DType::F32, Device::Cpu).unwrap(),
    );
    state.insert(
        "extra".into(),
        Tensor::zeros(&[1], DType::F32, Device::Cpu).unwrap(),
    );
    let msg = m.load_state_dict(&state, true).unwrap_err().to_string();
    assert!(msg.contains("load_state_dict"), "{msg}");
    assert!(msg.contains("\"bias\""), "{msg}");
    assert!(msg.contains("\"extra\""), "{msg}");
    assert!(msg.contains("weight: checkpoint [3] vs model [2]"), "{msg}");
    // Nothing was written.
    assert_eq!(m.w.to_vec::<f32>().unwrap(), vec![1.0, 1.0]);
    // Non-strict loading still rejects shape mismatches.
    assert!(m.load_state_dict(&state, false).is_err());
}
