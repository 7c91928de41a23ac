//! Loss functions against values computed with PyTorch 2.x (torch.nn.functional, f64,
//! hard-coded below; the distillation loss from fixtures/distill.json), f64 gradient checks, extreme logits and error cases.
#![allow(clippy::approx_constant)] // PyTorch reference values such as ln 2 are hard-coded as printed.

mod common;
use common::{
    assert_close_slices, assert_close_to, assert_values, gradcheck64, load_json_fixture, t64, Tol,
};

use tinytorch::autograd::gradcheck::gradcheck;
use tinytorch::nn::functional::{
    binary_cross_entropy, binary_cross_entropy_with_logits, cross_entropy, distillation_loss,
    huber_loss, kl_div, l1_loss, mse_loss, nll_loss, smooth_l1_loss,
};
use tinytorch::nn::{CrossEntropyLoss, KlDivReduction, MSELoss, Reduction};
use tinytorch::{DType, Device, Tensor};

fn idx(v: &[i64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn logits() -> Tensor {
    t64(
        &[
            1.5, -2.0, 3.0, 0.5, 4.0, -1.0, 0.25, 2.0, 0.1, 0.2, -0.3, 1.0,
        ],
        &[3, 4],
    )
}

fn class_w() -> Tensor {
    t64(&[0.5, 1.0, 2.0, 1.5], &[4])
}

/// Softmax of [[0,1,2,3],[1,1,0,0],[3,2,1,0]] along dim 1 (probability targets).
fn prob_targets() -> Tensor {
    t64(
        &[0.0, 1.0, 2.0, 3.0, 1.0, 1.0, 0.0, 0.0, 3.0, 2.0, 1.0, 0.0],
        &[3, 4],
    )
    .softmax(1)
    .unwrap()
}

const N: i64 = -100;

/// The tolerance of the hard-coded PyTorch values below: `1e-7 * (1 + |want|)`.
const PT: Tol = Tol::scaled(1e-7);

#[test]
fn cross_entropy_reductions_match_pytorch() {
    let (x, t) = (logits(), idx(&[2, 0, 3], &[3]));
    let ce = |r| cross_entropy(&x, &t, None, N, r, 0.0);
    assert_values!(PT;
        ce(Reduction::None) => [0.27151695, 0.15322823, 0.75538481],
        ce(Reduction::Mean) => [0.39337667],
        ce(Reduction::Sum) => [1.18013],
    );
    assert_eq!(ce(Reduction::Mean).unwrap().shape(), &[] as &[usize]);
    let w = class_w();
    assert_values!(PT;
        cross_entropy(&x, &t, Some(&w), N, Reduction::Mean, 0.0) => [0.43818131],
        cross_entropy(&x, &t, None, N, Reduction::Mean, 0.1) => [0.58296],
        // The module form uses the same defaults.
        CrossEntropyLoss::new().forward(&x, &t) => [0.39337667],
    );
    // Unbatched (C,) input with a 0-d target.
    let x0 = x.select(0, 0).unwrap();
    let t0 = idx(&[2], &[]);
    assert_values!(PT;
        cross_entropy(&x0, &t0, None, N, Reduction::Mean, 0.0) => [0.27151695],
    );
}

#[test]
fn cross_entropy_ignore_index_weights_and_smoothing_with_gradient() {
    let x = logits().requires_grad_(true).unwrap();
    let t = idx(&[2, N, 3], &[3]);
    let w = class_w();
    assert_values!(PT;
        cross_entropy(&x, &t, None, N, Reduction::Mean, 0.0) => [0.51345088],
        cross_entropy(&x, &t, Some(&w), N, Reduction::None, 0.2) => [0.97730635, 0.0, 1.28780798],
    );
    let loss = cross_entropy(&x, &t, Some(&w), N, Reduction::Mean, 0.2).unwrap();
    assert_close_to(&loss, &[0.64717552], PT, "loss");
    loss.backward().unwrap();
    // d loss / d x from PyTorch.
    #[rustfmt::skip]
    let want = [
        0.08275382, -0.01157107, -0.08282532, 0.01164257,
        0.0, 0.0, 0.0, 0.0,
        0.07199339, 0.07317337, 0.02447519, -0.16964195,
    ];
    assert_close_to(&x.grad().unwrap(), &want, Tol::scaled(1e-6), "x.grad()");
    gradcheck64(
        |xs| cross_entropy(&xs[0], &t, Some(&w), N, Reduction::Mean, 0.2),
        &[logits()],
    );
    gradcheck64(
        |xs| cross_entropy(&xs[0], &t, None, N, Reduction::None, 0.0),
        &[logits()],
    );
}

#[test]
fn cross_entropy_probability_targets() {
    let x = logits().requires_grad_(true).unwrap();
    let p = prob_targets();
    let w = class_w();
    assert_values!(PT;
        cross_entropy(&x, &p, None, N, Reduction::Mean, 0.0) => [2.25229829],
        cross_entropy(&x, &p, Some(&w), N, Reduction::None, 0.1) =>
            [3.23544855, 3.46280108, 1.35703888],
    );
    let loss = cross_entropy(&x, &p, Some(&w), N, Reduction::Mean, 0.1).unwrap();
    loss.backward().unwrap();
    #[rustfmt::skip]
    let want = [
        0.07682896, -0.03188556, 0.22575234, -0.27069574,
        0.2390065, -0.11598419, -0.09034074, -0.03268156,
        -0.04802665, -0.02112566, -0.03360919, 0.1027615,
    ];
    assert_close_to(&x.grad().unwrap(), &want, Tol::scaled(1e-6), "x.grad()");
    gradcheck64(
        |xs| cross_entropy(&xs[0], &p, Some(&w), N, Reduction::Sum, 0.1),
        &[logits()],
    );
}

#[test]
fn cross_entropy_spatial_input() {
    // x3 = sin(arange(24)).reshape(2, 3, 4): (N, C, L).
    let v: Vec<f64> = (0..24).map(|i| (i as f64).sin()).collect();
    let x = t64(&v, &[2, 3, 4]);
    let t = idx(&[0, 1, 2, 1, 2, N, 0, 1], &[2, 4]);
    assert_values!(PT;
        cross_entropy(&x, &t, None, N, Reduction::Mean, 0.0) => [1.17928779],
    );
    let none = cross_entropy(&x, &t, None, N, Reduction::None, 0.0).unwrap();
    assert_eq!(none.shape(), &[2, 4]);
    assert_close_to(
        &none,
        &[
            1.42519582, 2.39712184, 1.8840655, 0.5809286, 0.42893556, 0.0, 0.43393554, 1.10483167,
        ],
        PT,
        "none",
    );
    gradcheck64(
        |xs| cross_entropy(&xs[0], &t, None, N, Reduction::Mean, 0.1),
        std::slice::from_ref(&x),
    );
    // A non-contiguous input gives the same loss.
    let xt = t64(&v, &[2, 4, 3]).transpose(1, 2).unwrap();
    let a = cross_entropy(&xt, &t, None, N, Reduction::Sum, 0.0).unwrap();
    let b = cross_entropy(&xt.contiguous().unwrap(), &t, None, N, Reduction::Sum, 0.0).unwrap();
    assert_close_to(&a, &b.to_vec_f64().unwrap(), Tol::scaled(1e-12), "a");
}

#[test]
fn cross_entropy_many_classes_with_extreme_logits_stays_finite() {
    let v: Vec<f32> = (0..4000)
        .map(|i| {
            if i % 7 == 0 {
                1000.0
            } else {
                -1000.0 + (i % 13) as f32
            }
        })
        .collect();
    let x = Tensor::from_vec(v, &[4, 1000])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let t = idx(&[0, 5, 999, 500], &[4]);
    let loss = cross_entropy(&x, &t, None, N, Reduction::Mean, 0.1).unwrap();
    assert!(loss.item_f64().unwrap().is_finite());
    loss.backward().unwrap();
    assert!(x
        .grad()
        .unwrap()
        .to_vec_f64()
        .unwrap()
        .iter()
        .all(|g| g.is_finite()));
}

#[test]
fn cross_entropy_errors() {
    let x = logits();
    let err = |t: &Tensor| {
        cross_entropy(&x, t, None, N, Reduction::Mean, 0.0)
            .unwrap_err()
            .to_string()
    };
    let msg = err(&idx(&[2, 4, 0], &[3]));
    assert!(
        msg.contains("cross_entropy") && msg.contains("target 4 is out of bounds"),
        "{msg}"
    );
    let msg = err(&idx(&[2, -1, 0], &[3]));
    assert!(msg.contains("target -1"), "{msg}");
    let msg = err(&idx(&[2, 0], &[2]));
    assert!(msg.contains("[2]") && msg.contains("[3, 4]"), "{msg}");
    let msg = err(&t64(&[0.5; 6], &[3, 2]));
    assert!(msg.contains("[3, 2]") && msg.contains("[3, 4]"), "{msg}");
    let msg = cross_entropy(
        &x,
        &idx(&[0, 1, 2], &[3]),
        Some(&t64(&[1.0; 3], &[3])),
        N,
        Reduction::Mean,
        0.0,
    )
    .unwrap_err()
    .to_string();
    assert!(msg.contains("weight"), "{msg}");
    assert!(cross_entropy(&x, &idx(&[0, 1, 2], &[3]), None, N, Reduction::Mean, 1.5).is_err());
    let xi = Tensor::zeros(&[3, 4], DType::I64, Device::Cpu).unwrap();
    assert!(cross_entropy(&xi, &idx(&[0, 1, 2], &[3]), None, N, Reduction::Mean, 0.0).is_err());
}

#[test]
fn nll_loss_matches_pytorch() {
    let lp = logits().log_softmax(1).unwrap();
    let w = class_w();
    let t = idx(&[2, N, 3], &[3]);
    assert_values!(PT;
        nll_loss(&lp, &t, Some(&w), N, Reduction::Mean) => [0.47888889],
        nll_loss(&lp, &t, Some(&w), N, Reduction::None) => [0.54303389, 0.0, 1.13307722],
        nll_loss(&lp, &idx(&[2, 0, 3], &[3]), None, N, Reduction::Sum) => [1.18013],
    );
    gradcheck64(
        |xs| nll_loss(&xs[0], &t, Some(&w), N, Reduction::Mean),
        std::slice::from_ref(&lp),
    );
    assert!(nll_loss(&lp, &idx(&[7, 0, 0], &[3]), None, N, Reduction::Mean).is_err());
}

fn ab() -> (Tensor, Tensor) {
    (
        t64(&[0.5, -1.0, 2.0, 3.5, 0.2, -0.7], &[6]),
        t64(&[1.0, -1.2, 0.0, 1.0, 0.1, 0.5], &[6]),
    )
}

#[test]
fn regression_losses_match_pytorch() {
    let (a, b) = ab();
    assert_values!(PT;
        mse_loss(&a, &b, Reduction::Mean) => [1.99833333],
        MSELoss::new().forward(&a, &b) => [1.99833333],
        l1_loss(&a, &b, Reduction::Sum) => [6.5],
        smooth_l1_loss(&a, &b, Reduction::None, 0.5) => [0.25, 0.04, 1.75, 2.25, 0.01, 0.95],
        smooth_l1_loss(&a, &b, Reduction::Mean, 1.0) => [0.725],
        huber_loss(&a, &b, Reduction::None, 0.5) => [0.125, 0.02, 0.875, 1.125, 0.005, 0.475],
        huber_loss(&a, &b, Reduction::Mean, 1.5) => [0.895],
    );
    let a2 = a.reshape(&[2, 3]).unwrap().t().unwrap();
    let b2 = b.reshape(&[2, 3]).unwrap().t().unwrap();
    gradcheck64(
        |xs| {
            let m = mse_loss(&xs[0], &xs[1], Reduction::Mean)?;
            let h = huber_loss(&xs[0], &xs[1], Reduction::Sum, 0.5)?;
            let s = smooth_l1_loss(&xs[0], &xs[1], Reduction::Sum, 0.5)?;
            let l = l1_loss(&xs[0], &xs[1], Reduction::None)?;
            m.add(&h)?.add(&s)?.add(&l)
        },
        &[a2.contiguous().unwrap(), b2.contiguous().unwrap()],
    );
    assert!(mse_loss(&a, &t64(&[1.0; 4], &[4]), Reduction::Mean).is_err());
    assert!(huber_loss(&a, &b, Reduction::Mean, 0.0).is_err());
    assert!(smooth_l1_loss(&a, &b, Reduction::Mean, -1.0).is_err());
}

#[test]
fn binary_cross_entropy_matches_pytorch() {
    let p = t64(&[0.1, 0.9, 0.5, 0.0, 1.0, 0.3], &[6]);
    let t = t64(&[0.0, 1.0, 1.0, 1.0, 0.0, 0.5], &[6]);
    let w = t64(&[1.0, 2.0, 1.0, 0.5, 1.0, 3.0], &[6]);
    // log clamped at -100: p = 0 with t = 1 costs exactly 100.
    assert_values!(PT;
        binary_cross_entropy(&p, &t, None, Reduction::None) =>
            [0.10536052, 0.10536052, 0.69314718, 100.0, 100.0, 0.78032387],
        binary_cross_entropy(&p, &t, Some(&w), Reduction::Mean) => [25.55836672],
    );
    let pi = t64(&[0.1, 0.9, 0.5, 0.3], &[4]);
    let ti = t64(&[0.0, 1.0, 0.2, 0.5], &[4]);
    gradcheck64(
        |xs| binary_cross_entropy(&xs[0], &ti, None, Reduction::Mean),
        &[pi],
    );
    let msg = binary_cross_entropy(
        &t64(&[1.5], &[1]),
        &t64(&[1.0], &[1]),
        None,
        Reduction::Mean,
    )
    .unwrap_err()
    .to_string();
    assert!(msg.contains("between 0 and 1"), "{msg}");
    assert!(binary_cross_entropy(&p, &t64(&[1.0; 3], &[3]), None, Reduction::Mean).is_err());
}

#[test]
fn binary_cross_entropy_with_logits_matches_pytorch() {
    let x = t64(&[0.5, -3.0, 20.0, -50.0, 1.0, 0.0], &[2, 3]);
    let t = t64(&[1.0, 0.0, 1.0, 1.0, 0.5, 0.0], &[2, 3]);
    let pw = t64(&[2.0, 0.5, 1.0], &[3]);
    assert_values!(PT;
        binary_cross_entropy_with_logits(&x, &t, None, Reduction::None, None) =>
            [0.47407698, 0.04858735, 0.0, 50.0, 0.81326169, 0.69314718],
        binary_cross_entropy_with_logits(&x, &t, None, Reduction::Sum, Some(&pw)) => [102.42483477],
    );
    let xs0 = t64(&[0.5, -3.0, 2.0, -5.0, 1.0, 0.3], &[2, 3]);
    let w = t64(&[1.0, 2.0, 0.5], &[3]);
    gradcheck64(
        |xs| binary_cross_entropy_with_logits(&xs[0], &t, Some(&w), Reduction::Mean, Some(&pw)),
        &[xs0],
    );
}

#[test]
fn kl_div_matches_pytorch() {
    let input = t64(&[0.1, 0.5, 0.4, 1.0, 2.0, 3.0], &[2, 3])
        .log_softmax(1)
        .unwrap();
    let t = t64(&[0.2, 0.0, 0.8, 0.3, 0.3, 0.4], &[2, 3]);
    let lt = t.clamp_min(1e-3).unwrap().log().unwrap();
    assert_values!(PT;
        kl_div(&input, &t, KlDivReduction::None, false) =>
            [-0.05270545, 0.0, 0.65821371, 0.36108995, 0.06108995, -0.20347391],
        kl_div(&input, &t, KlDivReduction::BatchMean, false) => [0.41210712],
        kl_div(&input, &t, KlDivReduction::Mean, false) => [0.13736904],
        kl_div(&input, &lt, KlDivReduction::Sum, true) => [0.8182524],
    );
    gradcheck64(
        |xs| kl_div(&xs[0], &t, KlDivReduction::BatchMean, false),
        std::slice::from_ref(&input),
    );
}

// ---- the fused CPU cross-entropy against the composite path -------------------------------

/// The composite path's cross entropy for class-index targets `t` (one per sample of `x`):
/// the same loss with the equivalent probability targets (one-hot rows), which always take
/// the composite path, with ignored samples masked out (their all-zero row would otherwise
/// still carry the smoothing's `eps / C`), and `Mean` divided by the kept samples' weight.
fn composite_reference(
    x: &Tensor,
    t: &[i64],
    w: Option<&Tensor>,
    ignore: i64,
    reduction: Reduction,
    eps: f64,
) -> tinytorch::Result<Tensor> {
    let (n, c) = if x.ndim() == 1 {
        (1, x.shape()[0])
    } else {
        (x.shape()[0], x.shape()[1])
    };
    let rest = x.numel() / (n * c).max(1);
    let weights = match w {
        Some(w) => w.to_vec_f64()?,
        None => vec![1.0; c],
    };
    let mut onehot = vec![0.0; x.numel()];
    let mut keep = vec![0.0; t.len()];
    let mut denom = 0.0;
    for (i, &ti) in t.iter().enumerate() {
        if ti == ignore {
            continue;
        }
        let (s, p) = (i / rest, i % rest);
        onehot[(s * c + ti as usize) * rest + p] = 1.0;
        keep[i] = 1.0;
        denom += weights[ti as usize];
    }
    let probs = Tensor::from_vec(onehot, x.shape())?.to_dtype(x.dtype())?;
    // The ignored targets are masked below; probability targets take no ignore_index.
    let per = cross_entropy(x, &probs, w, -100, Reduction::None, eps)?;
    let keep = Tensor::from_vec(keep, per.shape())?.to_dtype(x.dtype())?;
    let per = per.mul(&keep)?;
    match reduction {
        Reduction::None => Ok(per),
        Reduction::Sum => per.sum_all(),
        Reduction::Mean => per.sum_all()?.div_scalar(denom),
    }
}

/// Loss and input gradient of the fused path (index targets) and of the composite
/// reference, for every reduction, with and without class weights and label smoothing.
/// `x` is the input in f64 (any layout); it is cast to `dtype` for both paths.
fn check_fused_against_composite(x: &Tensor, t: &[i64], ignore: i64, dtype: DType, tol: f64) {
    let target_shape: Vec<usize> = if x.ndim() == 1 {
        vec![]
    } else {
        let mut s = x.shape().to_vec();
        s.remove(1);
        s
    };
    let target = idx(t, &target_shape);
    let classes = if x.ndim() == 1 {
        x.shape()[0]
    } else {
        x.shape()[1]
    };
    let w = Tensor::from_vec(
        (0..classes)
            .map(|j| 0.5 + 0.25 * (j % 5) as f64)
            .collect::<Vec<_>>(),
        &[classes],
    )
    .unwrap()
    .to_dtype(dtype)
    .unwrap();
    for weight in [None, Some(&w)] {
        for eps in [0.0, 0.25] {
            for reduction in [Reduction::None, Reduction::Sum, Reduction::Mean] {
                let what = format!(
                    "{dtype} shape {:?} weight {} eps {eps} {reduction:?}",
                    x.shape(),
                    weight.is_some()
                );
                // Leaves of `dtype` in x's layout (the cast keeps a transposed view's order).
                let leaf = || {
                    x.to_dtype(dtype)
                        .unwrap()
                        .detach()
                        .requires_grad_(true)
                        .unwrap()
                };
                let (xf, xr) = (leaf(), leaf());
                let fast = cross_entropy(&xf, &target, weight, ignore, reduction, eps).unwrap();
                let slow = composite_reference(&xr, t, weight, ignore, reduction, eps).unwrap();
                assert_eq!(fast.shape(), slow.shape(), "{what}");
                assert_eq!(fast.dtype(), dtype, "{what}");
                assert_close_slices(
                    &fast.to_vec_f64().unwrap(),
                    &slow.to_vec_f64().unwrap(),
                    Tol::scaled(tol).equal_nan(),
                    &format!("{what}: loss"),
                );
                // A different upstream gradient per sample for `None`.
                let g = Tensor::from_vec(
                    (0..fast.numel())
                        .map(|i| 0.5 + 0.1 * (i % 7) as f64)
                        .collect::<Vec<_>>(),
                    fast.shape(),
                )
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
                fast.backward_with(Some(&g), false).unwrap();
                slow.backward_with(Some(&g), false).unwrap();
                let (gf, gr) = (xf.grad().unwrap(), xr.grad().unwrap());
                assert_eq!(gf.shape(), x.shape(), "{what}");
                assert_close_slices(
                    &gf.to_vec_f64().unwrap(),
                    &gr.to_vec_f64().unwrap(),
                    Tol::scaled(tol).equal_nan(),
                    &format!("{what}: gradient"),
                );
            }
        }
    }
}

/// `rows x classes` logits in about [-3, 3], deterministic.
fn wavy(rows: usize, classes: usize) -> Tensor {
    let v: Vec<f64> = (0..rows * classes)
        .map(|i| 3.0 * ((i * 7 + 3) as f64 * 0.37).sin())
        .collect();
    t64(&v, &[rows, classes])
}

#[test]
fn fused_cross_entropy_matches_composite_path() {
    for (dtype, tol) in [(DType::F64, 1e-10), (DType::F32, 2e-5)] {
        // Targets with ignored samples, under the default ignore_index and under one that is
        // a valid class.
        let x = wavy(7, 13);
        check_fused_against_composite(&x, &[3, N, 0, 12, 5, N, 7], N, dtype, tol);
        check_fused_against_composite(&x, &[3, 4, 0, 12, 4, 9, 7], 4, dtype, tol);
        // Enough rows for the multi-threaded path, and a row length with a lane tail.
        let t: Vec<i64> = (0..300)
            .map(|i| {
                if i % 17 == 0 {
                    N
                } else {
                    (i * 31 % 257) as i64
                }
            })
            .collect();
        check_fused_against_composite(&wavy(300, 257), &t, N, dtype, tol);
        // A non-contiguous (transposed) input.
        let xt = wavy(13, 7).t().unwrap();
        check_fused_against_composite(&xt, &[3, N, 0, 12, 5, 1, 7], N, dtype, tol);
        // One class: the loss and gradient are 0.
        check_fused_against_composite(&wavy(4, 1), &[0, N, 0, 0], N, dtype, tol);
        // Unbatched (C,) and spatial (N, C, d1, d2) inputs.
        check_fused_against_composite(&wavy(1, 9).reshape(&[9]).unwrap(), &[4], N, dtype, tol);
        let xs = wavy(2, 4 * 3 * 2).reshape(&[2, 4, 3, 2]).unwrap();
        let ts = [0, 1, 3, N, 2, 2, 1, 0, 3, 3, N, 1];
        check_fused_against_composite(&xs, &ts, N, dtype, tol);
        // Logits of +-1000: stable, and still agreeing.
        let big: Vec<f64> = (0..27)
            .map(|i| {
                if i % 4 == 0 {
                    1000.0 + i as f64 * 0.5
                } else {
                    -1000.0 + (i % 5) as f64
                }
            })
            .collect();
        check_fused_against_composite(&t64(&big, &[3, 9]), &[0, 3, 8], N, dtype, tol);
    }
}

#[test]
fn fused_cross_entropy_empty_batch() {
    for dtype in [DType::F32, DType::F64] {
        let x = Tensor::zeros(&[0, 5], dtype, Device::Cpu)
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let t = idx(&[], &[0]);
        let ce = |r| cross_entropy(&x, &t, None, N, r, 0.1).unwrap();
        assert_eq!(ce(Reduction::None).shape(), &[0]);
        assert_eq!(ce(Reduction::Sum).item_f64().unwrap(), 0.0);
        // 0 / 0, as in PyTorch.
        assert!(ce(Reduction::Mean).item_f64().unwrap().is_nan());
        ce(Reduction::Sum).backward().unwrap();
        assert_eq!(x.grad().unwrap().shape(), &[0, 5]);
    }
}

#[test]
fn fused_cross_entropy_gradcheck_and_half_precision() {
    // f64 central differences through the fused path: Sum with an ignored sample, and a
    // transposed input with smoothing.
    let t = idx(&[1, N, 3], &[3]);
    gradcheck64(
        |xs| cross_entropy(&xs[0], &t, None, N, Reduction::Sum, 0.0),
        &[logits()],
    );
    let xt = logits().t().unwrap().contiguous().unwrap();
    gradcheck64(
        |xs| cross_entropy(&xs[0].t()?, &t, Some(&class_w()), N, Reduction::Mean, 0.3),
        &[xt],
    );
    // f16 / bf16 compute in f32 and return their own dtype, gradient included.
    let t = idx(&[2, 0, 3], &[3]);
    let want = cross_entropy(&logits(), &t, None, N, Reduction::Mean, 0.1)
        .unwrap()
        .item_f64()
        .unwrap();
    for dtype in [DType::F16, DType::BF16] {
        let x = logits()
            .to_dtype(dtype)
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let loss = cross_entropy(&x, &t, None, N, Reduction::Mean, 0.1).unwrap();
        assert_eq!(loss.dtype(), dtype);
        assert!((loss.item_f64().unwrap() - want).abs() < 2e-2, "{dtype}");
        loss.backward().unwrap();
        assert_eq!(x.grad().unwrap().dtype(), dtype);
    }
}

/// The numbers of a JSON array, each read by `num` (`Value::as_f64`, `Value::as_i64`).
fn numbers<T>(v: &serde_json::Value, num: fn(&serde_json::Value) -> Option<T>) -> Vec<T> {
    let items = v.as_array().unwrap();
    items.iter().map(|x| num(x).unwrap()).collect()
}

/// The f64 numbers of a JSON array.
fn f64s(v: &serde_json::Value) -> Vec<f64> {
    numbers(v, serde_json::Value::as_f64)
}

#[test]
fn distillation_loss_and_gradient_match_pytorch() {
    let fx = load_json_fixture("distill.json");
    let teacher = t64(&f64s(&fx["teacher"]), &[4, 5]);
    let targets = idx(&numbers(&fx["targets"], serde_json::Value::as_i64), &[4]);
    for case in fx["cases"].as_array().unwrap() {
        let (t, a) = (
            case["temperature"].as_f64().unwrap(),
            case["alpha"].as_f64().unwrap(),
        );
        let student = t64(&f64s(&fx["student"]), &[4, 5])
            .requires_grad_(true)
            .unwrap();
        let loss = distillation_loss(&student, &teacher, &targets, t, a).unwrap();
        assert_close_to(
            &loss,
            &[case["loss"].as_f64().unwrap()],
            Tol::scaled(1e-12),
            "loss",
        );
        loss.backward().unwrap();
        assert_close_to(
            &student.grad().unwrap(),
            &f64s(&case["grad"]),
            Tol::scaled(1e-12),
            "student.grad()",
        );
        // The teacher is a constant: a teacher that requires grad gets none.
        let teacher_rg = teacher.detach().requires_grad_(true).unwrap();
        distillation_loss(&student.detach(), &teacher_rg, &targets, t, a)
            .unwrap()
            .backward()
            .ok();
        assert!(teacher_rg.grad().is_none());
        gradcheck(
            |x| distillation_loss(&x[0], &teacher, &targets, t, a),
            &[student.detach()],
            1e-6,
            1e-7,
            1e-6,
        )
        .unwrap();
    }
    // f32 logits give the f64 value to f32 precision.
    let s32 = t64(&f64s(&fx["student"]), &[4, 5])
        .to_dtype(DType::F32)
        .unwrap();
    let c = &fx["cases"][1];
    let loss = distillation_loss(
        &s32,
        &teacher.to_dtype(DType::F32).unwrap(),
        &targets,
        4.0,
        0.9,
    )
    .unwrap();
    assert_eq!(loss.dtype(), DType::F32);
    assert_close_to(
        &loss,
        &[c["loss"].as_f64().unwrap()],
        Tol::scaled(1e-5),
        "loss",
    );
}

#[test]
fn distillation_loss_rejects_bad_arguments() {
    let s = Tensor::zeros(&[2, 3], DType::F32, Device::Cpu).unwrap();
    let y = idx(&[0, 1], &[2]);
    let wrong = Tensor::zeros(&[2, 4], DType::F32, Device::Cpu).unwrap();
    for (teacher, t, a, needle) in [
        (&wrong, 2.0, 0.5, "(N, C)"),
        (&s, 0.0, 0.5, "temperature"),
        (&s, 2.0, 1.5, "alpha"),
    ] {
        let e = distillation_loss(&s, teacher, &y, t, a)
            .unwrap_err()
            .to_string();
        assert!(e.contains("distillation_loss") && e.contains(needle), "{e}");
    }
}
