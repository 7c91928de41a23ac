//! scaled_dot_product_attention beyond the op table's PyTorch cases (tests/op_table.rs):
//! the fused CPU kernel against the composite path on long sequences, dropout, fully
//! masked rows and argument errors.

mod common;

use common::{max_diff, max_scaled_diff, poison_cached_buffer};
use std::sync::{Mutex, MutexGuard};
use tinytorch::autograd::gradcheck::gradcheck;
use tinytorch::{manual_seed, DType, Device, Tensor};

/// The default generator is shared by the whole process and the tests run on parallel
/// threads: every test here holds this lock, so that a draw of one test cannot land between
/// another's `manual_seed` and the draw that seed is for (which made the dropout gradcheck
/// flaky).
static RNG: Mutex<()> = Mutex::new(());

fn rng_lock() -> MutexGuard<'static, ()> {
    RNG.lock().unwrap_or_else(|e| e.into_inner())
}

fn randn(shape: &[usize], dt: DType) -> Tensor {
    Tensor::randn(shape, dt, Device::Cpu).unwrap()
}

/// Output and input gradients; a zero float mask that needs a gradient forces the composite
/// (tensor-op) path, an absent mask the fused kernel.
fn run(q: &Tensor, k: &Tensor, v: &Tensor, causal: bool, composite: bool) -> Vec<Tensor> {
    let (q, k, v) = (
        q.detach().requires_grad_(true).unwrap(),
        k.detach().requires_grad_(true).unwrap(),
        v.detach().requires_grad_(true).unwrap(),
    );
    let (l, s) = (q.shape()[q.ndim() - 2], k.shape()[k.ndim() - 2]);
    let mask = composite.then(|| {
        let mut m = Tensor::zeros(&[l, s], q.dtype(), Device::Cpu).unwrap();
        if causal {
            let allowed = Tensor::ones(&[l, s], DType::Bool, Device::Cpu)
                .unwrap()
                .tril(0)
                .unwrap();
            m = m
                .masked_fill(&allowed.logical_not().unwrap(), f64::NEG_INFINITY)
                .unwrap();
        }
        m.requires_grad_(true).unwrap()
    });
    let causal_flag = causal && !composite;
    let out = q
        .scaled_dot_product_attention(&k, &v, mask.as_ref(), 0.0, causal_flag, None)
        .unwrap();
    let g = randn(out.shape(), out.dtype());
    out.backward_with(Some(&g), false).unwrap();
    vec![out, q.grad().unwrap(), k.grad().unwrap(), v.grad().unwrap()]
}

#[test]
fn fused_kernel_matches_the_composite_path_on_long_sequences() {
    let _rng = rng_lock();
    manual_seed(1);
    // Several key blocks (two backward passes), and one key block under several query
    // blocks (one pass); in f64, and in f32 (whose inner loops run in f32 lanes).
    let cases = [(300, 333, DType::F64, 1e-10), (150, 100, DType::F64, 1e-10)];
    let cases = cases
        .into_iter()
        .chain([(150, 100, DType::F32, 2e-5), (200, 260, DType::F32, 2e-5)]);
    for (l, s, dt, tol) in cases {
        for (causal, heads_in_rows) in [(false, false), (true, false), (true, true)] {
            // Heads in rows: `(B, L, H, E)` memory seen as `(B, H, L, E)`, as a QKV
            // projection's heads are; the output comes back laid out so (and the gradients,
            // which the leaves' `.grad` store contiguous).
            let operand = |n: usize, f: usize| match heads_in_rows {
                false => randn(&[2, 2, n, f], dt),
                true => randn(&[2, n, 2, f], dt).transpose(1, 2).unwrap(),
            };
            let (q, k, v) = (operand(l, 16), operand(s, 16), operand(s, 8));
            manual_seed(5);
            let fused = run(&q, &k, &v, causal, false);
            manual_seed(5);
            let reference = run(&q, &k, &v, causal, true);
            for (name, (a, b)) in ["out", "dq", "dk", "dv"]
                .iter()
                .zip(fused.iter().zip(&reference))
            {
                let diff = max_diff(a, b);
                let case = format!(
                    "{name} ({l}x{s} {dt}, causal {causal}, heads in rows {heads_in_rows})"
                );
                assert!(diff < tol, "{case}: {diff}");
                if *name == "out" {
                    let layout = a.transpose(1, 2).unwrap().is_contiguous();
                    assert_eq!(layout, heads_in_rows, "{case}");
                }
            }
        }
    }
}

/// Output and input gradients of the fused kernel for the upstream gradient `g`.
fn fused_grads(
    [q, k, v]: [&Tensor; 3],
    mask: Option<&Tensor>,
    dropout: f64,
    causal: bool,
    g: &Tensor,
) -> Vec<Tensor> {
    let leaf = |t: &Tensor| t.detach().requires_grad_(true).unwrap();
    let (q, k, v) = (leaf(q), leaf(k), leaf(v));
    manual_seed(9); // the dropout mask's seed
    let out = q
        .scaled_dot_product_attention(&k, &v, mask, dropout, causal, None)
        .unwrap();
    out.backward_with(Some(g), false).unwrap();
    vec![out, q.grad().unwrap(), k.grad().unwrap(), v.grad().unwrap()]
}

#[test]
fn half_operands_round_the_f32_kernels_results_once() {
    // bf16/f16 operands run the f32 kernel on their exact f32 values a batch element at a
    // time, and round each result once: the output bit for bit the f32 path's rounded, in both
    // layouts, with a mask, under dropout (the same mask for one seed), and across blocks.
    let _rng = rng_lock();
    manual_seed(11);
    for dt in [DType::BF16, DType::F16] {
        for (l, s, heads_in_rows, causal, masked, dropout) in [
            (9, 11, false, false, false, 0.0),
            (64, 64, true, true, false, 0.0),
            (150, 200, true, true, false, 0.0),
            (70, 140, false, false, true, 0.0),
            (33, 40, true, false, false, 0.25),
        ] {
            let operand = |n: usize, f: usize| {
                let t = match heads_in_rows {
                    false => randn(&[3, 2, n, f], DType::F32),
                    true => randn(&[3, n, 2, f], DType::F32).transpose(1, 2).unwrap(),
                };
                t.to_dtype(dt).unwrap()
            };
            let (q, k, v) = (operand(l, 16), operand(s, 16), operand(s, 8));
            let mask = masked.then(|| randn(&[l, s], DType::F32).gt_scalar(-1.0).unwrap());
            let g = randn(&[3, 2, l, 8], DType::F32).to_dtype(dt).unwrap();
            let half = fused_grads([&q, &k, &v], mask.as_ref(), dropout, causal, &g);
            let up = |t: &Tensor| t.to_dtype(DType::F32).unwrap();
            let wide = fused_grads(
                [&up(&q), &up(&k), &up(&v)],
                mask.as_ref(),
                dropout,
                causal,
                &up(&g),
            );
            let case = format!(
                "{dt}, {l}x{s}, heads in rows {heads_in_rows}, causal {causal}, mask {masked}, \
                 dropout {dropout}"
            );
            for (name, (a, b)) in ["out", "dq", "dk", "dv"].iter().zip(half.iter().zip(&wide)) {
                assert_eq!(a.dtype(), dt, "{name}");
                let rounded = b.to_dtype(dt).unwrap();
                if *name == "out" {
                    let (a, b) = (a.to_vec_f64().unwrap(), rounded.to_vec_f64().unwrap());
                    assert_eq!(a, b, "out ({case})");
                } else {
                    // The backward's row term D = sum(dO * O) reads the rounded output.
                    let ulp = if dt == DType::BF16 {
                        2f64.powi(-8)
                    } else {
                        2f64.powi(-11)
                    };
                    let diff = max_scaled_diff(a, &rounded);
                    assert!(diff <= 4.0 * ulp, "{name} ({case}): {diff}");
                }
            }
            if heads_in_rows {
                assert!(
                    half[0].transpose(1, 2).unwrap().is_contiguous(),
                    "{dt} layout"
                );
            }
        }
    }
}

#[test]
fn buffers_left_unzeroed_are_wholly_written() {
    // The output and, with one key block, dQ skip the memset: cached NaN buffers of their
    // sizes must come back overwritten (in both layouts, causal or not).
    let _rng = rng_lock();
    manual_seed(3);
    for (heads_in_rows, causal) in [(false, false), (true, true)] {
        let operand = |n: usize, f: usize| match heads_in_rows {
            false => randn(&[2, 4, n, f], DType::F32),
            true => randn(&[2, n, 4, f], DType::F32).transpose(1, 2).unwrap(),
        };
        // Sizes past the cache's smallest buffer (128 KiB).
        let (q, k, v) = (operand(520, 16), operand(90, 16), operand(90, 8));
        for len in [2 * 4 * 520 * 8, 2 * 4 * 520 * 16] {
            poison_cached_buffer(DType::F32, len);
        }
        manual_seed(5);
        let fused = run(&q, &k, &v, causal, false);
        manual_seed(5);
        let reference = run(&q, &k, &v, causal, true);
        for (a, b) in fused.iter().zip(&reference) {
            let diff = max_diff(a, b);
            assert!(
                diff < 2e-5,
                "heads in rows {heads_in_rows}: {diff} {:?}",
                a.shape()
            );
        }
    }
}

#[test]
fn dropout_is_deterministic_per_seed_and_gradchecks() {
    let _rng = rng_lock();
    let q = randn(&[1, 2, 9, 4], DType::F64);
    let k = randn(&[1, 2, 11, 4], DType::F64);
    let v = randn(&[1, 2, 11, 3], DType::F64);
    let f = |xs: &[Tensor]| {
        // The same seed each call: the same dropout mask, so the function is smooth.
        manual_seed(42);
        xs[0].scaled_dot_product_attention(&xs[1], &xs[2], None, 0.3, false, None)
    };
    let a = f(&[q.clone(), k.clone(), v.clone()]).unwrap();
    let b = f(&[q.clone(), k.clone(), v.clone()]).unwrap();
    assert_eq!(a.to_vec_f64().unwrap(), b.to_vec_f64().unwrap());
    let plain = q
        .scaled_dot_product_attention(&k, &v, None, 0.0, false, None)
        .unwrap();
    assert!(max_diff(&a, &plain) > 1e-3, "dropout changed nothing");
    gradcheck(f, &[q, k, v], 1e-6, 1e-7, 1e-5).unwrap();
}

#[test]
fn dropout_keeps_the_expected_value() {
    let _rng = rng_lock();
    manual_seed(3);
    let q = Tensor::zeros(&[1, 1, 64, 4], DType::F64, Device::Cpu).unwrap();
    let k = Tensor::zeros(&[1, 1, 512, 4], DType::F64, Device::Cpu).unwrap();
    let v = Tensor::ones(&[1, 1, 512, 1], DType::F64, Device::Cpu).unwrap();
    // Uniform weights 1/512 on values of 1: the mean output stays 1 under dropout.
    let out = q
        .scaled_dot_product_attention(&k, &v, None, 0.5, false, None)
        .unwrap();
    let mean = out.mean_all().unwrap().item_f64().unwrap();
    assert!((mean - 1.0).abs() < 0.02, "mean {mean}");
}

#[test]
fn a_query_with_no_visible_key_gets_zeros() {
    let _rng = rng_lock();
    let q = randn(&[1, 3, 4], DType::F32);
    let k = randn(&[1, 5, 4], DType::F32);
    let v = randn(&[1, 5, 2], DType::F32);
    let mut allowed = vec![true; 15];
    allowed[5..10].fill(false); // query 1 sees nothing
    let mask = Tensor::from_vec(allowed, &[3, 5]).unwrap();
    let out = q
        .scaled_dot_product_attention(&k, &v, Some(&mask), 0.0, false, None)
        .unwrap();
    let o = out.to_vec_f64().unwrap();
    assert_eq!(&o[2..4], &[0.0, 0.0]);
    assert!(o.iter().all(|x| x.is_finite()));
}

#[test]
fn bad_arguments_are_clear_errors() {
    let _rng = rng_lock();
    let q = randn(&[2, 3, 4], DType::F32);
    let k = randn(&[2, 5, 4], DType::F32);
    let v = randn(&[2, 5, 2], DType::F32);
    let err = |r: tinytorch::Result<Tensor>| r.unwrap_err().to_string();
    let mask = Tensor::ones(&[3, 5], DType::Bool, Device::Cpu).unwrap();
    assert!(
        err(q.scaled_dot_product_attention(&k, &v, Some(&mask), 0.0, true, None))
            .contains("is_causal")
    );
    assert!(
        err(q.scaled_dot_product_attention(&k, &v, None, 1.0, false, None)).contains("dropout_p")
    );
    let k3 = randn(&[2, 5, 3], DType::F32);
    assert!(
        err(q.scaled_dot_product_attention(&k3, &v, None, 0.0, false, None)).contains("[2, 5, 3]")
    );
    let k64 = randn(&[2, 5, 4], DType::F64);
    assert!(
        err(q.scaled_dot_product_attention(&k64, &v, None, 0.0, false, None)).contains("dtype")
    );
    let bad_mask = Tensor::ones(&[4, 5], DType::Bool, Device::Cpu).unwrap();
    assert!(
        err(q.scaled_dot_product_attention(&k, &v, Some(&bad_mask), 0.0, false, None))
            .contains("attn_mask")
    );
    let int_mask = Tensor::ones(&[3, 5], DType::I64, Device::Cpu).unwrap();
    assert!(
        err(q.scaled_dot_product_attention(&k, &v, Some(&int_mask), 0.0, false, None))
            .contains("attn_mask")
    );
}
