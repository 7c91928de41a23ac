//! int8 quantization numerics against PyTorch (fixtures/quant.safetensors from
//! scripts/fixtures/gen_quant_fixtures.py): observers' scales and zero points, the integers of
//! quantize_per_tensor / quantize_per_channel and their dequantized values, and the
//! percentile observer against NumPy; dynamically quantized Linear against PyTorch's
//! `quantize_dynamic` and the float layer.

mod common;
use common::load_fixture;

use tinytorch::nn::{Linear, Module};
use tinytorch::quant::{
    DynamicQuantLinear, MinMaxObserver, PercentileObserver, QParams, QTensor, QuantRange,
};
use tinytorch::{DType, Device, Tensor};

fn f32s(t: &Tensor) -> Vec<f32> {
    t.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap()
}

fn ints(t: &Tensor) -> Vec<i64> {
    t.to_vec::<i64>().unwrap()
}

#[test]
fn per_tensor_observers_and_quantize_match_pytorch() {
    let fx = load_fixture("quant.safetensors");
    let x = &fx["x"];
    for (name, reduce, symmetric) in [
        ("sym", false, true),
        ("sym_reduced", true, true),
        ("affine", false, false),
    ] {
        let mut obs = MinMaxObserver::per_tensor();
        obs.observe(&x.narrow(0, 0, 32).unwrap()).unwrap();
        obs.observe(&x.narrow(0, 32, 32).unwrap()).unwrap();
        let range = QuantRange::int8(reduce);
        let p = if symmetric {
            obs.symmetric_qparams(range).unwrap()
        } else {
            obs.affine_qparams(range).unwrap()
        };
        assert_eq!(
            p.scales,
            f32s(&fx[&format!("{name}.scale")]),
            "{name} scale"
        );
        assert_eq!(
            p.zero_points.iter().map(|&z| z as i64).collect::<Vec<_>>(),
            ints(&fx[&format!("{name}.zero_point")]),
            "{name} zero point"
        );
        let q = QTensor::quantize(x, &p).unwrap();
        let want = ints(&fx[&format!("{name}.int")]);
        let got: Vec<i64> = q.values.iter().map(|&v| v as i64).collect();
        assert_eq!(got, want, "{name} integers");
        assert_eq!(
            f32s(&q.dequantize().unwrap()),
            f32s(&fx[&format!("{name}.dequant")]),
            "{name} dequantized"
        );
    }
}

#[test]
fn per_channel_weights_match_pytorch() {
    let fx = load_fixture("quant.safetensors");
    let w = &fx["w"];
    let mut obs = MinMaxObserver::per_channel(0);
    obs.observe(w).unwrap();
    let p = obs.symmetric_qparams(QuantRange::int8(false)).unwrap();
    assert_eq!(p.scales, f32s(&fx["w.scales"]));
    let q = QTensor::quantize(w, &p).unwrap();
    let got: Vec<i64> = q.values.iter().map(|&v| v as i64).collect();
    assert_eq!(got, ints(&fx["w.int"]));
    assert_eq!(f32s(&q.dequantize().unwrap()), f32s(&fx["w.dequant"]));
    // Symmetric int8 keeps every value within half a step of itself.
    let back = f32s(&q.dequantize().unwrap());
    for (i, (a, b)) in f32s(w).iter().zip(&back).enumerate() {
        let step = p.scales[i / 32];
        assert!((a - b).abs() <= step / 2.0 + 1e-6, "{i}: {a} vs {b}");
    }
}

#[test]
fn the_percentile_observer_finds_numpys_percentile_to_one_bin() {
    let fx = load_fixture("quant.safetensors");
    let x = &fx["x"];
    let mut obs = PercentileObserver::new(99.9).unwrap();
    // Small batch first: the histogram's range doubles when the outliers arrive.
    obs.observe(&x.narrow(0, 10, 20).unwrap()).unwrap();
    obs.observe(&x.narrow(0, 0, 10).unwrap()).unwrap();
    obs.observe(&x.narrow(0, 30, 34).unwrap()).unwrap();
    let want = fx["x.p99_9"].item_f64().unwrap() as f32;
    let got = obs.value().unwrap();
    let amax = f32s(x).iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let bin = 2.0 * amax / 2048.0 * 2.0; // the range may have doubled past the largest |x|
    assert!((got - want).abs() <= bin, "{got} vs {want} (bin {bin})");
    assert!(
        got < amax / 2.0,
        "the outliers are clipped: {got} of {amax}"
    );
    let p = obs.symmetric_qparams(QuantRange::int8(false)).unwrap();
    assert_eq!(p.scales, vec![got / 127.5]);
}

#[test]
fn bad_inputs_are_refused() {
    let ints = Tensor::zeros(&[3], DType::I64, Device::Cpu).unwrap();
    assert!(MinMaxObserver::per_tensor().observe(&ints).is_err());
    let e = MinMaxObserver::per_channel(2)
        .observe(&Tensor::zeros(&[2, 3], DType::F32, Device::Cpu).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("channel axis 2"), "{e}");
    assert!(MinMaxObserver::per_tensor()
        .symmetric_qparams(QuantRange::int8(false))
        .is_err());
    assert!(PercentileObserver::new(0.0).is_err());
    let x = Tensor::ones(&[2, 3], DType::F32, Device::Cpu).unwrap();
    let two = QParams::symmetric(&[-1.0, -1.0], &[1.0, 1.0], QuantRange::int8(false), Some(0));
    let e = QTensor::quantize(&x.narrow(0, 0, 1).unwrap(), &two)
        .unwrap_err()
        .to_string();
    assert!(e.contains("2 scales") && e.contains("1 channels"), "{e}");
    // An all-zero tensor gets the smallest scale, not a division by zero.
    let z = QParams::symmetric(&[0.0], &[0.0], QuantRange::int8(false), None);
    assert_eq!(z.scales, vec![f32::EPSILON]);
}

#[test]
fn dynamic_quantized_linear_is_as_close_to_float_as_pytorchs() {
    let fx = load_fixture("quant.safetensors");
    let mut linear = Linear::new(32, 16, true).unwrap();
    linear.weight = fx["w"].clone();
    linear.bias = Some(fx["linear.bias"].clone());
    let x = &fx["linear.x"];
    let float = f32s(&fx["linear.float"]);
    let torch_q = f32s(&fx["linear.dynamic"]);
    let mut q = DynamicQuantLinear::from_linear(&linear).unwrap();
    assert_eq!((q.in_features(), q.out_features()), (32, 16));
    let ours = q.forward(x).unwrap();
    assert_eq!(ours.shape(), &[8, 16]);
    let ours = f32s(&ours);
    let worst = |a: &[f32]| {
        a.iter()
            .zip(&float)
            .fold(0.0f32, |m, (x, y)| m.max((x - y).abs()))
    };
    let (e_ours, e_torch) = (worst(&ours), worst(&torch_q));
    // Per-channel weights and 8-bit activations: no further from float than PyTorch's
    // per-tensor weights with 7-bit activations.
    assert!(e_ours <= e_torch, "ours {e_ours} vs PyTorch's {e_torch}");
    let span = float.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    assert!(e_ours < 0.02 * span, "{e_ours} of {span}");
    // The portable kernel gives the same result to the bit.
    q.kernel = tinytorch::quant::Kernel::Portable;
    assert_eq!(f32s(&q.forward(x).unwrap()), ours);
    // Leading dims pass through; bad inputs are refused.
    let x3 = x.reshape(&[2, 4, 32]).unwrap();
    assert_eq!(f32s(&q.forward(&x3).unwrap()), ours);
    let e = q
        .forward(&Tensor::zeros(&[2, 31], DType::F32, Device::Cpu).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("quantized linear") && e.contains("32 input features"),
        "{e}"
    );
    assert!(q
        .forward(&Tensor::zeros(&[2, 32], DType::F64, Device::Cpu).unwrap())
        .is_err());
}
