//! The CUDA LayerNorm / RMSNorm kernels (backend/cuda/norm.rs) against the fused CPU kernel
//! as the oracle: output and the gradients of input, weight and bias, with and without the
//! affine parameters, over one or several trailing dims, short and long rows, more rows
//! than one launch has blocks (and than one chunk of the weight-gradient sums), and f32,
//! f64 and f16 inputs. Without a GPU each test prints that it was skipped.
#![cfg(feature = "cuda")]

mod common;
use common::rel_diff_with;

use tinytorch::backend::cuda;
use tinytorch::nn::functional::{layer_norm, rms_norm};
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
