//! Normalisation layers against values computed with PyTorch 2.x (hard-coded below, and
//! fixtures/norm.safetensors from scripts/fixtures/gen_norm_fixtures.py for the fused CPU layer and
//! RMS norm in every float dtype), f64 gradient checks, running-statistics updates, eval
//! mode, state-dict names and errors.

mod common;

use common::{
    assert_close_same_dtype, assert_close_to, backward_sum, gradcheck64, load_fixture, max_diff,
    poison_cached_buffer, t64, Tol,
};
use tinytorch::nn::functional::{
    batch_norm, batch_norm_add_relu, batch_norm_relu, group_norm, layer_norm, rms_norm,
};
use tinytorch::nn::{BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm, Module, ModuleHooks};
use tinytorch::{no_grad, DType, Tensor};

/// sin(arange(24) * 0.7 + 0.3).reshape(2, 3, 4)
fn x234() -> Tensor {
    let v: Vec<f64> = (0..24).map(|i| (i as f64 * 0.7 + 0.3).sin()).collect();
    t64(&v, &[2, 3, 4])
}

/// sin(arange(24) * 1.3).reshape(2, 4, 3)
fn x243() -> Tensor {
    let v: Vec<f64> = (0..24).map(|i| (i as f64 * 1.3).sin()).collect();
    t64(&v, &[2, 4, 3])
}

/// The weight `[1, 2, 0.5, -1]` and bias `[0.1, 0, -0.2, 0.3]` of four features (f64).
fn weight_bias() -> (Tensor, Tensor) {
    (
        t64(&[1.0, 2.0, 0.5, -1.0], &[4]),
        t64(&[0.1, 0.0, -0.2, 0.3], &[4]),
    )
}

/// One run of batch norm then (with a `residual`, its sum with the output first) ReLU, in
/// `training` or evaluation mode: `fused` through `batch_norm_relu` or `batch_norm_add_relu`,
/// else through the separate ops. The inputs are leaf copies of x243 as a non-contiguous
/// NCHW `dtype` tensor, of the residual `sin(-0.8 * x243)` likewise, and of
/// [`weight_bias`], with fresh running statistics (zeros and ones); backward runs from the
/// output times `cos(0.7 * x)`. Returns the output, the gradients of x, the residual (with
/// one), the weight and the bias, and the running mean and variance.
fn batch_norm_relu_run(dtype: DType, residual: bool, fused: bool, training: bool) -> Vec<Tensor> {
    let nchw = |t: Tensor| {
        t.reshape(&[2, 4, 3, 1])
            .unwrap()
            .transpose(2, 3)
            .unwrap()
            .to_dtype(dtype)
            .unwrap()
    };
    let leaf = |t: &Tensor| t.detach().requires_grad_(true).unwrap();
    let x = leaf(&nchw(x243()));
    let r = leaf(&nchw(x243().mul_scalar(-0.8).unwrap().sin().unwrap()));
    let (w, b) = weight_bias();
    let (w, b) = (
        leaf(&w.to_dtype(dtype).unwrap()),
        leaf(&b.to_dtype(dtype).unwrap()),
    );
    let g = x.detach().mul_scalar(0.7).unwrap().cos().unwrap();
    let rm = Tensor::zeros(&[4], dtype, tinytorch::Device::Cpu).unwrap();
    let rv = Tensor::ones(&[4], dtype, tinytorch::Device::Cpu).unwrap();
    let (rm_, rv_, w_, b_) = (Some(&rm), Some(&rv), Some(&w), Some(&b));
    let y = match (fused, residual) {
        (true, true) => batch_norm_add_relu(&x, &r, rm_, rv_, w_, b_, training, 0.1, 1e-5),
        (true, false) => batch_norm_relu(&x, rm_, rv_, w_, b_, training, 0.1, 1e-5),
        (false, true) => {
            batch_norm(&x, rm_, rv_, w_, b_, training, 0.1, 1e-5).and_then(|y| y.add(&r)?.relu())
        }
        (false, false) => {
            batch_norm(&x, rm_, rv_, w_, b_, training, 0.1, 1e-5).and_then(|y| y.relu())
        }
    }
    .unwrap();
    backward_sum(y.mul(&g));
    let mut out = vec![y.detach(), x.grad().unwrap()];
    if residual {
        out.push(r.grad().unwrap());
    }
    out.extend([w.grad().unwrap(), b.grad().unwrap(), rm, rv]);
    out
}

/// Checks [`batch_norm_relu_run`] fused against the separate ops, in f32 and f64, in
/// training and in evaluation: every result within 1e-5 (f32) or 1e-12 (f64), and the
/// output both zero and positive somewhere (the ReLU cuts).
fn assert_fused_batch_norm_relu_matches_separate_ops(residual: bool) {
    for dtype in [DType::F32, DType::F64] {
        for training in [true, false] {
            let fused = batch_norm_relu_run(dtype, residual, true, training);
            let separate = batch_norm_relu_run(dtype, residual, false, training);
            let ys = fused[0].to_vec_f64().unwrap();
            assert!(ys.contains(&0.0) && ys.iter().any(|&v| v > 0.0));
            let tol = if dtype == DType::F32 { 1e-5 } else { 1e-12 };
            for (f, p) in fused.iter().zip(&separate) {
                assert_close_to(f, &p.to_vec_f64().unwrap(), Tol::scaled(tol), "fused");
            }
        }
    }
}

/// Checks that a `BatchNorm2d`'s fused call (`fused`) gives what its plain call followed by
/// the other ops (`separate`) gives, on x243 as f32 NCHW, without and with a forward hook
/// that negates the batch norm's output (which must change the result): the fused call
/// runs the hook on the batch norm's own output.
fn assert_fused_module_call_runs_hooks(
    fused: impl Fn(&BatchNorm2d, &Tensor) -> Tensor,
    separate: impl Fn(&BatchNorm2d, &Tensor) -> Tensor,
) {
    let bn = BatchNorm2d::new(4).unwrap();
    let x = x243()
        .reshape(&[2, 4, 3, 1])
        .unwrap()
        .to_dtype(DType::F32)
        .unwrap();
    let check = |what: &str| {
        let got = fused(&bn, &x);
        let want = separate(&bn, &x).to_vec_f64().unwrap();
        assert_close_to(&got, &want, Tol::scaled(1e-6), what);
        got.to_vec_f64().unwrap()
    };
    let plain = check("plain");
    let _hook = bn
        .register_forward_hook(|_, _, y| Ok(Some(y.neg()?)))
        .unwrap();
    let hooked = check("hooked");
    assert!(plain != hooked);
}

#[test]
fn layer_norm_forward_and_gradients_match_pytorch() {
    let x = x234().requires_grad_(true).unwrap();
    let (w, b) = weight_bias();
    let (w, b) = (
        w.requires_grad_(true).unwrap(),
        b.requires_grad_(true).unwrap(),
    );
    let y = layer_norm(&x, &[4], Some(&w), Some(&b), 1e-5).unwrap();
    assert_close_to(
        &y.select(0, 0).unwrap(),
        &[
            -1.46276437,
            1.08247249,
            0.36002874,
            0.39852935,
            1.73059186,
            -0.02030036,
            -0.66416477,
            0.99211213,
            -1.426617,
            -0.49562542,
            0.1788099,
            -0.71680991,
        ],
        Tol::scaled(1e-6),
        "y.select(0, 0)",
    );
    let gw: Vec<f64> = (0..24).map(|i| (i as f64).cos()).collect();
    backward_sum(y.mul(&t64(&gw, &[2, 3, 4])));
    assert_close_to(
        &x.grad().unwrap().select(0, 0).unwrap(),
        &[
            -0.87424104,
            2.08887337,
            -2.14776047,
            0.93312814,
            -0.39623933,
            1.64424189,
            0.85142461,
            -2.09942717,
            1.09429858,
            -2.24365584,
            0.20867555,
            0.9406817,
        ],
        Tol::scaled(1e-6),
        "x.grad().select(0, 0)",
    );
    assert_close_to(
        &w.grad().unwrap(),
        &[0.52704088, 0.67622095, -1.34794766, 2.55509004],
        Tol::scaled(1e-6),
        "w.grad()",
    );
    assert_close_to(
        &b.grad().unwrap(),
        &[0.49513289, -0.00261159, -0.49795498, -0.53548086],
        Tol::scaled(1e-6),
        "b.grad()",
    );
    let (w0, b0) = (w.detach(), b.detach());
    gradcheck64(
        |xs| layer_norm(&xs[0], &[4], Some(&xs[1]), Some(&xs[2]), 1e-5),
        &[x234(), w0, b0],
    );
    let m = LayerNorm::new(&[4], 1e-5, true).unwrap();
    let names: Vec<String> = m.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["weight", "bias"]);
    let msg = layer_norm(&x234(), &[3], None, None, 1e-5)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("[3]") && msg.contains("[2, 3, 4]"), "{msg}");
}

#[test]
fn rms_norm_matches_pytorch() {
    let y = rms_norm(&x234(), &[3, 4], None, None).unwrap();
    assert_close_to(
        &y.select(0, 0).unwrap(),
        &[
            0.40830649,
            1.16262122,
            1.37013703,
            0.93325598,
            0.05745006,
            -0.84537552,
            -1.35060778,
            -1.2206281,
            -0.51656795,
            0.43044217,
            1.17500862,
            1.36695015,
        ],
        Tol::scaled(1e-6),
        "y.select(0, 0)",
    );
    let (w, _) = weight_bias();
    gradcheck64(
        |xs| rms_norm(&xs[0], &[4], Some(&xs[1]), Some(1e-6)),
        &[x234(), w],
    );
}

#[test]
fn group_norm_matches_pytorch() {
    let w = t64(&[1.0, 2.0, 0.5, 1.5], &[4]);
    let b = t64(&[0.1, 0.0, -0.2, 0.3], &[4]);
    assert_close_to(
        &group_norm(&x243(), 2, Some(&w), Some(&b), 1e-5).unwrap(),
        &[
            0.06819819,
            1.56347508,
            0.86816782,
            -2.19819363,
            -2.80554353,
            0.60405497,
            0.34566359,
            -0.11238133,
            -0.8855758,
            -1.62356431,
            0.76726104,
            1.9131839,
            0.26766941,
            -1.34449927,
            -0.84028154,
            1.88328488,
            2.88849927,
            -0.33756135,
            -0.73781225,
            -0.35520227,
            0.44157413,
            2.35571297,
            0.03546343,
            -1.33685523,
        ],
        Tol::scaled(1e-6),
        "group_norm(&x243(), 2, Some(&w), Some(&b), 1e-5)",
    );
    gradcheck64(
        |xs| group_norm(&xs[0], 2, Some(&xs[1]), Some(&xs[2]), 1e-5),
        &[x243(), w.clone(), b.clone()],
    );
    let msg = group_norm(&x243(), 3, None, None, 1e-5)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("divisible by num_groups (3)"), "{msg}");
    assert!(GroupNorm::new(3, 4, 1e-5, true).is_err());
}

#[test]
fn batch_norm_running_stats_and_eval_match_pytorch() {
    let mut bn = BatchNorm1d::new(4).unwrap();
    {
        let _g = no_grad();
        bn.weight
            .as_ref()
            .unwrap()
            .copy_(&Tensor::from_vec(vec![1.0f32, 2.0, 0.5, 1.5], &[4]).unwrap())
            .unwrap();
        bn.bias
            .as_ref()
            .unwrap()
            .copy_(&Tensor::from_vec(vec![0.1f32, 0.0, -0.2, 0.3], &[4]).unwrap())
            .unwrap();
    }
    let x = x243().to_dtype(tinytorch::DType::F32).unwrap();
    let y1 = bn.forward(&x).unwrap();
    bn.forward(&x.mul_scalar(2.0).unwrap().add_scalar(1.0).unwrap())
        .unwrap();
    assert_close_to(
        &y1.select(0, 0).unwrap(),
        &[
            0.08617012,
            1.59886026,
            0.89545584,
            -2.1496973,
            -2.75120115,
            0.62557715,
            0.46937597,
            0.02531534,
            -0.7242732,
            -1.24447942,
            1.0736382,
            2.18471217,
        ],
        Tol::scaled(1e-5),
        "y1.select(0, 0)",
    );
    assert_close_to(
        bn.running_mean.as_ref().unwrap(),
        &[0.10255472, 0.10336389, 0.09256136, 0.10743601],
        Tol::scaled(1e-5),
        "bn.running_mean.as_ref()",
    );
    assert_close_to(
        bn.running_var.as_ref().unwrap(),
        &[1.04857361, 1.05893219, 1.15413904, 1.15405428],
        Tol::scaled(1e-5),
        "bn.running_var.as_ref()",
    );
    assert_eq!(
        bn.num_batches_tracked
            .as_ref()
            .unwrap()
            .item::<i64>()
            .unwrap(),
        2
    );
    bn.eval();
    assert_close_to(
        &bn.forward(&x).unwrap().select(0, 0).unwrap(),
        &[
            -0.00015073,
            0.94082063,
            0.50326675,
            -1.5375942,
            -1.91792309,
            0.21720265,
            0.22165632,
            -0.09456661,
            -0.62836099,
            -0.91396356,
            0.73666382,
            1.52780974,
        ],
        Tol::scaled(1e-5),
        "bn.forward(&x).select(0, 0)",
    );
    let keys: Vec<String> = bn.state_dict().into_keys().collect();
    let mut expected = vec![
        "weight",
        "bias",
        "running_mean",
        "running_var",
        "num_batches_tracked",
    ];
    expected.sort();
    assert_eq!(keys, expected);
    let w = t64(&[1.0, 2.0, 0.5, 1.5], &[4]);
    gradcheck64(
        |xs| batch_norm(&xs[0], None, None, Some(&xs[1]), None, true, 0.1, 1e-5),
        &[x243(), w],
    );
    let one = t64(&[1.0, 2.0, 3.0, 4.0], &[1, 4]);
    assert!(batch_norm(&one, None, None, None, None, true, 0.1, 1e-5).is_err());
}

#[test]
fn batch_norm_add_relu_is_batch_norm_plus_residual_then_relu() {
    // Against the three ops it fuses, in training (the fused kernel, f32 and f64, a
    // non-contiguous input and residual; output, gradients of input, parameters and
    // residual, running statistics) and in evaluation; an f64 gradcheck through the
    // residual; the residual's shape checked; a hooked module runs the three ops.
    assert_fused_batch_norm_relu_matches_separate_ops(true);
    let residual = x243().mul_scalar(0.5).unwrap().cos().unwrap();
    let (w, b) = weight_bias();
    gradcheck64(
        |xs| {
            let (w, b) = (Some(&xs[2]), Some(&xs[3]));
            batch_norm_add_relu(&xs[0], &xs[1], None, None, w, b, true, 0.1, 1e-5)
        },
        &[x243(), residual, w, b],
    );
    let short = t64(&[1.0; 4], &[1, 4]);
    let err = batch_norm_add_relu(&x243(), &short, None, None, None, None, true, 0.1, 1e-5)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("batch_norm_add_relu") && err.contains("[1, 4]"),
        "{err}"
    );
    // A module with a forward hook runs it on the batch norm's own output, then the sum
    // and the ReLU.
    let residual = |x: &Tensor| x.mul_scalar(0.3).unwrap().cos().unwrap();
    assert_fused_module_call_runs_hooks(
        |bn, x| bn.call_add_relu(x, &residual(x)).unwrap(),
        |bn, x| {
            bn.call(x)
                .unwrap()
                .add(&residual(x))
                .unwrap()
                .relu()
                .unwrap()
        },
    );
}

#[test]
fn batch_norm_relu_is_batch_norm_then_relu() {
    // Against the two ops it fuses, in training (the fused kernel, f32 and f64, NCHW with a
    // non-contiguous input; outputs, gradients and running statistics) and in evaluation.
    assert_fused_batch_norm_relu_matches_separate_ops(false);
    let (w, b) = weight_bias();
    gradcheck64(
        |xs| {
            let (w, b) = (Some(&xs[1]), Some(&xs[2]));
            batch_norm_relu(&xs[0], None, None, w, b, true, 0.1, 1e-5)
        },
        &[x243(), w, b],
    );
    // A module with a forward hook runs it on the batch norm's own output, then the ReLU.
    assert_fused_module_call_runs_hooks(
        |bn, x| bn.call_relu(x).unwrap(),
        |bn, x| bn.call(x).unwrap().relu().unwrap(),
    );
}

#[test]
fn fused_layer_and_rms_norm_match_pytorch_in_every_dtype() {
    let f = load_fixture("norm.safetensors");
    let cases: Vec<String> = f
        .keys()
        .filter_map(|k| k.strip_suffix(".x").map(str::to_string))
        .collect();
    assert_eq!(cases.len(), 13, "{cases:?}");
    for case in &cases {
        let get = |n: &str| f.get(&format!("{case}.{n}")).cloned();
        let leaf = |t: Option<Tensor>| t.map(|t| t.requires_grad_(true).unwrap());
        let x = leaf(get("x")).unwrap();
        let (w, b) = (leaf(get("weight")), leaf(get("bias")));
        let eps = get("eps").unwrap().item_f64().unwrap();
        let want = get("out").unwrap();
        let norm_shape = if case.ends_with("_2d") {
            want.shape()[want.ndim() - 2..].to_vec()
        } else {
            want.shape()[want.ndim() - 1..].to_vec()
        };
        // `_t` cases normalise a transposed (non-contiguous) view of x.
        let xin = if case.ends_with("_t") {
            x.transpose(0, 1).unwrap()
        } else {
            x.clone()
        };
        let y = if case.starts_with("ln") {
            layer_norm(&xin, &norm_shape, w.as_ref(), b.as_ref(), eps)
        } else {
            rms_norm(&xin, &norm_shape, w.as_ref(), Some(eps))
        }
        .unwrap();
        // Half types: PyTorch and TinyTorch both compute in f32 and round the result once.
        let tol = match x.dtype() {
            DType::F64 => 1e-10,
            DType::F32 => 1e-5,
            DType::F16 => 2e-3,
            _ => 1.6e-2,
        };
        assert_close_same_dtype(&y, &want, Tol::scaled(tol), &format!("{case} out"));
        backward_sum(y.mul(&get("gout").unwrap()));
        // Gradients of parameters sum over every row: allow for the rounding of the sum.
        let gtol = if x.dtype().is_float() && x.dtype().size_in_bytes() == 2 {
            4.0 * tol
        } else {
            tol
        };
        assert_close_same_dtype(
            &x.grad().unwrap(),
            &get("grad_x").unwrap(),
            Tol::scaled(gtol),
            &format!("{case} grad x"),
        );
        for (name, p) in [("weight", &w), ("bias", &b)] {
            if let Some(p) = p {
                let want = get(&format!("grad_{name}")).unwrap();
                assert_close_same_dtype(
                    &p.grad().unwrap(),
                    &want,
                    Tol::scaled(gtol),
                    &format!("{case} grad {name}"),
                );
            }
        }
    }
}

#[test]
fn fused_norms_pass_gradcheck_with_and_without_parameters_and_a_reused_output() {
    let (w, b) = weight_bias();
    // The output used twice (y * y + y): its gradient is accumulated before the norm's
    // backward runs.
    gradcheck64(
        |xs| {
            let y = layer_norm(&xs[0], &[4], Some(&xs[1]), Some(&xs[2]), 1e-5)?;
            y.mul(&y)?.add(&y)
        },
        &[x234(), w.clone(), b.clone()],
    );
    gradcheck64(|xs| layer_norm(&xs[0], &[4], None, None, 1e-5), &[x234()]);
    gradcheck64(
        |xs| layer_norm(&xs[0], &[4], Some(&xs[1]), None, 1e-5),
        &[x234(), w.clone()],
    );
    gradcheck64(
        |xs| layer_norm(&xs[0], &[4], None, Some(&xs[1]), 1e-5),
        &[x234(), b.clone()],
    );
    gradcheck64(
        |xs| layer_norm(&xs[0], &[3, 4], None, None, 1e-5),
        &[x234()],
    );
    gradcheck64(
        |xs| {
            layer_norm(
                &xs[0].transpose(0, 1)?,
                &[4],
                Some(&xs[1]),
                Some(&xs[2]),
                1e-5,
            )
        },
        &[x234(), w.clone(), b.clone()],
    );
    gradcheck64(
        |xs| {
            let y = rms_norm(&xs[0], &[4], Some(&xs[1]), Some(1e-6))?;
            y.mul(&y)?.add(&y)
        },
        &[x234(), w.clone()],
    );
    gradcheck64(|xs| rms_norm(&xs[0], &[4], None, None), &[x234()]);
    gradcheck64(
        |xs| rms_norm(&xs[0].transpose(0, 2)?, &[2], None, Some(1e-6)),
        &[x234()],
    );
    // Training-mode batch norm (fused on the CPU): gradients through the batch statistics,
    // with both parameters and a reused output, and on a transposed input without them.
    gradcheck64(
        |xs| {
            let (w, b) = (Some(&xs[1]), Some(&xs[2]));
            let y = batch_norm(&xs[0], None, None, w, b, true, 0.1, 1e-5)?;
            y.mul(&y)?.add(&y)
        },
        &[x243(), w.clone(), b.clone()],
    );
    gradcheck64(
        |xs| {
            let x = xs[0].transpose(0, 2)?;
            batch_norm(&x, None, None, None, None, true, 0.1, 1e-5)
        },
        &[x243()],
    );
    // A 1-D input is one row; an empty batch gives an empty result.
    gradcheck64(
        |xs| layer_norm(&xs[0], &[5], None, None, 1e-5),
        &[t64(&[1.0, -2.0, 0.5, 3.0, 0.0], &[5])],
    );
    let empty = Tensor::zeros(&[0, 4], DType::F32, tinytorch::Device::Cpu).unwrap();
    assert_eq!(
        layer_norm(&empty, &[4], None, None, 1e-5).unwrap().shape(),
        &[0, 4]
    );
    assert_eq!(rms_norm(&empty, &[4], None, None).unwrap().shape(), &[0, 4]);
}

#[test]
fn norm_errors_name_the_op_and_shapes() {
    let x = x234();
    let msg = rms_norm(&x, &[3], None, None).unwrap_err().to_string();
    assert!(
        msg.contains("rms_norm") && msg.contains("[3]") && msg.contains("[2, 3, 4]"),
        "{msg}"
    );
    let w = t64(&[1.0, 2.0, 3.0], &[3]);
    let msg = layer_norm(&x, &[4], Some(&w), None, 1e-5)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("layer_norm") && msg.contains("weight") && msg.contains("[3]"),
        "{msg}"
    );
    let ids = Tensor::from_vec(vec![1i64, 2, 3, 4], &[4]).unwrap();
    let msg = layer_norm(&ids, &[4], None, None, 1e-5)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("layer_norm") && msg.contains("floating"),
        "{msg}"
    );
}

#[test]
fn layer_norm_writes_every_element_of_unzeroed_buffers() {
    // The forward's output and the backward's dx skip the memset: cached NaN buffers of
    // their size must come back overwritten.
    // A size past the cache's smallest buffer (128 KiB).
    let x = Tensor::randn(&[512, 96], DType::F32, tinytorch::Device::Cpu).unwrap();
    let (w, b) = (
        x.narrow(0, 0, 1).unwrap().reshape(&[96]).unwrap(),
        x.narrow(0, 1, 1).unwrap().reshape(&[96]).unwrap(),
    );
    let run = |poison: bool| {
        let x = x.detach().requires_grad_(true).unwrap();
        if poison {
            poison_cached_buffer(DType::F32, 512 * 96);
        }
        let y = layer_norm(&x, &[96], Some(&w), Some(&b), 1e-5).unwrap();
        if poison {
            poison_cached_buffer(DType::F32, 512 * 96);
        }
        y.mul(&y).unwrap().sum_all().unwrap().backward().unwrap();
        (y.detach(), x.grad().unwrap())
    };
    let ((y1, g1), (y2, g2)) = (run(true), run(false));
    for t in [&y1, &g1] {
        assert!(t.to_vec_f64().unwrap().iter().all(|v| v.is_finite()));
    }
    assert_eq!(max_diff(&y1, &y2), 0.0);
    assert_eq!(max_diff(&g1, &g2), 0.0);
}
