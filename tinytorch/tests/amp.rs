//! Mixed precision against torch.amp (fixtures/amp.json, from scripts/fixtures/gen_amp_fixtures.py):
//! a GradScaler trajectory with a skipped inf step, and a Linear layer under bf16 autocast.

mod common;
use common::{assert_close_slices, load_json_fixture, Tol};

use serde_json::Value;
use tinytorch::amp::{autocast, autocast_dtype};
use tinytorch::nn::functional::linear;
use tinytorch::optim::{GradScaler, GradScalerOptions};
use tinytorch::optim::{Optimizer, SgdOptions, SGD};
use tinytorch::{DType, Tensor};

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| match x {
            Value::String(s) => s.parse().expect("number string"),
            other => other.as_f64().expect("number"),
        })
        .collect()
}

#[test]
fn grad_scaler_follows_pytorch_including_a_skipped_inf_step() {
    let f = load_json_fixture("amp.json");
    let s = &f["scaler"];
    let w = Tensor::from_vec(
        floats(&s["w0"])
            .iter()
            .map(|&v| v as f32)
            .collect::<Vec<_>>(),
        &[4],
    )
    .unwrap()
    .requires_grad_(true)
    .unwrap();
    let opts = SgdOptions {
        lr: s["lr"].as_f64().unwrap(),
        ..Default::default()
    };
    let mut opt = SGD::new(vec![w.clone()], opts).unwrap();
    let mut scaler = GradScaler::new(GradScalerOptions {
        init_scale: s["init_scale"].as_f64().unwrap(),
        growth_interval: s["growth_interval"].as_u64().unwrap(),
        ..Default::default()
    });
    for (i, step) in s["steps"].as_array().unwrap().iter().enumerate() {
        opt.zero_grad();
        assert_eq!(
            scaler.get_scale(),
            step["scale"].as_f64().unwrap(),
            "scale before step {i}"
        );
        let x: Vec<f32> = floats(&step["x"]).iter().map(|&v| v as f32).collect();
        let loss = w
            .mul(&Tensor::from_vec(x, &[4]).unwrap())
            .unwrap()
            .sum_all()
            .unwrap();
        scaler.scale(&loss).unwrap().backward().unwrap();
        let taken = scaler.step(&mut opt).unwrap();
        scaler.update();
        assert_eq!(taken, step["taken"].as_bool().unwrap(), "step {i} taken");
        assert_close_slices(
            &w.to_vec_f64().unwrap(),
            &floats(&step["w"]),
            Tol::scaled(1e-6),
            &format!("w after step {i}"),
        );
    }
}

#[test]
fn linear_under_bf16_autocast_matches_pytorch() {
    let f = load_json_fixture("amp.json");
    let l = &f["linear"];
    let t = |key: &str, shape: &[usize]| {
        let v: Vec<f32> = floats(&l[key]).iter().map(|&v| v as f32).collect();
        Tensor::from_vec(v, shape).unwrap()
    };
    let x = t("x", &[3, 5]);
    let weight = t("weight", &[4, 5]).requires_grad_(true).unwrap();
    let bias = t("bias", &[4]).requires_grad_(true).unwrap();
    let y = {
        let _amp = autocast(DType::BF16).unwrap();
        assert_eq!(autocast_dtype(), Some(DType::BF16));
        linear(&x, &weight, Some(&bias)).unwrap()
    };
    assert_eq!(autocast_dtype(), None, "the scope ends with its guard");
    assert_eq!(l["y_dtype"], "torch.bfloat16");
    assert_eq!(y.dtype(), DType::BF16);
    // Both sides round the same bf16 products; allow one bf16 ulp of difference.
    assert_close_slices(
        &y.to_vec_f64().unwrap(),
        &floats(&l["y"]),
        Tol::scaled(8e-3),
        "y",
    );
    y.to_dtype(DType::F32)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    let gw = weight.grad().unwrap();
    assert_eq!(gw.dtype(), DType::F32, "master weights keep f32 gradients");
    assert_close_slices(
        &gw.to_vec_f64().unwrap(),
        &floats(&l["grad_weight"]),
        Tol::scaled(8e-3),
        "grad weight",
    );
    assert_close_slices(
        &bias.grad().unwrap().to_vec_f64().unwrap(),
        &floats(&l["grad_bias"]),
        Tol::scaled(8e-3),
        "grad bias",
    );
}

#[test]
fn softmax_runs_in_f32_under_autocast_and_bad_dtypes_are_refused() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])
        .unwrap()
        .to_dtype(DType::BF16)
        .unwrap();
    let _amp = autocast(DType::F16).unwrap();
    assert_eq!(x.softmax(0).unwrap().dtype(), DType::F32);
    let err = autocast(DType::F32).err().unwrap().to_string();
    assert!(err.contains("autocast") && err.contains("float32"), "{err}");
}
