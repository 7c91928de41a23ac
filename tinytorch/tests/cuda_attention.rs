//! The CUDA flash-attention kernels (backend/cuda/attention.rs) against the fused CPU kernel
//! as the oracle: output and the gradients of query, key and value, with no mask, the causal
//! rule, boolean and additive masks, dropout (one seed drops the same weights on both
//! devices), lengths that are not a multiple of the tile, one-token problems, odd and wide
//! head dims, broadcast and strided operands, and every float dtype. Without a GPU each test
//! prints that it was skipped.
#![cfg(feature = "cuda")]

mod common;
use common::rel_diff_with;

use std::sync::{Mutex, MutexGuard};
use tinytorch::backend::cuda;
use tinytorch::{manual_seed, DType, Device, Tensor};

const GPU: Device = Device::Cuda(0);
const OP: &str = "scaled_dot_product_attention";

fn gpu() -> bool {
    let ok = cuda::is_available();
    if !ok {
        println!("skipped: no CUDA device");
    }
    ok
}

/// The default generator is shared by the test threads; the dropout seed is drawn from it,
/// so each test holds this lock from its `manual_seed` to its last draw.
static RNG: Mutex<()> = Mutex::new(());

fn rng_lock() -> MutexGuard<'static, ()> {
    RNG.lock().unwrap_or_else(|e| e.into_inner())
}

fn randn(shape: &[usize], dt: DType) -> Tensor {
    Tensor::randn(shape, DType::F64, Device::Cpu)
        .unwrap()
        .to_dtype(dt)
        .unwrap()
}

/// One attention problem: CPU tensors (any dtype, any layout) and the call's arguments.
struct Case {
    name: &'static str,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Option<Tensor>,
    dropout: f64,
    causal: bool,
    /// Read the operands as `(B, H, L, E)` views of `(B, L, H, E)` buffers (the heads of a
    /// projection), transposed on the device.
    split_heads: bool,
}

impl Case {
    fn new(name: &'static str, q: &[usize], k: &[usize], v: &[usize], dt: DType) -> Case {
        Case {
            name,
            q: randn(q, dt),
            k: randn(k, dt),
            v: randn(v, dt),
            mask: None,
            dropout: 0.0,
            causal: false,
            split_heads: false,
        }
    }
}

/// The operands as the call sees them (see `Case::split_heads`).
fn view(c: &Case, t: &Tensor) -> Tensor {
    if c.split_heads {
        t.transpose(1, 2).unwrap()
    } else {
        t.clone()
    }
}

/// Output and the three input gradients on `device`, from the same upstream gradient `g`;
/// `seed` fixes the dropout mask.
fn run(c: &Case, g: &Tensor, device: Device, seed: u64) -> Vec<Tensor> {
    let to = |t: &Tensor| t.to_device(device).unwrap();
    let leaf = |t: &Tensor| to(t).detach().requires_grad_(true).unwrap();
    let (q, k, v) = (leaf(&c.q), leaf(&c.k), leaf(&c.v));
    let mask = c.mask.as_ref().map(to);
    manual_seed(seed);
    let out = view(c, &q)
        .scaled_dot_product_attention(
            &view(c, &k),
            &view(c, &v),
            mask.as_ref(),
            c.dropout,
            c.causal,
            None,
        )
        .unwrap();
    if device != Device::Cpu {
        // The fused kernel ran (the composite path's last op is a matmul).
        assert_eq!(
            out.grad_fn_name(),
            Some(OP),
            "{}: composite path taken",
            c.name
        );
    }
    out.backward_with(Some(&to(g)), false).unwrap();
    [out, q.grad().unwrap(), k.grad().unwrap(), v.grad().unwrap()]
        .iter()
        .map(|t| t.cpu().unwrap().to_dtype(DType::F64).unwrap())
        .collect()
}

/// Largest |a - b| relative to the largest |b| (at least 1); NaN against NaN counts as
/// equal, NaN against a number as infinitely far.
fn rel_diff(a: &Tensor, b: &Tensor) -> f64 {
    rel_diff_with(a, b, |x, y| {
        if x.is_nan() != y.is_nan() {
            f64::INFINITY
        } else if x.is_nan() {
            0.0
        } else {
            (x - y).abs()
        }
    })
}

/// The CUDA kernels agree with the CPU kernel on `c` to `tol`.
fn check(c: &Case, tol: f64) {
    let _rng = rng_lock();
    manual_seed(11);
    // The output's shape (batch dims broadcast), for the upstream gradient.
    let probe = view(c, &c.q)
        .scaled_dot_product_attention(
            &view(c, &c.k),
            &view(c, &c.v),
            c.mask.as_ref(),
            0.0,
            c.causal,
            None,
        )
        .unwrap();
    let g = randn(probe.shape(), c.q.dtype());
    let want = run(c, &g, Device::Cpu, 77);
    let got = run(c, &g, GPU, 77);
    for (name, (a, b)) in ["out", "dq", "dk", "dv"].iter().zip(got.iter().zip(&want)) {
        assert_eq!(a.shape(), b.shape(), "{}: {name} shape", c.name);
        let d = rel_diff(a, b);
        assert!(
            d <= tol,
            "{}: {name} differs by {d:e} (tolerance {tol:e})",
            c.name
        );
    }
}

const F32_TOL: f64 = 2e-5;

#[test]
fn no_mask_with_lengths_off_the_tile() {
    if !gpu() {
        return;
    }
    // Head dim 64 runs 32-row tiles: 37 queries and 45 keys leave partial tiles.
    check(
        &Case::new(
            "no mask",
            &[2, 3, 37, 64],
            &[2, 3, 45, 64],
            &[2, 3, 45, 64],
            DType::F32,
        ),
        F32_TOL,
    );
    // Several key tiles per query tile, and values narrower than keys.
    check(
        &Case::new(
            "long",
            &[1, 2, 100, 64],
            &[1, 2, 257, 64],
            &[1, 2, 257, 32],
            DType::F32,
        ),
        F32_TOL,
    );
}

#[test]
fn causal_with_square_and_rectangular_scores() {
    if !gpu() {
        return;
    }
    for (name, l, s) in [
        ("causal square", 70, 70),
        ("causal more keys", 20, 50),
        ("causal more queries", 50, 20),
    ] {
        let mut c = Case::new(
            name,
            &[2, 2, l, 64],
            &[2, 2, s, 64],
            &[2, 2, s, 64],
            DType::F32,
        );
        c.causal = true;
        check(&c, F32_TOL);
    }
}

#[test]
fn boolean_masks_broadcast_with_fully_masked_rows() {
    if !gpu() {
        return;
    }
    let (l, s) = (33, 41);
    // (L, S), broadcast over batch and heads; row 3 sees no key (zeros, as in PyTorch).
    let mut keep = Tensor::rand(&[l, s], DType::F32, Device::Cpu)
        .unwrap()
        .gt_scalar(0.3)
        .unwrap();
    let mut rows = keep.to_vec_f64().unwrap();
    rows[3 * s..4 * s].iter_mut().for_each(|x| *x = 0.0);
    keep = Tensor::from_vec(rows, &[l, s])
        .unwrap()
        .gt_scalar(0.5)
        .unwrap();
    let mut c = Case::new(
        "bool (L, S)",
        &[2, 3, l, 16],
        &[2, 3, s, 16],
        &[2, 3, s, 16],
        DType::F32,
    );
    c.mask = Some(keep);
    check(&c, F32_TOL);
    // (B, 1, L, S): one mask per batch entry, shared by the heads.
    let mut c = Case::new(
        "bool (B, 1, L, S)",
        &[2, 3, l, 16],
        &[2, 3, s, 16],
        &[2, 3, s, 16],
        DType::F32,
    );
    c.mask = Some(
        Tensor::rand(&[2, 1, l, s], DType::F32, Device::Cpu)
            .unwrap()
            .gt_scalar(0.5)
            .unwrap(),
    );
    check(&c, F32_TOL);
}

#[test]
fn additive_mask_with_infinities() {
    if !gpu() {
        return;
    }
    let (l, s) = (29, 29);
    let bias = randn(&[2, 2, l, s], DType::F32);
    let drop = Tensor::rand(&[2, 2, l, s], DType::F32, Device::Cpu)
        .unwrap()
        .lt_scalar(0.2)
        .unwrap();
    let mask = bias.masked_fill(&drop, f64::NEG_INFINITY).unwrap();
    let mut c = Case::new(
        "additive",
        &[2, 2, l, 32],
        &[2, 2, s, 32],
        &[2, 2, s, 32],
        DType::F32,
    );
    c.mask = Some(mask);
    check(&c, F32_TOL);
}

#[test]
fn dropout_draws_the_cpu_kernels_mask() {
    if !gpu() {
        return;
    }
    let mut c = Case::new(
        "dropout",
        &[2, 2, 40, 32],
        &[2, 2, 50, 32],
        &[2, 2, 50, 32],
        DType::F32,
    );
    c.dropout = 0.3;
    check(&c, F32_TOL);
    c.name = "dropout + causal";
    c.causal = true;
    check(&c, F32_TOL);
}

#[test]
fn single_tokens() {
    if !gpu() {
        return;
    }
    check(
        &Case::new("L = S = 1", &[3, 1, 8], &[3, 1, 8], &[3, 1, 8], DType::F32),
        F32_TOL,
    );
    // One query over a cache of keys (decoding), causal: the query sees only key 0.
    let mut c = Case::new(
        "L = 1",
        &[2, 4, 1, 64],
        &[2, 4, 100, 64],
        &[2, 4, 100, 64],
        DType::F32,
    );
    check(&c, F32_TOL);
    c.causal = true;
    c.name = "L = 1 causal";
    check(&c, F32_TOL);
}

#[test]
fn odd_and_wide_head_dims() {
    if !gpu() {
        return;
    }
    check(
        &Case::new(
            "E 13, Ev 7",
            &[2, 19, 13],
            &[2, 23, 13],
            &[2, 23, 7],
            DType::F32,
        ),
        F32_TOL,
    );
    // 128 features: 16-row tiles in f32.
    let mut c = Case::new(
        "E 128",
        &[1, 2, 50, 128],
        &[1, 2, 50, 128],
        &[1, 2, 50, 128],
        DType::F32,
    );
    c.causal = true;
    check(&c, F32_TOL);
    // 200 features: past FlashAttention's usual limit, smaller tiles.
    check(
        &Case::new(
            "E 200",
            &[1, 1, 20, 200],
            &[1, 1, 30, 200],
            &[1, 1, 30, 200],
            DType::F32,
        ),
        F32_TOL,
    );
}

#[test]
fn broadcast_and_strided_operands() {
    if !gpu() {
        return;
    }
    // Keys and values shared by the heads (B, 1, S, E): their gradients sum over heads.
    check(
        &Case::new(
            "broadcast kv",
            &[2, 4, 21, 16],
            &[2, 1, 27, 16],
            &[2, 1, 27, 16],
            DType::F32,
        ),
        F32_TOL,
    );
    // Heads split out of (B, L, H, E) by a transpose: strided views read in place.
    let mut c = Case::new(
        "strided",
        &[2, 30, 3, 16],
        &[2, 35, 3, 16],
        &[2, 35, 3, 16],
        DType::F32,
    );
    c.split_heads = true;
    check(&c, F32_TOL);
}

#[test]
fn every_float_dtype() {
    if !gpu() {
        return;
    }
    // f64 agrees to rounding; the half types compute in f32 on both devices and round once.
    for (dt, tol) in [(DType::F64, 1e-12), (DType::F16, 2e-2), (DType::BF16, 5e-2)] {
        let mut c = Case::new(
            "dtype",
            &[2, 2, 37, 32],
            &[2, 2, 45, 32],
            &[2, 2, 45, 32],
            dt,
        );
        c.causal = true;
        check(&c, tol);
        // An additive mask of the query's dtype.
        let mut c = Case::new(
            "dtype + mask",
            &[1, 2, 20, 16],
            &[1, 2, 20, 16],
            &[1, 2, 20, 16],
            dt,
        );
        c.mask = Some(randn(&[20, 20], dt));
        check(&c, tol);
    }
}

#[test]
fn no_grad_forward_and_a_mask_needing_a_gradient() {
    if !gpu() {
        return;
    }
    let _rng = rng_lock();
    manual_seed(5);
    let q = randn(&[1, 2, 10, 8], DType::F32);
    let k = randn(&[1, 2, 12, 8], DType::F32);
    let v = randn(&[1, 2, 12, 8], DType::F32);
    let cpu = q
        .scaled_dot_product_attention(&k, &v, None, 0.0, false, None)
        .unwrap();
    let (qg, kg, vg) = (
        q.to_device(GPU).unwrap(),
        k.to_device(GPU).unwrap(),
        v.to_device(GPU).unwrap(),
    );
    let out = qg
        .scaled_dot_product_attention(&kg, &vg, None, 0.0, false, None)
        .unwrap();
    assert!(rel_diff(&out.cpu().unwrap(), &cpu) < F32_TOL);
    // A float mask that needs a gradient takes the composite path on CUDA, which gives it.
    let mask = Tensor::zeros(&[10, 12], DType::F32, GPU)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let out = qg
        .scaled_dot_product_attention(&kg, &vg, Some(&mask), 0.0, false, None)
        .unwrap();
    out.sum_all().unwrap().backward().unwrap();
    assert_eq!(mask.grad().unwrap().shape(), &[10, 12]);
}
