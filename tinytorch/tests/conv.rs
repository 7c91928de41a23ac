//! Convolution and pooling: forward values and gradients against PyTorch, f64 gradchecks,
//! non-contiguous inputs and argument errors.
//!
//! PyTorch's values (inputs, weights, biases, upstream gradients, outputs and gradients, all
//! f64) are read from `tests/fixtures/conv.safetensors`, written by
//! `scripts/fixtures/gen_conv_fixtures.py`. Regenerate it with
//! `python scripts/fixtures/gen_conv_fixtures.py` (torch 2.15, CPU).

mod common;
use common::{assert_close, assert_close_slices, load_fixture_case, Tol};

/// Values and gradients against PyTorch's (both f64): `|got - want| <= 1e-9 + 1e-7 |want|`.
const TOL: Tol = Tol::new(1e-9, 1e-7);

use std::collections::BTreeMap;

use tinytorch::autograd::gradcheck::gradcheck;
use tinytorch::ops::ConvPadding;
use tinytorch::{DType, Error, Result, Tensor};

/// The deterministic test input `sin(a*i + 0.3)`, for the tests that need no PyTorch values.
fn det(shape: &[usize], a: f64) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|i| (a * i as f64 + 0.3).sin()).collect();
    Tensor::from_vec(v, shape).unwrap()
}

/// The tensors of one case of `tests/fixtures/conv.safetensors`, by the name after
/// `<case>.`: `x`, `w`, `b` (the inputs), `out`, `gout`, `grad_x`, `grad_w`, `grad_b`. The
/// folder is `$TINYTORCH_FIXTURES` when set (a test binary run away from its source tree).
fn fixture_case(case: &str) -> BTreeMap<String, Tensor> {
    let tensors = load_fixture_case("conv.safetensors", case);
    for (key, t) in &tensors {
        assert_eq!(t.dtype(), DType::F64, "{case}.{key}: dtype");
    }
    tensors
}

type ConvFn = fn(&Tensor, Option<&Tensor>, Option<&Tensor>) -> Result<Tensor>;

/// Run `f` on the PyTorch case `case`'s input `x` and, where the case has them, weight `w`
/// and bias `b` (of shapes `inputs`, in that order), check the output's shape (`out`) and
/// values, backpropagate `sum(y * gout)` and compare every input's gradient with PyTorch's.
fn check(case: &str, inputs: &[&[usize]], out: &[usize], f: ConvFn) {
    let t = fixture_case(case);
    let want = |key: &str| {
        t.get(key)
            .unwrap_or_else(|| panic!("{case}: no {key} in the fixture"))
    };
    let leaf = |key: &str| t.get(key).map(|v| v.requires_grad_(true).unwrap());
    let (x, w, b) = (leaf("x").expect("input x"), leaf("w"), leaf("b"));
    let leaves: Vec<(&str, &Tensor)> = [("x", Some(&x)), ("w", w.as_ref()), ("b", b.as_ref())]
        .into_iter()
        .filter_map(|(key, v)| Some((key, v?)))
        .collect();
    let shapes: Vec<&[usize]> = leaves.iter().map(|(_, v)| v.shape()).collect();
    assert_eq!(shapes, inputs, "{case}: input shapes");
    let y = f(&x, w.as_ref(), b.as_ref()).unwrap();
    assert_eq!(y.shape(), out, "{case}: output shape");
    assert_close(&y, want("out"), TOL, &format!("{case} y"));
    y.mul(want("gout"))
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    for (key, v) in leaves {
        let grad = format!("grad_{key}");
        assert_close(
            &v.grad().unwrap(),
            want(&grad),
            TOL,
            &format!("{case} {grad}"),
        );
    }
}

/// PyTorch: `F.conv2d(x, w, b, padding="same")`.
#[test]
fn conv2d_3x3_same() {
    check(
        "conv2d_3x3_same",
        &[&[2, 2, 5, 5], &[3, 2, 3, 3], &[3]],
        &[2, 3, 5, 5],
        |x, w, b| x.conv2d(w.unwrap(), b, [1, 1], ConvPadding::Same, [1, 1], 1),
    );
}

/// PyTorch: `F.conv2d(x, w, b, padding=2)`.
#[test]
fn conv2d_5x5_pad2() {
    check(
        "conv2d_5x5_pad2",
        &[&[1, 2, 6, 6], &[2, 2, 5, 5], &[2]],
        &[1, 2, 6, 6],
        |x, w, b| {
            x.conv2d(
                w.unwrap(),
                b,
                [1, 1],
                ConvPadding::Explicit(2, 2),
                [1, 1],
                1,
            )
        },
    );
}

/// PyTorch: `F.conv2d(x, w, b, stride=2, padding=1)`.
#[test]
fn conv2d_stride2() {
    check(
        "conv2d_stride2",
        &[&[2, 3, 7, 6], &[2, 3, 3, 3], &[2]],
        &[2, 2, 4, 3],
        |x, w, b| {
            x.conv2d(
                w.unwrap(),
                b,
                [2, 2],
                ConvPadding::Explicit(1, 1),
                [1, 1],
                1,
            )
        },
    );
}

/// PyTorch: `F.conv2d(x, w, b, padding=1, dilation=2)`.
#[test]
fn conv2d_dilation2() {
    check(
        "conv2d_dilation2",
        &[&[1, 2, 7, 7], &[2, 2, 3, 3], &[2]],
        &[1, 2, 5, 5],
        |x, w, b| {
            x.conv2d(
                w.unwrap(),
                b,
                [1, 1],
                ConvPadding::Explicit(1, 1),
                [2, 2],
                1,
            )
        },
    );
}

/// PyTorch: `F.conv2d(x, w, b, padding="valid", groups=2)`.
#[test]
fn conv2d_groups2() {
    check(
        "conv2d_groups2",
        &[&[2, 4, 5, 5], &[4, 2, 3, 3], &[4]],
        &[2, 4, 3, 3],
        |x, w, b| x.conv2d(w.unwrap(), b, [1, 1], ConvPadding::Valid, [1, 1], 2),
    );
}

/// PyTorch: `F.conv2d(x, w, b, padding=1, groups=3)` (depthwise, channel multiplier 2).
#[test]
fn conv2d_depthwise() {
    check(
        "conv2d_depthwise",
        &[&[1, 3, 5, 4], &[6, 1, 3, 3], &[6]],
        &[1, 6, 5, 4],
        |x, w, b| {
            x.conv2d(
                w.unwrap(),
                b,
                [1, 1],
                ConvPadding::Explicit(1, 1),
                [1, 1],
                3,
            )
        },
    );
}

/// PyTorch: `F.conv2d(x, w, None, padding=(1, 0))`.
#[test]
fn conv2d_rect_3x1_nobias() {
    check(
        "conv2d_rect_3x1_nobias",
        &[&[1, 2, 5, 4], &[3, 2, 3, 1]],
        &[1, 3, 5, 4],
        |x, w, b| {
            x.conv2d(
                w.unwrap(),
                b,
                [1, 1],
                ConvPadding::Explicit(1, 0),
                [1, 1],
                1,
            )
        },
    );
}

/// PyTorch: `F.conv2d(x, w, None, padding="same")` with a 4x2 kernel (asymmetric padding).
#[test]
fn conv2d_same_even_kernel() {
    check(
        "conv2d_same_even_kernel",
        &[&[1, 1, 5, 5], &[2, 1, 4, 2]],
        &[1, 2, 5, 5],
        |x, w, b| x.conv2d(w.unwrap(), b, [1, 1], ConvPadding::Same, [1, 1], 1),
    );
}

/// PyTorch: `F.conv2d(x, w, b, padding="valid")`.
#[test]
fn conv2d_valid() {
    check(
        "conv2d_valid",
        &[&[1, 2, 4, 5], &[2, 2, 2, 3], &[2]],
        &[1, 2, 3, 3],
        |x, w, b| x.conv2d(w.unwrap(), b, [1, 1], ConvPadding::Valid, [1, 1], 1),
    );
}

/// PyTorch: `F.conv1d(x, w, b, stride=2, padding=1)`.
#[test]
fn conv1d_basic() {
    check(
        "conv1d_basic",
        &[&[2, 2, 9], &[3, 2, 3], &[3]],
        &[2, 3, 5],
        |x, w, b| x.conv1d(w.unwrap(), b, 2, ConvPadding::Explicit(0, 1), 1, 1),
    );
}

/// PyTorch: `F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1)`.
#[test]
fn conv_transpose2d_basic() {
    check(
        "conv_transpose2d_basic",
        &[&[1, 2, 3, 3], &[2, 3, 3, 3], &[3]],
        &[1, 3, 6, 6],
        |x, w, b| x.conv_transpose2d(w.unwrap(), b, [2, 2], [1, 1], [1, 1], 1, [1, 1]),
    );
}

/// PyTorch: `F.conv_transpose2d(x, w, b, stride=(1, 2), padding=(0, 1), output_padding=0,
/// groups=2, dilation=(2, 1))`.
#[test]
fn conv_transpose2d_groups_dilation() {
    check(
        "conv_transpose2d_groups_dilation",
        &[&[1, 4, 3, 4], &[4, 1, 2, 3], &[2]],
        &[1, 2, 5, 7],
        |x, w, b| x.conv_transpose2d(w.unwrap(), b, [1, 2], [0, 1], [0, 0], 2, [2, 1]),
    );
}

/// PyTorch: `F.max_pool2d(x, 3, stride=2, padding=1, dilation=1, ceil_mode=False)`.
#[test]
fn max_pool2d_basic() {
    check(
        "max_pool2d_basic",
        &[&[1, 2, 5, 5]],
        &[1, 2, 3, 3],
        |x, _, _| x.max_pool2d([3, 3], Some([2, 2]), [1, 1], [1, 1], false),
    );
}

/// PyTorch: `F.max_pool2d(x, 2, ceil_mode=True)`.
#[test]
fn max_pool2d_ceil() {
    check(
        "max_pool2d_ceil",
        &[&[1, 1, 6, 7]],
        &[1, 1, 3, 4],
        |x, _, _| x.max_pool2d([2, 2], None, [0, 0], [1, 1], true),
    );
}

/// PyTorch: `F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=True)`.
#[test]
fn avg_pool2d_pad() {
    check(
        "avg_pool2d_pad",
        &[&[1, 2, 5, 5]],
        &[1, 2, 3, 3],
        |x, _, _| x.avg_pool2d([3, 3], Some([2, 2]), [1, 1], true),
    );
}

/// PyTorch: `F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False)`.
#[test]
fn avg_pool2d_exclude_pad() {
    check(
        "avg_pool2d_exclude_pad",
        &[&[1, 2, 5, 5]],
        &[1, 2, 3, 3],
        |x, _, _| x.avg_pool2d([3, 3], Some([2, 2]), [1, 1], false),
    );
}

/// PyTorch: `F.adaptive_avg_pool2d(x, (3, 2))`.
#[test]
fn adaptive_avg_pool2d_3x2() {
    check(
        "adaptive_avg_pool2d_3x2",
        &[&[1, 2, 7, 5]],
        &[1, 2, 3, 2],
        |x, _, _| x.adaptive_avg_pool2d([3, 2]),
    );
}

/// Forward and backward of the im2col + gemm path with every option at once, batch 3.
/// PyTorch: `F.conv2d(x, w, b, stride=(2, 1), padding=(2, 1), dilation=(2, 1), groups=2)`.
#[test]
fn conv2d_groups_stride_dilation_padding() {
    check(
        "conv2d_groups_stride_dilation_padding",
        &[&[3, 4, 7, 6], &[6, 2, 3, 2], &[6]],
        &[3, 6, 4, 7],
        |x, w, b| {
            x.conv2d(
                w.unwrap(),
                b,
                [2, 1],
                ConvPadding::Explicit(2, 1),
                [2, 1],
                2,
            )
        },
    );
}

/// Depthwise, "same" with an even kernel (asymmetric padding), no bias.
/// PyTorch: `F.conv2d(x, w, None, padding="same", groups=3)`.
#[test]
fn depthwise_same_even_kernel() {
    check(
        "depthwise_same_even_kernel",
        &[&[2, 3, 6, 5], &[3, 1, 4, 2]],
        &[2, 3, 6, 5],
        |x, w, b| x.conv2d(w.unwrap(), b, [1, 1], ConvPadding::Same, [1, 1], 3),
    );
}

fn gc(f: impl Fn(&[Tensor]) -> Result<Tensor>, inputs: &[Tensor]) {
    gradcheck(f, inputs, 1e-6, 1e-7, 1e-5).unwrap();
}

#[test]
fn gradcheck_conv_ops() {
    let x = det(&[1, 4, 5, 4], 0.37);
    let w = det(&[2, 2, 3, 2], 0.53);
    let b = det(&[2], 0.71);
    gc(
        |t| {
            t[0].conv2d(
                &t[1],
                Some(&t[2]),
                [2, 1],
                ConvPadding::Explicit(1, 1),
                [1, 2],
                2,
            )
        },
        &[x.clone(), w, b],
    );
    let w1 = det(&[3, 2, 2], 0.53);
    gc(
        |t| t[0].conv1d(&t[1], None, 1, ConvPadding::Same, 2, 1),
        &[det(&[2, 2, 6], 0.37), w1],
    );
    let wt = det(&[4, 1, 2, 3], 0.53);
    gc(
        |t| t[0].conv_transpose2d(&t[1], None, [2, 2], [1, 0], [1, 0], 2, [1, 1]),
        &[det(&[1, 4, 3, 3], 0.37), wt],
    );
}

#[test]
fn gradcheck_pools() {
    let x = det(&[1, 2, 5, 5], 0.37);
    gc(
        |t| t[0].max_pool2d([2, 3], Some([2, 1]), [1, 1], [1, 1], true),
        std::slice::from_ref(&x),
    );
    gc(
        |t| t[0].avg_pool2d([3, 3], Some([2, 2]), [1, 1], false),
        std::slice::from_ref(&x),
    );
    gc(|t| t[0].adaptive_avg_pool2d([2, 3]), &[x]);
}

#[test]
fn non_contiguous_input_and_unbatched() {
    let x = det(&[2, 2, 5, 6], 0.37);
    let w = det(&[3, 2, 3, 3], 0.53);
    let xt = x
        .transpose(2, 3)
        .unwrap()
        .contiguous()
        .unwrap()
        .transpose(2, 3)
        .unwrap();
    assert!(!xt.is_contiguous());
    let a = x
        .conv2d(&w, None, [1, 1], ConvPadding::Same, [1, 1], 1)
        .unwrap();
    let b = xt
        .conv2d(&w, None, [1, 1], ConvPadding::Same, [1, 1], 1)
        .unwrap();
    assert_close_slices(
        &b.to_vec_f64().unwrap(),
        &a.to_vec_f64().unwrap(),
        TOL,
        "noncontig",
    );
    let u = x
        .select(0, 1)
        .unwrap()
        .conv2d(&w, None, [1, 1], ConvPadding::Same, [1, 1], 1)
        .unwrap();
    assert_eq!(u.shape(), &[3, 5, 6]);
    assert_close_slices(
        &u.to_vec_f64().unwrap(),
        &a.select(0, 1).unwrap().to_vec_f64().unwrap(),
        TOL,
        "unbatched",
    );
}

#[test]
fn f32_matches_f64() {
    let x = det(&[1, 2, 5, 5], 0.37);
    let w = det(&[2, 2, 3, 3], 0.53);
    let a = x
        .conv2d(&w, None, [1, 1], ConvPadding::Valid, [1, 1], 1)
        .unwrap();
    let x32 = x.to_dtype(DType::F32).unwrap();
    let w32 = w.to_dtype(DType::F32).unwrap();
    let b = x32
        .conv2d(&w32, None, [1, 1], ConvPadding::Valid, [1, 1], 1)
        .unwrap();
    assert_eq!(b.dtype(), DType::F32);
    for (p, q) in a.to_vec_f64().unwrap().iter().zip(b.to_vec_f64().unwrap()) {
        assert!((p - q).abs() < 1e-4);
    }
}

#[test]
fn errors() {
    let x = det(&[1, 4, 5, 5], 0.37);
    let is_shape = |r: Result<Tensor>| matches!(r, Err(Error::Shape { .. }));
    let is_invalid = |r: Result<Tensor>| matches!(r, Err(Error::Invalid { .. }));
    // Channel mismatch: the weight expects 3 input channels.
    assert!(is_shape(x.conv2d(
        &det(&[2, 3, 3, 3], 0.5),
        None,
        [1, 1],
        ConvPadding::Valid,
        [1, 1],
        1
    )));
    // groups=3 does not divide 4 channels.
    assert!(is_invalid(x.conv2d(
        &det(&[3, 1, 3, 3], 0.5),
        None,
        [1, 1],
        ConvPadding::Valid,
        [1, 1],
        3
    )));
    // Kernel larger than the padded input.
    assert!(is_shape(x.conv2d(
        &det(&[2, 4, 7, 3], 0.5),
        None,
        [1, 1],
        ConvPadding::Explicit(0, 0),
        [1, 1],
        1
    )));
    // Bad bias shape, bad input rank, 'same' with stride, dtype mismatch.
    let w = det(&[2, 4, 3, 3], 0.5);
    assert!(is_shape(x.conv2d(
        &w,
        Some(&det(&[3], 0.1)),
        [1, 1],
        ConvPadding::Valid,
        [1, 1],
        1
    )));
    assert!(is_shape(det(&[4, 5], 0.3).conv2d(
        &w,
        None,
        [1, 1],
        ConvPadding::Valid,
        [1, 1],
        1
    )));
    assert!(is_invalid(x.conv2d(
        &w,
        None,
        [2, 2],
        ConvPadding::Same,
        [1, 1],
        1
    )));
    let w32 = w.to_dtype(DType::F32).unwrap();
    assert!(matches!(
        x.conv2d(&w32, None, [1, 1], ConvPadding::Valid, [1, 1], 1),
        Err(Error::DType { .. })
    ));
    // Pools: padding over half the kernel, kernel larger than input.
    assert!(is_invalid(x.max_pool2d(
        [2, 2],
        None,
        [2, 2],
        [1, 1],
        false
    )));
    assert!(is_shape(x.avg_pool2d([7, 7], None, [0, 0], true)));
    assert!(is_invalid(x.adaptive_avg_pool2d([0, 2])));
}

#[test]
fn modules() {
    use tinytorch::nn::{AdaptiveAvgPool2d, Conv1d, Conv2d, ConvTranspose2d, MaxPool2d, Module};
    let c = Conv2d::new(
        4,
        6,
        [3, 3],
        [1, 1],
        ConvPadding::Explicit(1, 1),
        [1, 1],
        2,
        true,
    )
    .unwrap();
    let names: Vec<String> = c.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["weight", "bias"]);
    assert_eq!(c.weight.shape(), &[6, 2, 3, 3]);
    let bound = 1.0 / 18f64.sqrt();
    assert!(c
        .weight
        .to_vec_f64()
        .unwrap()
        .iter()
        .all(|v| v.abs() <= bound));
    let x = Tensor::randn(&[2, 4, 8, 8], DType::F32, tinytorch::Device::Cpu).unwrap();
    let y = MaxPool2d::new([2, 2])
        .forward(&c.forward(&x).unwrap())
        .unwrap();
    assert_eq!(y.shape(), &[2, 6, 4, 4]);
    let g = AdaptiveAvgPool2d::new([1, 1]).forward(&y).unwrap();
    assert_eq!(g.shape(), &[2, 6, 1, 1]);
    let t = ConvTranspose2d::new(6, 3, [2, 2], [2, 2], [0, 0], [0, 0], 1, false, [1, 1]).unwrap();
    assert_eq!(t.forward(&y).unwrap().shape(), &[2, 3, 8, 8]);
    assert_eq!(t.weight.shape(), &[6, 3, 2, 2]);
    let c1 = Conv1d::new(3, 5, 3, 1, ConvPadding::Valid, 1, 1, false).unwrap();
    assert_eq!(c1.num_parameters(), 45);
    assert!(Conv2d::new(3, 4, [3, 3], [1, 1], ConvPadding::Valid, [1, 1], 2, true).is_err());
}

#[test]
fn empty_batch() {
    let x = Tensor::zeros(&[0, 2, 5, 5], DType::F32, tinytorch::Device::Cpu).unwrap();
    let w = Tensor::zeros(&[3, 2, 3, 3], DType::F32, tinytorch::Device::Cpu).unwrap();
    let y = x
        .conv2d(&w, None, [1, 1], ConvPadding::Same, [1, 1], 1)
        .unwrap();
    assert_eq!(y.shape(), &[0, 3, 5, 5]);
    let p = x.max_pool2d([2, 2], None, [0, 0], [1, 1], false).unwrap();
    assert_eq!(p.shape(), &[0, 2, 2, 2]);
}

/// The hand-written conv2d backward, in f64 against finite differences: batch 2, groups,
/// stride, dilation, asymmetric padding, a non-contiguous input and a non-contiguous weight.
#[test]
fn gradcheck_conv2d_backward_node() {
    let x = det(&[2, 4, 6, 5], 0.37);
    let w = det(&[6, 2, 2, 3], 0.53);
    let b = det(&[6], 0.71);
    gc(
        |t| {
            t[0].conv2d(
                &t[1],
                Some(&t[2]),
                [2, 1],
                ConvPadding::Explicit(1, 2),
                [2, 2],
                2,
            )
        },
        &[x.clone(), w.clone(), b],
    );
    // Channels-last input and a transposed weight view.
    gc(
        |t| {
            let xs = t[0].permute(&[0, 3, 1, 2])?;
            let ws = t[1].transpose(2, 3)?;
            xs.conv2d(&ws, None, [1, 2], ConvPadding::Explicit(1, 0), [1, 1], 1)
        },
        &[det(&[2, 5, 4, 3], 0.37), det(&[2, 3, 3, 2], 0.53)],
    );
    // Only the weight, then only the input, requires a gradient.
    gc(
        |t| {
            x.detach()
                .conv2d(&t[0], None, [1, 1], ConvPadding::Valid, [1, 1], 2)
        },
        std::slice::from_ref(&w),
    );
    gc(
        |t| t[0].conv2d(&w.detach(), None, [1, 1], ConvPadding::Valid, [1, 1], 2),
        std::slice::from_ref(&x),
    );
}

/// f16 and bf16 convolutions (columns in the input dtype, col2im accumulating in f32) agree
/// with f32 in value and gradient.
#[test]
fn half_precision_conv2d_matches_f32() {
    let x = det(&[2, 4, 6, 6], 0.37);
    let w = det(&[4, 2, 3, 3], 0.53).mul_scalar(0.25).unwrap();
    let run = |dt: DType| -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let x = x.to_dtype(dt).unwrap().requires_grad_(true).unwrap();
        let w = w.to_dtype(dt).unwrap().requires_grad_(true).unwrap();
        let y = x
            .conv2d(&w, None, [1, 1], ConvPadding::Explicit(1, 1), [1, 1], 2)
            .unwrap();
        assert_eq!(y.dtype(), dt);
        y.sum_all().unwrap().backward().unwrap();
        (
            y.to_vec_f64().unwrap(),
            x.grad().unwrap().to_vec_f64().unwrap(),
            w.grad().unwrap().to_vec_f64().unwrap(),
        )
    };
    let want = run(DType::F32);
    for (dt, tol) in [(DType::F16, 2e-2), (DType::BF16, 1e-1)] {
        let got = run(dt);
        for (name, g, e) in [
            ("y", &got.0, &want.0),
            ("grad x", &got.1, &want.1),
            ("grad w", &got.2, &want.2),
        ] {
            for (p, q) in g.iter().zip(e) {
                assert!(
                    (p - q).abs() <= tol * (1.0 + q.abs()),
                    "{dt:?} {name}: {p} vs {q}"
                );
            }
        }
    }
}

/// On the CPU, f16 convolutions (and bf16 ones without AMX tiles, or strided) run the f32
/// kernels on their widened operands (exact): the output and the input and weight gradients
/// are the f32 results rounded once, bit for bit, on shapes that take im2col, Winograd (3x3
/// and 5x5) and strides. bf16 convolutions of stride 1 on AMX sum the same products in f32
/// in another order, then round once: within one bf16 rounding of the f32 result.
#[test]
fn half_precision_conv2d_is_the_f32_result_rounded_once() {
    let cases: [(&[usize], &[usize], usize, usize); 4] = [
        (&[2, 3, 9, 9], &[8, 3, 3, 3], 1, 1),
        (&[2, 32, 12, 12], &[32, 32, 3, 3], 1, 1),
        (&[2, 16, 10, 10], &[24, 16, 5, 5], 2, 1),
        (&[1, 8, 11, 11], &[8, 8, 3, 3], 1, 2),
    ];
    for (xs, ws, pad, stride) in cases {
        let co = ws[0];
        for dt in [DType::F16, DType::BF16] {
            let half = |t: Tensor| t.to_dtype(dt).unwrap();
            let (x, w, b) = (
                half(det(xs, 0.37)),
                half(det(ws, 0.53).mul_scalar(0.2).unwrap()),
                half(det(&[co], 0.71)),
            );
            let run = |x: &Tensor, w: &Tensor, b: &Tensor, g_dtype: DType| {
                let (x, w, b) = (
                    x.detach().requires_grad_(true).unwrap(),
                    w.detach().requires_grad_(true).unwrap(),
                    b.detach().requires_grad_(true).unwrap(),
                );
                let pad = ConvPadding::Explicit(pad, pad);
                let y = x
                    .conv2d(&w, Some(&b), [stride, stride], pad, [1, 1], 1)
                    .unwrap();
                let g = half(det(y.shape(), 0.29)).to_dtype(g_dtype).unwrap();
                y.backward_with(Some(&g), false).unwrap();
                [y, x.grad().unwrap(), w.grad().unwrap(), b.grad().unwrap()]
            };
            let got = run(&x, &w, &b, dt);
            let f32 = |t: &Tensor| t.to_dtype(DType::F32).unwrap();
            let want = run(&f32(&x), &f32(&w), &f32(&b), DType::F32);
            for (i, name) in ["y", "grad x", "grad w"].iter().enumerate() {
                assert_eq!(got[i].dtype(), dt);
                let (g, e) = (got[i].to_vec_f64().unwrap(), want[i].to_vec_f64().unwrap());
                if dt == DType::F16 {
                    assert_eq!(
                        g,
                        half(want[i].clone()).to_vec_f64().unwrap(),
                        "{dt:?} {name} of {xs:?} * {ws:?}"
                    );
                    continue;
                }
                let scale = e.iter().fold(0f64, |m, v| m.max(v.abs()));
                for (p, q) in g.iter().zip(&e) {
                    // One rounding to bf16 (2^-9 relative, 2^-8 with the f32 sums' own
                    // error) of sums that may cancel.
                    assert!(
                        (p - q).abs() <= q.abs() / 256.0 + scale * 1e-5,
                        "{dt:?} {name} of {xs:?} * {ws:?}: {p} vs {q}"
                    );
                }
            }
            // The bias gradient is the op layer's sum of the half-precision gradient.
            let (gb, wb) = (got[3].to_vec_f64().unwrap(), want[3].to_vec_f64().unwrap());
            for (p, q) in gb.iter().zip(&wb) {
                assert!(
                    (p - q).abs() <= 2e-2 * (1.0 + q.abs()),
                    "{dt:?} grad b: {p} vs {q}"
                );
            }
        }
    }
}

/// On the CPU, f16 and bf16 max pooling run the f32 kernel widened: the maxima are the
/// same values, and the input gradient (overlapping windows, sums at shared maxima) is the
/// f32 gradient rounded once.
#[test]
fn half_precision_max_pool2d_is_the_f32_result_rounded_once() {
    for dt in [DType::F16, DType::BF16] {
        // Rounded to the half type first, so that repeated values make shared maxima.
        let x = det(&[2, 3, 9, 9], 0.9)
            .mul_scalar(4.0)
            .unwrap()
            .round()
            .unwrap();
        let x = x.to_dtype(dt).unwrap();
        let run = |x: &Tensor| {
            let x = x.detach().requires_grad_(true).unwrap();
            let y = x
                .max_pool2d([3, 3], Some([2, 2]), [1, 1], [1, 1], false)
                .unwrap();
            let g = det(y.shape(), 0.31).to_dtype(dt).unwrap();
            let g = g.to_dtype(x.dtype()).unwrap();
            y.backward_with(Some(&g), false).unwrap();
            (y, x.grad().unwrap())
        };
        let (y, gx) = run(&x);
        let (yf, gxf) = run(&x.to_dtype(DType::F32).unwrap());
        assert_eq!((y.dtype(), gx.dtype()), (dt, dt));
        let half = |t: &Tensor| t.to_dtype(dt).unwrap().to_vec_f64().unwrap();
        assert_eq!(y.to_vec_f64().unwrap(), half(&yf), "{dt:?} y");
        assert_eq!(gx.to_vec_f64().unwrap(), half(&gxf), "{dt:?} grad x");
    }
}

/// Zero input channels (an empty reduction: the output is the bias) and an empty batch with
/// gradients.
#[test]
fn empty_channels_and_empty_batch_backward() {
    let x = Tensor::zeros(&[2, 0, 4, 4], DType::F64, tinytorch::Device::Cpu).unwrap();
    let w = Tensor::zeros(&[3, 0, 3, 3], DType::F64, tinytorch::Device::Cpu).unwrap();
    let b = det(&[3], 0.71);
    let y = x
        .conv2d(&w, Some(&b), [1, 1], ConvPadding::Valid, [1, 1], 1)
        .unwrap();
    assert_eq!(y.shape(), &[2, 3, 2, 2]);
    assert_close_slices(
        &y.select(0, 1)
            .unwrap()
            .select(0, 1)
            .unwrap()
            .to_vec_f64()
            .unwrap()[..4],
        &[b.to_vec_f64().unwrap()[1]; 4],
        TOL,
        "bias only",
    );
    let x = Tensor::zeros(&[0, 2, 5, 5], DType::F64, tinytorch::Device::Cpu)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let w = det(&[3, 2, 3, 3], 0.53).requires_grad_(true).unwrap();
    let y = x
        .conv2d(&w, None, [1, 1], ConvPadding::Same, [1, 1], 1)
        .unwrap();
    y.sum_all().unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().shape(), &[0, 2, 5, 5]);
    assert_eq!(w.grad().unwrap().to_vec_f64().unwrap(), vec![0.0; 54]);
}

/// Global adaptive average pooling takes the one-reduction path; values and gradient.
#[test]
fn global_adaptive_avg_pool() {
    let x = det(&[2, 3, 4, 5], 0.37);
    let y = x.adaptive_avg_pool2d([1, 1]).unwrap();
    assert_eq!(y.shape(), &[2, 3, 1, 1]);
    let want = x.mean(&[2, 3], true).unwrap();
    assert_close_slices(
        &y.to_vec_f64().unwrap(),
        &want.to_vec_f64().unwrap(),
        TOL,
        "global",
    );
    gc(
        |t| t[0].adaptive_avg_pool2d([1, 1]),
        std::slice::from_ref(&x),
    );
    let u = x.select(0, 0).unwrap().adaptive_avg_pool2d([1, 1]).unwrap();
    assert_eq!(u.shape(), &[3, 1, 1]);
}

/// A batch large enough to be split into chunks (16 channels, 5x5, 28x28 in f32: columns of
/// 1.25 MB per image, so chunks of 3, 3 and 1 images) gives the same output and gradients as
/// convolving each image on its own, where the batch is a single chunk.
#[test]
fn chunked_batch_matches_image_by_image() {
    let x = det(&[7, 16, 28, 28], 0.013)
        .to_dtype(DType::F32)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let w = det(&[8, 16, 5, 5], 0.071)
        .to_dtype(DType::F32)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let b = det(&[8], 0.5)
        .to_dtype(DType::F32)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let pad = ConvPadding::Explicit(2, 2);
    let upstream = det(&[7, 8, 28, 28], 0.29).to_dtype(DType::F32).unwrap();
    let loss = |y: &Tensor, up: &Tensor| y.mul(up).unwrap().sum_all().unwrap();

    let y = x.conv2d(&w, Some(&b), [1, 1], pad, [1, 1], 1).unwrap();
    loss(&y, &upstream).backward().unwrap();
    let (gx, gw) = (x.grad().unwrap(), w.grad().unwrap());

    let close = |name: &str, got: &[f64], want: &[f64], rtol: f64| {
        for (k, (p, q)) in got.iter().zip(want).enumerate() {
            assert!(
                (p - q).abs() <= rtol * (1.0 + q.abs()),
                "{name}[{k}]: {p} vs {q}"
            );
        }
    };
    let mut gw_sum = vec![0.0; w.numel()];
    for i in 0..7 {
        let xi = x
            .detach()
            .narrow(0, i, 1)
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let wi = w.detach().requires_grad_(true).unwrap();
        let yi = xi
            .conv2d(&wi, Some(&b.detach()), [1, 1], pad, [1, 1], 1)
            .unwrap();
        close(
            "output",
            &y.narrow(0, i, 1).unwrap().to_vec_f64().unwrap(),
            &yi.to_vec_f64().unwrap(),
            1e-4,
        );
        loss(&yi, &upstream.narrow(0, i, 1).unwrap())
            .backward()
            .unwrap();
        close(
            "grad_input",
            &gx.narrow(0, i, 1).unwrap().to_vec_f64().unwrap(),
            &xi.grad().unwrap().to_vec_f64().unwrap(),
            1e-4,
        );
        for (acc, g) in gw_sum
            .iter_mut()
            .zip(wi.grad().unwrap().to_vec_f64().unwrap())
        {
            *acc += g;
        }
    }
    close("grad_weight", &gw.to_vec_f64().unwrap(), &gw_sum, 1e-3);
}

/// A convolution case: `(kernel, stride, ci, co, [h, w], padding, bias)`.
type ConvCase = (usize, usize, usize, usize, [usize; 2], ConvPadding, bool);

/// f32 `conv2d` and its gradients on a fast path (switched on and off by `set_path`) and
/// with it switched off, both against the f64 im2col path, for the `cases`: non-contiguous
/// input, odd sizes, bias and no bias. Errors are measured against the sum of the absolute
/// values of each result's terms (the same convolution of `|x|`, `|w|`, `|g|`), the scale f32
/// rounding error grows with; the fast path must stay within `tol` of it. With
/// `rounds_differently`, the two f32 runs must differ in some result (the fast path really
/// ran).
fn f32_path_matches_f64(
    cases: &[ConvCase],
    set_path: fn(bool),
    tol: f64,
    rounds_differently: bool,
) {
    // The switches are process-wide and the tests run in parallel: one at a time here, or
    // one test's "off" run would turn another's fast path off too.
    static SWITCHES: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = SWITCHES.lock().unwrap_or_else(|e| e.into_inner());
    let f64s = |t: &Tensor| t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
    let err = |got: &Tensor, want: &Tensor, terms: &Tensor| -> f64 {
        let (g, w, t) = (f64s(got), f64s(want), f64s(terms));
        assert_eq!(g.len(), w.len());
        let scale = t.iter().fold(1e-30f64, |m, v| m.max(v.abs()));
        let diff = g.iter().zip(&w).map(|(a, b)| (a - b).abs());
        diff.fold(0.0, f64::max) / scale
    };
    // The output and gradients of `sum(conv2d(x, w, b) * g)`, with g = det or |det|.
    let run = |x: &Tensor, w: &Tensor, b: Option<&Tensor>, s: usize, pad, abs_g: bool| {
        // Fresh leaves each run, so gradients do not accumulate across runs.
        let leaf = |t: &Tensor| t.detach().requires_grad_(true).unwrap();
        let (x, w, b) = (leaf(x), leaf(w), b.map(leaf));
        let y = x.conv2d(&w, b.as_ref(), [s, s], pad, [1, 1], 1).unwrap();
        let mut g = det(y.shape(), 0.37).to_dtype(y.dtype()).unwrap();
        if abs_g {
            g = g.abs().unwrap();
        }
        y.mul(&g).unwrap().sum_all().unwrap().backward().unwrap();
        let mut out = vec![y, x.grad().unwrap(), w.grad().unwrap()];
        out.extend(b.map(|b| b.grad().unwrap()));
        out
    };
    for &(k, s, ci, co, [h, w], pad, bias) in cases {
        // (N, H, W, C) permuted to (N, C, H, W): a non-contiguous input.
        let x = det(&[3, h, w, ci], 0.71).permute(&[0, 3, 1, 2]).unwrap();
        let wt = det(&[co, ci, k, k], 0.53).mul_scalar(0.2).unwrap();
        let b = bias.then(|| det(&[co], 0.9));
        let want = run(&x, &wt, b.as_ref(), s, pad, false);
        let abs = |t: &Tensor| t.abs().unwrap();
        let terms = run(
            &abs(&x),
            &abs(&wt),
            b.as_ref().map(abs).as_ref(),
            s,
            pad,
            true,
        );
        let f32s = |t: &Tensor| t.to_dtype(DType::F32).unwrap().detach();
        let (x32, w32, b32) = (f32s(&x), f32s(&wt), b.as_ref().map(f32s));
        let fast = run(&x32, &w32, b32.as_ref(), s, pad, false);
        set_path(false);
        let other = run(&x32, &w32, b32.as_ref(), s, pad, false);
        set_path(true);
        for (i, name) in ["output", "grad input", "grad weight", "grad bias"]
            .iter()
            .enumerate()
            .take(want.len())
        {
            let e_fast = err(&fast[i], &want[i], &terms[i]);
            // Switched off: im2col, or the direct path's plain sum.
            let e_other = err(&other[i], &want[i], &terms[i]);
            assert!(e_fast < tol, "k={k} {name}: fast path error {e_fast:e}");
            assert!(
                e_other < 1e-6,
                "k={k} {name}: error {e_other:e} with it off"
            );
        }
        if rounds_differently {
            assert!(
                fast.iter().zip(&other).any(|(a, b)| f64s(a) != f64s(b)),
                "k={k}: the fast path did not run"
            );
        }
    }
}

/// The Winograd path: 3x3 and 5x5, stride 1, enough channels (`Ci*Co >= 40*(Ci+Co)` for
/// 3x3 where the direct path is the alternative), outputs of at least 12x12.
#[test]
fn conv2d_f32_winograd_matches_f64() {
    let cases = [
        (3, 1, 96, 80, [13, 12], ConvPadding::Same, true),
        (5, 1, 64, 48, [14, 15], ConvPadding::Explicit(2, 1), false),
        (3, 1, 90, 100, [14, 15], ConvPadding::Valid, true),
    ];
    f32_path_matches_f64(&cases, tinytorch::ops::set_winograd_convolution, 4e-6, true);
}

/// Whether the CPU has AVX-512F, which the direct paths need.
fn has_avx512f() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The direct AVX-512 path, on convolutions that Winograd does not take: strided, "valid"
/// (input gradient on col2im), more than one 64-channel panel, channel counts that are not
/// multiples of 16. Skipped where the CPU has no AVX-512F.
#[test]
fn conv2d_f32_direct_matches_f64() {
    if !has_avx512f() {
        eprintln!("skipped: the CPU has no AVX-512F");
        return;
    }
    let cases = [
        (3, 1, 16, 16, [9, 10], ConvPadding::Same, false),
        (3, 2, 20, 70, [9, 8], ConvPadding::Explicit(1, 1), true),
        (7, 1, 9, 33, [12, 12], ConvPadding::Valid, true),
        (1, 1, 40, 24, [5, 6], ConvPadding::Valid, false),
    ];
    // Both paths sum the kernel entries in the same order, often to the same bits.
    f32_path_matches_f64(&cases, tinytorch::ops::set_direct_convolution, 1e-6, false);
}

/// The direct path with output positions in the vector lanes (stride 1, up to 32 output
/// channels, enough work to leave im2col): 16 -> 16 channels with its input gradient, and
/// 3 -> 16 channels (27 kernel entries: the weight gradient on im2col). Skipped where the CPU
/// has no AVX-512F.
#[test]
fn conv2d_f32_lanes_matches_f64() {
    if !has_avx512f() {
        eprintln!("skipped: the CPU has no AVX-512F");
        return;
    }
    let cases = [
        (3, 1, 16, 16, [40, 41], ConvPadding::Same, true),
        (3, 1, 3, 16, [100, 70], ConvPadding::Explicit(1, 1), false),
    ];
    f32_path_matches_f64(&cases, tinytorch::ops::set_direct_convolution, 1e-6, true);
}
