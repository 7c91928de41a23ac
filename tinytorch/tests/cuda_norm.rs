//! The CUDA LayerNorm / RMSNorm kernels (backend/cuda/norm.rs) against the fused CPU kernel
//! as the oracle: output and the gradients of input, weight and bias, with and without the
//! affine parameters, over one or several trailing dims, short and long rows, more rows
//! than one launch has blocks (and than one chunk of the weight-gradient sums), and f32,
//! f64 and f16 inputs. Then the CUDA batch norm kernels (backend/cuda/batch_norm.rs) against
//! the CPU's: training (output, the gradients of input, weight, bias and residual, the
//! running statistics) with and without the fused ReLU or residual + ReLU, evaluation, 1x1
//! spatial dims, N = 1, (N, C) and (N, C, L) inputs, thousands of channels, 2^20 elements a
//! channel, unaligned inputs, f32, f64, f16 and bf16. Without a GPU each test prints that it
//! was skipped.
#![cfg(feature = "cuda")]

mod common;
use common::rel_diff_with;

use tinytorch::backend::cuda;
use tinytorch::nn::functional::{
    batch_norm, batch_norm_add_relu, batch_norm_relu, layer_norm, rms_norm,
};
use tinytorch::{DType, Device, Generator, Tensor};

fn gpu() -> bool {
    let ok = cuda::is_available();
    if !ok {
        println!("skipped: no CUDA device");
    }
    ok
}

/// Normal values from a generator of its own (the tests run on parallel threads).
fn randn(gen: &mut Generator, shape: &[usize], dt: DType) -> Tensor {
    Tensor::randn_with(shape, DType::F64, Device::Cpu, gen)
        .unwrap()
        .to_dtype(dt)
        .unwrap()
}

/// Largest |a - b| relative to the largest |b| (at least 1).
fn rel_diff(a: &Tensor, b: &Tensor) -> f64 {
    rel_diff_with(a, b, |x, y| (x - y).abs())
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Layer,
    Rms,
}

/// Output, then the gradients of x, weight and bias (those that exist), on `device`.
fn run(
    kind: Kind,
    x: &Tensor,
    shape: &[usize],
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    g: &Tensor,
    device: Device,
) -> Vec<Tensor> {
    let leaf = |t: &Tensor| {
        t.to_device(device)
            .unwrap()
            .detach()
            .requires_grad_(true)
            .unwrap()
    };
    let (x, w, b) = (leaf(x), w.map(leaf), b.map(leaf));
    let y = match kind {
        Kind::Layer => layer_norm(&x, shape, w.as_ref(), b.as_ref(), 1e-5),
        Kind::Rms => rms_norm(&x, shape, w.as_ref(), Some(1e-6)),
    }
    .unwrap();
    y.backward_with(Some(&g.to_device(device).unwrap()), false)
        .unwrap();
    let mut out = vec![y, x.grad().unwrap()];
    out.extend(w.map(|w| w.grad().unwrap()));
    out.extend(b.map(|b| b.grad().unwrap()));
    out.iter()
        .map(|t| t.cpu().unwrap().to_dtype(DType::F64).unwrap())
        .collect()
}

/// CUDA and CPU agree to `tol` on `x` of `x_shape` normalised over its trailing `norm_dims`.
fn check(
    kind: Kind,
    x_shape: &[usize],
    norm_dims: usize,
    affine: (bool, bool),
    dt: DType,
    tol: f64,
) {
    let mut gen = Generator::new(x_shape.iter().product::<usize>() as u64);
    let shape = &x_shape[x_shape.len() - norm_dims..];
    // Shifted rows: LayerNorm's mean matters.
    let x = randn(&mut gen, x_shape, dt).add_scalar(0.5).unwrap();
    let w = affine.0.then(|| randn(&mut gen, shape, dt));
    let b = affine.1.then(|| randn(&mut gen, shape, dt));
    let g = randn(&mut gen, x_shape, dt);
    let want = run(kind, &x, shape, w.as_ref(), b.as_ref(), &g, Device::Cpu);
    let got = run(kind, &x, shape, w.as_ref(), b.as_ref(), &g, Device::Cuda(0));
    let names = ["out", "dx", "dweight", "dbias"];
    let names: Vec<&str> = names[..2]
        .iter()
        .chain(affine.0.then_some(&names[2]))
        .chain(affine.1.then_some(&names[3]))
        .copied()
        .collect();
    for (name, (a, b)) in names.iter().zip(got.iter().zip(&want)) {
        assert_eq!(
            a.shape(),
            b.shape(),
            "{kind:?} {x_shape:?} {dt}: {name} shape"
        );
        let d = rel_diff(a, b);
        assert!(
            d <= tol,
            "{kind:?} {x_shape:?} over {norm_dims} dims, {dt}: {name} differs by {d:e} \
             (tolerance {tol:e})"
        );
    }
}

#[test]
fn layer_norm_matches_the_cpu_kernel() {
    if !gpu() {
        return;
    }
    for affine in [(true, true), (true, false), (false, true), (false, false)] {
        check(Kind::Layer, &[4, 7, 33], 1, affine, DType::F32, 1e-5);
    }
    // Over two trailing dims; one long row per block (n > the block's 256 threads).
    check(Kind::Layer, &[3, 5, 40], 2, (true, true), DType::F32, 1e-5);
    check(Kind::Layer, &[6, 4096], 1, (true, true), DType::F32, 1e-5);
}

#[test]
fn rms_norm_matches_the_cpu_kernel() {
    if !gpu() {
        return;
    }
    check(Kind::Rms, &[4, 7, 33], 1, (true, false), DType::F32, 1e-5);
    check(Kind::Rms, &[5, 300], 1, (false, false), DType::F32, 1e-5);
    check(
        Kind::Rms,
        &[2, 3, 4, 50],
        2,
        (true, false),
        DType::F32,
        1e-5,
    );
}

#[test]
fn many_rows_and_other_dtypes() {
    if !gpu() {
        return;
    }
    // 70,000 rows: more than the 65,535 blocks of one launch, and the weight gradients
    // summed over many chunks of rows. Long sums in f32: a looser tolerance.
    check(Kind::Layer, &[70_000, 8], 1, (true, true), DType::F32, 1e-4);
    check(Kind::Rms, &[70_000, 8], 1, (true, false), DType::F32, 1e-4);
    check(Kind::Layer, &[9, 65], 1, (true, true), DType::F64, 1e-12);
    check(Kind::Rms, &[9, 65], 1, (true, false), DType::F64, 1e-12);
    // Half inputs compute in f32 on both devices and round once.
    check(Kind::Layer, &[9, 65], 1, (true, true), DType::F16, 1e-2);
    check(Kind::Rms, &[9, 65], 1, (true, false), DType::BF16, 5e-2);
}

/// What follows a batch norm.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Then {
    Nothing,
    Relu,
    AddRelu,
}

/// A batch norm problem: input, upstream gradient, residual, affine parameters and running
/// statistics, on the host.
struct BnCase {
    x: Tensor,
    g: Tensor,
    r: Tensor,
    w: Option<Tensor>,
    b: Option<Tensor>,
    rm: Tensor,
    rv: Tensor,
}

/// Values far from 0 on average (the mean matters), parameters in f32 (f64 for f64 data).
/// With `unaligned`, `x` starts one element into its buffer (the kernels' scalar path).
fn bn_case(shape: &[usize], dt: DType, affine: bool, unaligned: bool) -> BnCase {
    let mut gen = Generator::new(shape.iter().product::<usize>() as u64 + 7);
    let c = shape[1];
    let pdt = if dt == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let len: usize = shape.iter().product();
    let x = match unaligned {
        true => randn(&mut gen, &[len + 1], dt)
            .narrow(0, 1, len)
            .unwrap()
            .reshape(shape)
            .unwrap(),
        false => randn(&mut gen, shape, dt),
    };
    let x = x.mul_scalar(2.0).unwrap().add_scalar(3.0).unwrap();
    let g = randn(&mut gen, shape, dt);
    let r = randn(&mut gen, shape, dt);
    let w = affine.then(|| randn(&mut gen, &[c], pdt));
    let b = affine.then(|| randn(&mut gen, &[c], pdt));
    let rm = randn(&mut gen, &[c], pdt);
    let rv = randn(&mut gen, &[c], pdt)
        .abs()
        .unwrap()
        .add_scalar(0.5)
        .unwrap();
    BnCase {
        x,
        g,
        r,
        w,
        b,
        rm,
        rv,
    }
}

/// Output; in training with `grad`, the gradients of x, weight, bias and residual (those
/// that exist); then the running mean and variance after the call. On `device`.
fn run_bn(case: &BnCase, training: bool, grad: bool, then: Then, device: Device) -> Vec<Tensor> {
    let leaf = |t: &Tensor| {
        let t = t.to_device(device).unwrap().detach();
        if grad {
            t.requires_grad_(true).unwrap()
        } else {
            t
        }
    };
    let (x, w, b) = (
        leaf(&case.x),
        case.w.as_ref().map(leaf),
        case.b.as_ref().map(leaf),
    );
    let r = leaf(&case.r);
    let rm = case
        .rm
        .to_device(device)
        .unwrap()
        .contiguous_copy()
        .unwrap();
    let rv = case
        .rv
        .to_device(device)
        .unwrap()
        .contiguous_copy()
        .unwrap();
    let (w_, b_) = (w.as_ref(), b.as_ref());
    let (m, eps) = (0.1, 1e-5);
    let y = match then {
        Then::Nothing => batch_norm(&x, Some(&rm), Some(&rv), w_, b_, training, m, eps),
        Then::Relu => batch_norm_relu(&x, Some(&rm), Some(&rv), w_, b_, training, m, eps),
        Then::AddRelu => {
            batch_norm_add_relu(&x, &r, Some(&rm), Some(&rv), w_, b_, training, m, eps)
        }
    }
    .unwrap();
    let mut out = vec![y.clone()];
    if grad {
        y.backward_with(Some(&case.g.to_device(device).unwrap()), false)
            .unwrap();
        out.push(x.grad().unwrap());
        out.extend(w.map(|w| w.grad().unwrap()));
        out.extend(b.map(|b| b.grad().unwrap()));
        if then == Then::AddRelu {
            out.push(r.grad().unwrap());
        }
    }
    out.push(rm);
    out.push(rv);
    out.iter()
        .map(|t| t.cpu().unwrap().to_dtype(DType::F64).unwrap())
        .collect()
}

/// The largest difference relative to the largest |want| (at least 1); NaN where one side
/// has a NaN the other has not.
fn bn_diff(got: &Tensor, want: &Tensor) -> f64 {
    let (a, b) = (got.to_vec_f64().unwrap(), want.to_vec_f64().unwrap());
    assert_eq!(a.len(), b.len());
    if a.iter().zip(&b).any(|(x, y)| x.is_nan() != y.is_nan()) {
        return f64::NAN;
    }
    rel_diff(got, want)
}

/// CUDA and CPU agree to `tol` on batch norm of `case` (training with gradients, or
/// evaluation without, the fused kernels' paths).
fn check_bn(shape: &[usize], dt: DType, then: Then, training: bool, tol: f64) {
    check_bn_case(shape, dt, then, training, true, false, tol)
}

fn check_bn_case(
    shape: &[usize],
    dt: DType,
    then: Then,
    training: bool,
    affine: bool,
    unaligned: bool,
    tol: f64,
) {
    let case = bn_case(shape, dt, affine, unaligned);
    let want = run_bn(&case, training, training, then, Device::Cpu);
    let got = run_bn(&case, training, training, then, Device::Cuda(0));
    let mut names = vec!["out"];
    if training {
        names.push("dx");
        if affine {
            names.extend(["dweight", "dbias"]);
        }
        if then == Then::AddRelu {
            names.push("dresidual");
        }
    }
    names.extend(["running_mean", "running_var"]);
    assert_eq!(got.len(), names.len());
    for (name, (a, b)) in names.iter().zip(got.iter().zip(&want)) {
        assert_eq!(
            a.shape(),
            b.shape(),
            "{shape:?} {dt} {then:?}: {name} shape"
        );
        let d = bn_diff(a, b);
        assert!(
            d <= tol,
            "batch norm {shape:?} {dt} {then:?} training {training} affine {affine} \
             unaligned {unaligned}: {name} differs by {d:e} (tolerance {tol:e})"
        );
    }
}

#[test]
fn batch_norm_training_matches_the_cpu_kernel() {
    if !gpu() {
        return;
    }
    // S = 25 (scalar rows), 64 (vectors), 1x1 spatial, N = 1, (N, C) with many channels,
    // (N, C, L), many channels with small planes. With a fused ReLU a pre-activation within
    // an ulp of 0 could take the other side on the two devices (FMA on the GPU), moving dx
    // there by O(1): at most about 20,000 elements, where that is unlikely.
    for shape in [
        &[4, 3, 5, 5][..],
        &[8, 16, 8, 8],
        &[2, 8, 1, 1],
        &[1, 4, 7, 7],
        &[16, 512],
        &[5, 6, 11],
        &[2, 1024, 3, 3],
    ] {
        for then in [Then::Nothing, Then::Relu, Then::AddRelu] {
            check_bn(shape, DType::F32, then, true, 1e-5);
        }
    }
    check_bn(&[64, 2048], DType::F32, Then::Nothing, true, 1e-5);
    // (N, C) inputs take the thread-per-channel passes: rows shared out among many parts
    // (few channels, many rows), a channel count that is not a multiple of a block, f64.
    check_bn(&[70_000, 8], DType::F32, Then::Nothing, true, 1e-4);
    check_bn(&[300, 300], DType::F32, Then::AddRelu, true, 1e-5);
    check_bn(&[33, 5], DType::F64, Then::Nothing, true, 1e-12);
    // Without affine parameters; an input that starts off 16-byte alignment.
    check_bn_case(
        &[8, 16, 8, 8],
        DType::F32,
        Then::Nothing,
        true,
        false,
        false,
        1e-5,
    );
    check_bn_case(
        &[8, 16, 8, 8],
        DType::F32,
        Then::Relu,
        true,
        true,
        true,
        1e-5,
    );
    check_bn(&[4, 3, 5, 5], DType::F64, Then::Nothing, true, 1e-12);
    check_bn(&[4, 3, 5, 5], DType::F64, Then::Relu, true, 1e-12);
}

#[test]
fn batch_norm_half_types_and_evaluation_match_the_cpu() {
    if !gpu() {
        return;
    }
    // Half inputs compute in f32 on both devices and round once.
    for then in [Then::Nothing, Then::Relu, Then::AddRelu] {
        check_bn(&[8, 16, 8, 8], DType::F16, then, true, 1e-2);
        check_bn(&[8, 16, 8, 8], DType::BF16, then, true, 3e-2);
        check_bn(&[4, 3, 5, 5], DType::BF16, then, true, 3e-2);
        check_bn(&[500, 48], DType::BF16, then, true, 3e-2);
    }
    // Evaluation from the running statistics (no gradient: the evaluation kernel).
    for shape in [
        &[4, 3, 5, 5][..],
        &[8, 16, 8, 8],
        &[64, 2048],
        &[2, 8, 1, 1],
    ] {
        for then in [Then::Nothing, Then::Relu, Then::AddRelu] {
            check_bn(shape, DType::F32, then, false, 1e-5);
        }
    }
    check_bn(&[8, 16, 8, 8], DType::F16, Then::Relu, false, 1e-2);
    check_bn(&[8, 16, 8, 8], DType::BF16, Then::AddRelu, false, 3e-2);
    check_bn(&[4, 3, 5, 5], DType::F64, Then::Nothing, false, 1e-12);
    check_bn_case(
        &[8, 16, 8, 8],
        DType::F32,
        Then::Nothing,
        false,
        false,
        true,
        1e-5,
    );
}

#[test]
fn batch_norm_large_channels_and_an_empty_batch() {
    if !gpu() {
        return;
    }
    // 2^20 elements a channel (many blocks a channel), vectorised and scalar rows; the ReLU's
    // mask could differ from the CPU's where a pre-activation rounds across 0, so without.
    check_bn(&[4, 2, 512, 512], DType::F32, Then::Nothing, true, 1e-4);
    check_bn(&[3, 2, 701, 499], DType::F32, Then::Nothing, true, 1e-4);
    check_bn(&[4, 2, 512, 512], DType::BF16, Then::Nothing, true, 3e-2);
    // The same bits on every run: the partial sums merge in a fixed order.
    let case = bn_case(&[4, 2, 512, 512], DType::F32, true, false);
    let first = run_bn(&case, true, true, Then::Nothing, Device::Cuda(0));
    let again = run_bn(&case, true, true, Then::Nothing, Device::Cuda(0));
    for (a, b) in first.iter().zip(&again) {
        assert_eq!(a.to_vec_f64().unwrap(), b.to_vec_f64().unwrap());
    }
    // An empty batch: an empty output, zero parameter gradients, the running statistics kept.
    let case = bn_case(&[0, 3, 4, 4], DType::F32, true, false);
    let got = run_bn(&case, true, true, Then::Nothing, Device::Cuda(0));
    let want = run_bn(&case, true, true, Then::Nothing, Device::Cpu);
    assert_eq!(got[0].shape(), &[0, 3, 4, 4]);
    for (a, b) in got.iter().zip(&want) {
        assert_eq!(a.shape(), b.shape());
        assert_eq!(a.to_vec_f64().unwrap(), b.to_vec_f64().unwrap());
    }
    assert_eq!(got[2].to_vec_f64().unwrap(), [0.0; 3], "dweight");
}
