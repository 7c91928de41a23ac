//! Static int8 quantization against PyTorch's quantized modules on fbgemm
//! (fixtures/quant_static.safetensors from scripts/fixtures/gen_quant_static_fixtures.py): quantized
//! Linear, LinearReLU, Conv2d and ConvReLU2d give PyTorch's output integers, and a LeNet-shaped
//! model calibrated and converted like PyTorch's eager flow gets the same parameters and
//! output; every int8 kernel this CPU has gives the same result; int8 models round-trip
//! through their file.

mod common;
use common::load_fixture;

use std::collections::{BTreeMap, HashMap};
use tinytorch::io::save_module;
use tinytorch::nn::{Conv2d, Flatten, Linear, MaxPool2d, Module, ReLU, Sequential};
use tinytorch::ops::ConvPadding;
use tinytorch::quant::{
    convert_static, load_quantized, quantize_dynamic, save_quantized, Affine, Calibration, Kernel,
    ObserverKind, QuantConv2d, QuantLinear, INT8_FORMAT,
};
use tinytorch::{no_grad, DType, Device, Tensor};

fn f32s(t: &Tensor) -> Vec<f32> {
    t.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap()
}

/// `(scale, zero point)` stored as two f64.
fn affine(t: &Tensor) -> Affine {
    let v = t.to_vec::<f64>().unwrap();
    Affine {
        scale: v[0] as f32,
        zero_point: v[1] as i32,
    }
}

/// The integers `values` (on `out`'s levels) stand for.
fn integers(values: &[f32], out: Affine) -> Vec<i64> {
    values
        .iter()
        .map(|v| (v / out.scale).round() as i64 + out.zero_point as i64)
        .collect()
}

/// All integers within one of PyTorch's, and at least `share` of them equal (fbgemm and this
/// epilogue round the same real the same way except at exact ties of float rounding).
fn assert_integers_match(ours: &[i64], torch: &[i64], share: f64, what: &str) {
    assert_eq!(ours.len(), torch.len(), "{what}");
    let equal = ours.iter().zip(torch).filter(|(a, b)| a == b).count();
    let worst = ours.iter().zip(torch).map(|(a, b)| (a - b).abs()).max();
    assert!(worst.unwrap_or(0) <= 1, "{what}: off by {worst:?}");
    assert!(
        equal as f64 >= share * ours.len() as f64,
        "{what}: {equal} of {} equal",
        ours.len()
    );
}

fn set(param: &Tensor, value: &Tensor) {
    let _guard = no_grad();
    param.copy_(value).unwrap();
}

/// Run `layer` with every kernel this CPU has: the results are identical, and returned once.
fn run_every_kernel(layer: &mut dyn FnMut(Kernel) -> Vec<f32>) -> Vec<f32> {
    let kernels = Kernel::available();
    let first = layer(kernels[0]);
    for &k in &kernels[1..] {
        assert_eq!(layer(k), first, "kernel {k:?}");
    }
    first
}

/// Loads the fixture's case `name` into a float layer (`<name>.weight` into `weight`,
/// `<name>.bias` into `bias`) and returns the case's input and output quantization
/// (`<name>.input`, `<name>.output`).
fn load_case(
    fx: &BTreeMap<String, Tensor>,
    name: &str,
    weight: &Tensor,
    bias: &Option<Tensor>,
) -> (Affine, Affine) {
    set(weight, &fx[&format!("{name}.weight")]);
    set(bias.as_ref().unwrap(), &fx[&format!("{name}.bias")]);
    (
        affine(&fx[&format!("{name}.input")]),
        affine(&fx[&format!("{name}.output")]),
    )
}

/// Runs a quantized layer with every kernel (`layer` sets the kernel and runs it) and checks
/// the integers it gives on `output`'s levels against PyTorch's, the fixture's `<name>.int`
/// (98% equal, all within one).
fn assert_every_kernel_gives(
    fx: &BTreeMap<String, Tensor>,
    name: &str,
    output: Affine,
    layer: &mut dyn FnMut(Kernel) -> Vec<f32>,
) {
    let out = run_every_kernel(layer);
    let torch = fx[&format!("{name}.int")].to_vec::<i64>().unwrap();
    assert_integers_match(&integers(&out, output), &torch, 0.98, name);
}

#[test]
fn quantized_linear_gives_pytorchs_integers() {
    let fx = load_fixture("quant_static.safetensors");
    for (name, relu) in [("linear", false), ("linear_relu", true)] {
        let linear = Linear::new(32, 16, true).unwrap();
        let (input, output) = load_case(&fx, name, &linear.weight, &linear.bias);
        let mut q = QuantLinear::from_linear(&linear, input, output, relu).unwrap();
        let x = &fx[&format!("{name}.x")];
        assert_every_kernel_gives(&fx, name, output, &mut |k| {
            q.kernel = k;
            f32s(&q.forward(x).unwrap())
        });
    }
}

#[test]
fn quantized_conv2d_gives_pytorchs_integers() {
    let fx = load_fixture("quant_static.safetensors");
    let cases = [
        ("conv", [3, 3], [2, 2], (1, 1), [1, 1], false),
        ("conv_relu", [3, 2], [1, 1], (0, 1), [2, 1], true),
    ];
    for (name, kernel, stride, (ph, pw), dilation, relu) in cases {
        let pad = ConvPadding::Explicit(ph, pw);
        let conv = Conv2d::new(3, 5, kernel, stride, pad, dilation, 1, true).unwrap();
        let (input, output) = load_case(&fx, name, &conv.weight, &conv.bias);
        let mut q = QuantConv2d::from_conv(&conv, input, output, relu).unwrap();
        let x = &fx[&format!("{name}.x")];
        let want_shape = conv.forward(x).unwrap().shape().to_vec();
        assert_eq!(q.forward(x).unwrap().shape(), want_shape.as_slice());
        assert_every_kernel_gives(&fx, name, output, &mut |k| {
            q.kernel = k;
            f32s(&q.forward(x).unwrap())
        });
    }
}

/// LeNet's shape at 12x12, as the fixture script builds it.
fn small_lenet() -> Sequential {
    let conv = |ci, co, pad| Conv2d::new(ci, co, [3, 3], [1, 1], pad, [1, 1], 1, true).unwrap();
    Sequential::new(vec![
        Box::new(conv(1, 4, ConvPadding::Explicit(1, 1))),
        Box::new(ReLU::new()),
        Box::new(MaxPool2d::new([2, 2])),
        Box::new(conv(4, 6, ConvPadding::Valid)),
        Box::new(ReLU::new()),
        Box::new(MaxPool2d::new([2, 2])),
        Box::new(Flatten::default()),
        Box::new(Linear::new(24, 16, true).unwrap()),
        Box::new(ReLU::new()),
        Box::new(Linear::new(16, 10, true).unwrap()),
    ])
}

/// The float weights of `small_lenet` in the fixture (under `model.`), by state-dict name.
fn lenet_weights(fx: &BTreeMap<String, Tensor>) -> HashMap<String, Tensor> {
    fx.iter()
        .filter_map(|(k, v)| Some((k.strip_prefix("model.")?.to_string(), v.clone())))
        .filter(|(k, _)| k.contains("weight") || k.contains("bias"))
        .collect()
}

#[test]
fn a_calibrated_model_matches_pytorchs_eager_static_quantization() {
    let fx = load_fixture("quant_static.safetensors");
    let model = small_lenet();
    let weights = lenet_weights(&fx);
    model.load_state_dict(&weights, true).unwrap();
    let test = &fx["model.test"];
    let float = f32s(&model.forward(test).unwrap());
    let mut calibration = Calibration::new(ObserverKind::MinMax).unwrap();
    calibration.observe(&model, &fx["model.calib"]).unwrap();
    assert_eq!(calibration.batches(), 1);

    // Each layer's calibrated input and output parameters are PyTorch's observers'.
    let torch: Vec<Affine> = fx["model.qparams"]
        .to_vec::<f64>()
        .unwrap()
        .chunks(2)
        .map(|p| Affine {
            scale: p[0] as f32,
            zero_point: p[1] as i32,
        })
        .collect();
    let (stub, outputs) = (torch[0], &torch[1..]);
    for (i, (path, input)) in [
        ("0", stub),
        ("3", outputs[0]),
        ("7", outputs[1]),
        ("9", outputs[2]),
    ]
    .into_iter()
    .enumerate()
    {
        let (ours_in, ours_out) = calibration.params(path).unwrap();
        // The same ranges to the last bit or two (float outputs may differ by an ulp).
        for (ours, torch, what) in [(ours_in, input, "input"), (ours_out, outputs[i], "output")] {
            assert_eq!(ours.zero_point, torch.zero_point, "{what} of layer {path}");
            let rel = (ours.scale - torch.scale).abs() / torch.scale;
            assert!(rel < 1e-6, "{what} of layer {path}: {ours:?} vs {torch:?}");
        }
    }

    let q = convert_static(Box::new(model), &calibration).unwrap();
    // The fused ReLUs became Identity: the names of the other layers are unchanged.
    assert!(q.named_parameters().is_empty());
    let ours = f32s(&q.forward(test).unwrap());
    let torch_out = f32s(&fx["model.int8"]);
    let last = outputs[3];
    assert_integers_match(
        &integers(&ours, last),
        &integers(&torch_out, last),
        0.95,
        "model",
    );
    // And int8 stays close to float: within a few output steps.
    let worst = ours
        .iter()
        .zip(&float)
        .fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
    assert!(worst < 4.0 * last.scale, "{worst} vs step {}", last.scale);
}

#[test]
fn bad_inputs_are_refused() {
    let conv = Conv2d::new(3, 4, [3, 3], [1, 1], ConvPadding::Valid, [1, 1], 1, true).unwrap();
    let a = Affine::from_range(-1.0, 1.0);
    let q = QuantConv2d::from_conv(&conv, a, a, false).unwrap();
    let err = |x: Tensor| q.forward(&x).unwrap_err().to_string();
    let e = err(Tensor::zeros(&[1, 2, 5, 5], DType::F32, Device::Cpu).unwrap());
    assert!(
        e.contains("quantized conv2d") && e.contains("3 input channels"),
        "{e}"
    );
    let e = err(Tensor::zeros(&[1, 3, 2, 5], DType::F32, Device::Cpu).unwrap());
    assert!(e.contains("smaller than the kernel"), "{e}");
    let e = err(Tensor::zeros(&[1, 3, 5, 5], DType::F64, Device::Cpu).unwrap());
    assert!(e.contains("f32"), "{e}");
    // An empty batch gives an empty output.
    let y = q
        .forward(&Tensor::zeros(&[0, 3, 5, 5], DType::F32, Device::Cpu).unwrap())
        .unwrap();
    assert_eq!(y.shape(), &[0, 4, 3, 3]);
    // Grouped convolutions are not converted.
    let grouped = Conv2d::new(4, 4, [3, 3], [1, 1], ConvPadding::Valid, [1, 1], 2, true).unwrap();
    let e = QuantConv2d::from_conv(&grouped, a, a, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("groups=2"), "{e}");
    // Converting a layer that was never calibrated names it.
    let model = Sequential::new(vec![Box::new(Linear::new(4, 2, true).unwrap())]);
    let empty = Calibration::new(ObserverKind::MinMax).unwrap();
    let e = match convert_static(Box::new(model), &empty) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("converted without calibration"),
    };
    assert!(e.contains("layer '0' was not calibrated"), "{e}");
    assert!(Calibration::new(ObserverKind::Percentile(0.0)).is_err());
}

/// A calibrated, converted `small_lenet` with the fixture's weights, and a fresh float model
/// holding the same weights.
fn converted_lenet(fx: &BTreeMap<String, Tensor>) -> (Box<dyn Module>, Box<dyn Module>) {
    let weights = lenet_weights(fx);
    let model = small_lenet();
    model.load_state_dict(&weights, true).unwrap();
    let mut calibration = Calibration::new(ObserverKind::Percentile(99.99)).unwrap();
    calibration.observe(&model, &fx["model.calib"]).unwrap();
    let fresh = small_lenet();
    fresh.load_state_dict(&weights, true).unwrap();
    (
        convert_static(Box::new(model), &calibration).unwrap(),
        Box::new(fresh),
    )
}

#[test]
fn int8_models_round_trip_through_their_file() {
    let fx = load_fixture("quant_static.safetensors");
    let dir = std::env::temp_dir().join(format!("tt-int8-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let test = &fx["model.test"];

    // Static: the loaded model computes the same values.
    let (q, fresh) = converted_lenet(&fx);
    let path = dir.join("lenet.int8.safetensors");
    let meta = BTreeMap::from([("model".to_string(), "small-lenet".to_string())]);
    save_quantized(&path, q.as_ref(), &meta).unwrap();
    let float_path = dir.join("lenet.safetensors");
    save_module(&float_path, fresh.as_ref()).unwrap();
    let (loaded, got) = load_quantized(&path, fresh).unwrap();
    assert_eq!(got["model"], "small-lenet");
    assert_eq!(got["format"], INT8_FORMAT);
    assert_eq!(
        f32s(&loaded.forward(test).unwrap()),
        f32s(&q.forward(test).unwrap())
    );

    // Dynamic: a Linear layer alone, at the top.
    let linear = Linear::new(64, 32, true).unwrap();
    let x = Tensor::randn(&[3, 64], DType::F32, Device::Cpu).unwrap();
    let dynamic = quantize_dynamic(Box::new(linear)).unwrap();
    let dyn_path = dir.join("linear.int8.safetensors");
    save_quantized(&dyn_path, dynamic.as_ref(), &BTreeMap::new()).unwrap();
    let (loaded, _) =
        load_quantized(&dyn_path, Box::new(Linear::new(64, 32, true).unwrap())).unwrap();
    assert_eq!(
        f32s(&loaded.forward(&x).unwrap()),
        f32s(&dynamic.forward(&x).unwrap())
    );
    // About 4x smaller than the float layer (a scale and a bias per channel, and the header).
    let float_linear = dir.join("linear.safetensors");
    save_module(&float_linear, &Linear::new(64, 32, true).unwrap()).unwrap();
    let size = |p: &std::path::Path| std::fs::metadata(p).unwrap().len() as f64;
    let ratio = size(&float_linear) / size(&dyn_path);
    assert!(ratio > 3.0, "{ratio}");

    // Refusals, each naming the file: another model, a float file, a truncated file.
    let err = |r: tinytorch::Result<(Box<dyn Module>, BTreeMap<String, String>)>| match r {
        Err(e) => e.to_string(),
        Ok(_) => panic!("loaded"),
    };
    let e = err(load_quantized(
        &dyn_path,
        Box::new(Linear::new(64, 16, true).unwrap()),
    ));
    assert!(
        e.contains("linear.int8.safetensors") && e.contains("[16, 64]"),
        "{e}"
    );
    let e = err(load_quantized(
        &path,
        Box::new(Linear::new(64, 16, true).unwrap()),
    ));
    assert!(e.contains("quantized layers but the model has"), "{e}");
    let e = err(load_quantized(&float_path, Box::new(small_lenet())));
    assert!(e.contains("not an int8 model"), "{e}");
    let bytes = std::fs::read(&path).unwrap();
    let cut = dir.join("cut.safetensors");
    std::fs::write(&cut, &bytes[..bytes.len() - 100]).unwrap();
    let e = err(load_quantized(&cut, Box::new(small_lenet())));
    assert!(e.contains("cut.safetensors"), "{e}");
    // A float model has nothing to save.
    let e = save_quantized(dir.join("x"), &small_lenet(), &BTreeMap::new()).unwrap_err();
    assert!(e.to_string().contains("no quantized layer"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Many rows split over the threads by rows, few by columns: the same values either way.
#[test]
fn row_blocks_and_column_panels_give_the_same_values() {
    let linear = Linear::new(50, 70, true).unwrap();
    let a = Affine::from_range(-3.0, 3.0);
    let q = QuantLinear::from_linear(&linear, a, Affine::from_range(-2.0, 2.0), true).unwrap();
    let x = Tensor::randn(&[101, 50], DType::F32, Device::Cpu).unwrap();
    let whole = f32s(&q.forward(&x).unwrap());
    let mut by_row = Vec::new();
    for i in 0..101 {
        by_row.extend(f32s(&q.forward(&x.narrow(0, i, 1).unwrap()).unwrap()));
    }
    assert_eq!(whole, by_row);
}
