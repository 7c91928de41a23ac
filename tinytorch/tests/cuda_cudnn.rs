//! Convolutions through cuDNN (backend/cuda/cudnn/) against the CPU as the oracle: the
//! output and the gradients of input, weight and bias of `conv2d` on `cuda:0`, in f32 (with
//! and without TF32), f16, bf16 and f64, over groups (depthwise too), stride, dilation,
//! padding, non-square kernels and 1x1 kernels, with the heuristic and with `benchmark`,
//! and under `deterministic`; a check that cuDNN (not im2col) ran them, that switching it
//! off runs im2col, and `conv1d` (a height-1 `conv2d`). Without a GPU each test prints
//! that it was skipped; with a GPU but no loadable cuDNN, `cudnn_loads_on_a_gpu_machine`
//! fails with the loader's reason.
//!
//! The tests change the process-wide cuDNN flags, so each holds the binary's GPU turn.
#![cfg(feature = "cuda")]

mod common;

use std::sync::MutexGuard;
use tinytorch::backend::cuda::{self, cudnn};
use tinytorch::ops::ConvPadding;
use tinytorch::{DType, Device, Generator, Tensor};

const GPU: Device = Device::Cuda(0);

/// The turn of a test that needs cuDNN on a GPU (`None`, after printing why, without).
fn cudnn_turn() -> Option<MutexGuard<'static, ()>> {
    let turn = common::gpu_turn(cuda::is_available(), "")?;
    if let Err(e) = cudnn::check() {
        println!("skipped: cuDNN does not load: {e}");
        return None;
    }
    Some(turn)
}

#[test]
fn cudnn_loads_on_a_gpu_machine() {
    let Some(_turn) = common::gpu_turn(cuda::is_available(), "") else {
        return;
    };
    // run.sh puts PyTorch's nvidia/cudnn/lib on LD_LIBRARY_PATH: cuDNN 9 must load there.
    cudnn::check().expect("cuDNN 9 on a GPU machine");
    let v = cudnn::version().unwrap();
    assert!((90000..100000).contains(&v), "cuDNN version {v}");
    println!("cuDNN {v}");
}

/// One convolution's settings.
#[derive(Clone, Copy, Debug)]
struct Case {
    /// Input `(N, Ci, H, W)`.
    x: [usize; 4],
    /// Output channels.
    co: usize,
    /// Kernel `(kh, kw)`.
    k: [usize; 2],
    stride: [usize; 2],
    pad: [usize; 2],
    dilation: [usize; 2],
    groups: usize,
    bias: bool,
}

const fn case(x: [usize; 4], co: usize, k: usize, groups: usize) -> Case {
    Case {
        x,
        co,
        k: [k, k],
        stride: [1, 1],
        pad: [k / 2, k / 2],
        dilation: [1, 1],
        groups,
        bias: true,
    }
}

/// The shapes every dtype runs: plain 3x3, strided, dilated, grouped, depthwise,
/// non-square kernel with uneven padding and stride, 1x1 without bias, no padding.
fn cases() -> Vec<Case> {
    let mut v = vec![case([2, 8, 12, 12], 16, 3, 1)];
    v.push(Case {
        stride: [2, 2],
        ..case([2, 8, 13, 11], 8, 3, 1)
    });
    v.push(Case {
        dilation: [2, 3],
        pad: [2, 3],
        ..case([1, 4, 14, 15], 6, 3, 1)
    });
    v.push(case([2, 8, 10, 10], 12, 3, 4));
    v.push(case([2, 16, 9, 9], 16, 3, 16));
    v.push(Case {
        k: [3, 5],
        pad: [1, 0],
        stride: [1, 2],
        ..case([2, 6, 11, 17], 4, 3, 2)
    });
    v.push(Case {
        bias: false,
        ..case([4, 32, 7, 7], 24, 1, 1)
    });
    v.push(Case {
        pad: [0, 0],
        ..case([3, 5, 8, 6], 7, 3, 1)
    });
    v
}

/// Output, then the gradients of x, w (and b) of `c` on `device` in `dt`, for the
/// output gradient `g`, each as f64 on the host.
fn run(
    c: &Case,
    x: &Tensor,
    w: &Tensor,
    b: &Tensor,
    g: &Tensor,
    dt: DType,
    device: Device,
) -> Vec<Tensor> {
    let leaf = |t: &Tensor| {
        t.to_dtype(dt)
            .unwrap()
            .to_device(device)
            .unwrap()
            .detach()
            .requires_grad_(true)
            .unwrap()
    };
    let (x, w, b) = (leaf(x), leaf(w), leaf(b));
    let y = x
        .conv2d(
            &w,
            c.bias.then_some(&b),
            c.stride,
            ConvPadding::Explicit(c.pad[0], c.pad[1]),
            c.dilation,
            c.groups,
        )
        .unwrap();
    let g = g.to_dtype(dt).unwrap().to_device(device).unwrap();
    y.backward_with(Some(&g), false).unwrap();
    let mut out = vec![y, x.grad().unwrap(), w.grad().unwrap()];
    if c.bias {
        out.push(b.grad().unwrap());
    }
    out.iter()
        .map(|t| t.cpu().unwrap().to_dtype(DType::F64).unwrap())
        .collect()
}

/// Largest |gpu - cpu| over the largest |cpu| (at least 1).
fn rel_diff(a: &Tensor, b: &Tensor) -> f64 {
    let (a, b) = (a.to_vec_f64().unwrap(), b.to_vec_f64().unwrap());
    let scale = b.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    a.iter()
        .zip(&b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
        / scale
}

/// Every case in `dt` on the GPU against the CPU in f64 on the same (rounded) values, to
/// `tol`; asserts that cuDNN chose algorithms for them (the cache grew) rather than the
/// im2col path running.
fn check_all(dt: DType, tol: f64) {
    let mut gen = Generator::new(7);
    for c in cases() {
        let [n, ci, h, wd] = c.x;
        let span = |d: usize| c.dilation[d] * (c.k[d] - 1) + 1;
        let out = |d: usize, size: usize| (size + 2 * c.pad[d] - span(d)) / c.stride[d] + 1;
        let randn = |shape: &[usize], gen: &mut Generator| {
            // Rounded to `dt` first, so both sides convolve the same numbers.
            Tensor::randn_with(shape, DType::F64, Device::Cpu, gen)
                .unwrap()
                .to_dtype(dt)
                .unwrap()
                .to_dtype(DType::F64)
                .unwrap()
        };
        let x = randn(&c.x, &mut gen);
        let w = randn(&[c.co, ci / c.groups, c.k[0], c.k[1]], &mut gen);
        let b = randn(&[c.co], &mut gen);
        let g = randn(&[n, c.co, out(0, h), out(1, wd)], &mut gen);
        let before = cudnn::cached_choices();
        let want = run(&c, &x, &w, &b, &g, DType::F64, Device::Cpu);
        let got = run(&c, &x, &w, &b, &g, dt, GPU);
        let names = ["output", "grad_input", "grad_weight", "grad_bias"];
        for ((name, got), want) in names.iter().zip(&got).zip(&want) {
            let d = rel_diff(got, want);
            assert!(
                d <= tol,
                "{dt} {c:?}: {name} differs by {d} (tolerance {tol})"
            );
        }
        // Three passes of a problem no other test of this binary meets (each test runs its
        // own dtype and flags): three new choices, unless the im2col path ran.
        assert!(
            cudnn::cached_choices() >= before + 3,
            "{dt} {c:?}: cuDNN chose no algorithm for some pass: the im2col path ran"
        );
    }
}

#[test]
fn f32_without_tf32_matches_the_cpu() {
    let Some(_turn) = cudnn_turn() else { return };
    cudnn::set_allow_tf32(false);
    check_all(DType::F32, 1e-5);
    cudnn::set_allow_tf32(true);
}

#[test]
fn f32_with_tf32_matches_the_cpu_to_tf32s_precision() {
    let Some(_turn) = cudnn_turn() else { return };
    assert!(
        cudnn::allow_tf32(),
        "TF32 is on by default for convolutions"
    );
    // TF32 keeps 10 mantissa bits of each factor: about 1e-3 relative per product.
    check_all(DType::F32, 1e-2);
}

#[test]
fn f16_matches_the_cpu() {
    let Some(_turn) = cudnn_turn() else { return };
    check_all(DType::F16, 5e-3);
}

#[test]
fn bf16_matches_the_cpu() {
    let Some(_turn) = cudnn_turn() else { return };
    check_all(DType::BF16, 3e-2);
}

#[test]
fn f64_matches_the_cpu() {
    let Some(_turn) = cudnn_turn() else { return };
    check_all(DType::F64, 1e-10);
}

#[test]
fn benchmark_and_deterministic_choose_their_own_algorithms() {
    let Some(_turn) = cudnn_turn() else { return };
    cudnn::set_benchmark(true);
    check_all(DType::F32, 1e-2);
    cudnn::set_deterministic(true);
    check_all(DType::F16, 5e-3);
    // Deterministic algorithms give the same bits twice.
    let mut gen = Generator::new(3);
    let x = Tensor::randn_with(&[4, 16, 20, 20], DType::F32, GPU, &mut gen).unwrap();
    let w0 = Tensor::randn_with(&[16, 16, 3, 3], DType::F32, GPU, &mut gen).unwrap();
    let grad_w = || {
        let w = w0.detach().requires_grad_(true).unwrap();
        let y = x
            .conv2d(&w, None, [1, 1], ConvPadding::Explicit(1, 1), [1, 1], 1)
            .unwrap();
        y.sum_all().unwrap().backward().unwrap();
        w.grad().unwrap().to_vec_f64().unwrap()
    };
    assert_eq!(grad_w(), grad_w());
    cudnn::set_deterministic(false);
    cudnn::set_benchmark(false);
}

#[test]
fn switched_off_the_im2col_path_runs_and_agrees() {
    let Some(_turn) = cudnn_turn() else { return };
    let mut gen = Generator::new(5);
    let x = Tensor::randn_with(&[2, 3, 9, 9], DType::F32, GPU, &mut gen).unwrap();
    let w = Tensor::randn_with(&[5, 3, 3, 3], DType::F32, GPU, &mut gen).unwrap();
    let conv = || {
        x.conv2d(&w, None, [2, 2], ConvPadding::Explicit(1, 1), [1, 1], 1)
            .unwrap()
            .to_vec_f64()
            .unwrap()
    };
    cudnn::set_allow_tf32(false);
    let with = conv();
    cudnn::set_enabled(false);
    let before = cudnn::cached_choices();
    let without = conv();
    assert_eq!(
        cudnn::cached_choices(),
        before,
        "cuDNN ran while switched off"
    );
    cudnn::set_enabled(true);
    cudnn::set_allow_tf32(true);
    let d = common::max_diff_slices(&with, &without);
    assert!(d < 1e-4, "cuDNN and im2col differ by {d}");
}

#[test]
fn conv1d_and_padding_same_run_on_the_gpu() {
    let Some(_turn) = cudnn_turn() else { return };
    let mut gen = Generator::new(9);
    let x = Tensor::randn_with(&[2, 4, 30], DType::F64, Device::Cpu, &mut gen).unwrap();
    let w = Tensor::randn_with(&[6, 4, 4], DType::F64, Device::Cpu, &mut gen).unwrap();
    // padding="same" with an even kernel pads one more after than before: cuDNN's
    // symmetric padding cannot say that, so the im2col path takes it; stride 2 goes to cuDNN.
    for (padding, stride) in [(ConvPadding::Same, 1), (ConvPadding::Explicit(0, 2), 2)] {
        let y = |d: Device| {
            x.to_device(d)
                .unwrap()
                .conv1d(&w.to_device(d).unwrap(), None, stride, padding, 1, 1)
                .unwrap()
                .cpu()
                .unwrap()
        };
        let d = rel_diff(&y(GPU), &y(Device::Cpu));
        assert!(d < 1e-10, "{padding:?}: {d}");
    }
}
