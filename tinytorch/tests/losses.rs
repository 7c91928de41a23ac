//! Loss functions against values computed with PyTorch 2.x (torch.nn.functional, f64,
//! hard-coded below), f64 gradient checks, extreme logits and error cases.
#![allow(clippy::approx_constant)] // PyTorch reference values such as ln 2 are hard-coded as printed.

use tinytorch::autograd::gradcheck::gradcheck;
use tinytorch::nn::functional::{
    binary_cross_entropy, binary_cross_entropy_with_logits, cross_entropy, huber_loss, kl_div,
    l1_loss, mse_loss, nll_loss, smooth_l1_loss,
};
use tinytorch::nn::{CrossEntropyLoss, KlDivReduction, MSELoss, Reduction};
use tinytorch::{DType, Device, Tensor};

fn t64(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn idx(v: &[i64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn assert_close(t: &Tensor, expected: &[f64], tol: f64) {
    let got = t.to_vec_f64().unwrap();
    assert_eq!(
        got.len(),
        expected.len(),
        "got {got:?}, expected {expected:?}"
    );
    for (g, e) in got.iter().zip(expected) {
        assert!(
            (g - e).abs() <= tol * (1.0 + e.abs()),
            "got {got:?}, expected {expected:?}"
        );
    }
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

#[test]
fn cross_entropy_reductions_match_pytorch() {
    let (x, t) = (logits(), idx(&[2, 0, 3], &[3]));
    let ce = |r| cross_entropy(&x, &t, None, N, r, 0.0).unwrap();
    assert_close(
        &ce(Reduction::None),
        &[0.27151695, 0.15322823, 0.75538481],
        1e-7,
    );
    assert_close(&ce(Reduction::Mean), &[0.39337667], 1e-7);
    assert_close(&ce(Reduction::Sum), &[1.18013], 1e-7);
    assert_eq!(ce(Reduction::Mean).shape(), &[] as &[usize]);
    let w = class_w();
    assert_close(
        &cross_entropy(&x, &t, Some(&w), N, Reduction::Mean, 0.0).unwrap(),
        &[0.43818131],
        1e-7,
    );
    assert_close(
        &cross_entropy(&x, &t, None, N, Reduction::Mean, 0.1).unwrap(),
        &[0.58296],
        1e-7,
    );
    // The module form uses the same defaults.
    assert_close(
        &CrossEntropyLoss::new().forward(&x, &t).unwrap(),
        &[0.39337667],
        1e-7,
    );
    // Unbatched (C,) input with a 0-d target.
    let x0 = x.select(0, 0).unwrap();
    let t0 = idx(&[2], &[]);
    assert_close(
        &cross_entropy(&x0, &t0, None, N, Reduction::Mean, 0.0).unwrap(),
        &[0.27151695],
        1e-7,
    );
}

#[test]
fn cross_entropy_ignore_index_weights_and_smoothing_with_gradient() {
    let x = logits().requires_grad_(true).unwrap();
    let t = idx(&[2, N, 3], &[3]);
    let w = class_w();
    assert_close(
        &cross_entropy(&x, &t, None, N, Reduction::Mean, 0.0).unwrap(),
        &[0.51345088],
        1e-7,
    );
    assert_close(
        &cross_entropy(&x, &t, Some(&w), N, Reduction::None, 0.2).unwrap(),
        &[0.97730635, 0.0, 1.28780798],
        1e-7,
    );
    let loss = cross_entropy(&x, &t, Some(&w), N, Reduction::Mean, 0.2).unwrap();
    assert_close(&loss, &[0.64717552], 1e-7);
    loss.backward().unwrap();
    // d loss / d x from PyTorch.
    assert_close(
        &x.grad().unwrap(),
        &[
            0.08275382,
            -0.01157107,
            -0.08282532,
            0.01164257,
            0.0,
            0.0,
            0.0,
            0.0,
            0.07199339,
            0.07317337,
            0.02447519,
            -0.16964195,
        ],
        1e-6,
    );
    gradcheck(
        |xs| cross_entropy(&xs[0], &t, Some(&w), N, Reduction::Mean, 0.2),
        &[logits()],
        1e-6,
        1e-7,
        1e-5,
    )
    .unwrap();
    gradcheck(
        |xs| cross_entropy(&xs[0], &t, None, N, Reduction::None, 0.0),
        &[logits()],
        1e-6,
        1e-7,
        1e-5,
    )
    .unwrap();
}

#[test]
fn cross_entropy_probability_targets() {
    let x = logits().requires_grad_(true).unwrap();
    let p = prob_targets();
    let w = class_w();
    assert_close(
        &cross_entropy(&x, &p, None, N, Reduction::Mean, 0.0).unwrap(),
        &[2.25229829],
        1e-7,
    );
    assert_close(
        &cross_entropy(&x, &p, Some(&w), N, Reduction::None, 0.1).unwrap(),
        &[3.23544855, 3.46280108, 1.35703888],
        1e-7,
    );
    let loss = cross_entropy(&x, &p, Some(&w), N, Reduction::Mean, 0.1).unwrap();
    loss.backward().unwrap();
    assert_close(
        &x.grad().unwrap(),
        &[
            0.07682896,
            -0.03188556,
            0.22575234,
            -0.27069574,
            0.2390065,
            -0.11598419,
            -0.09034074,
            -0.03268156,
            -0.04802665,
            -0.02112566,
            -0.03360919,
            0.1027615,
        ],
        1e-6,
    );
    gradcheck(
        |xs| cross_entropy(&xs[0], &p, Some(&w), N, Reduction::Sum, 0.1),
        &[logits()],
        1e-6,
        1e-7,
        1e-5,
    )
    .unwrap();
}

#[test]
fn cross_entropy_spatial_input() {
    // x3 = sin(arange(24)).reshape(2, 3, 4): (N, C, L).
    let v: Vec<f64> = (0..24).map(|i| (i as f64).sin()).collect();
    let x = t64(&v, &[2, 3, 4]);
    let t = idx(&[0, 1, 2, 1, 2, N, 0, 1], &[2, 4]);
    assert_close(
        &cross_entropy(&x, &t, None, N, Reduction::Mean, 0.0).unwrap(),
        &[1.17928779],
        1e-7,
    );
    let none = cross_entropy(&x, &t, None, N, Reduction::None, 0.0).unwrap();
    assert_eq!(none.shape(), &[2, 4]);
    assert_close(
        &none,
        &[
            1.42519582, 2.39712184, 1.8840655, 0.5809286, 0.42893556, 0.0, 0.43393554, 1.10483167,
        ],
        1e-7,
    );
    gradcheck(
        |xs| cross_entropy(&xs[0], &t, None, N, Reduction::Mean, 0.1),
        std::slice::from_ref(&x),
        1e-6,
        1e-7,
        1e-5,
    )
    .unwrap();
    // A non-contiguous input gives the same loss.
    let xt = t64(&v, &[2, 4, 3]).transpose(1, 2).unwrap();
    let a = cross_entropy(&xt, &t, None, N, Reduction::Sum, 0.0).unwrap();
    let b = cross_entropy(&xt.contiguous().unwrap(), &t, None, N, Reduction::Sum, 0.0).unwrap();
    assert_close(&a, &b.to_vec_f64().unwrap(), 1e-12);
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
    assert_close(
        &nll_loss(&lp, &t, Some(&w), N, Reduction::Mean).unwrap(),
        &[0.47888889],
        1e-7,
    );
    assert_close(
        &nll_loss(&lp, &t, Some(&w), N, Reduction::None).unwrap(),
        &[0.54303389, 0.0, 1.13307722],
        1e-7,
    );
    assert_close(
        &nll_loss(&lp, &idx(&[2, 0, 3], &[3]), None, N, Reduction::Sum).unwrap(),
        &[1.18013],
        1e-7,
    );
    gradcheck(
        |xs| nll_loss(&xs[0], &t, Some(&w), N, Reduction::Mean),
        std::slice::from_ref(&lp),
        1e-6,
        1e-7,
        1e-5,
    )
    .unwrap();
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
    assert_close(
        &mse_loss(&a, &b, Reduction::Mean).unwrap(),
        &[1.99833333],
        1e-7,
    );
    assert_close(
        &MSELoss::new().forward(&a, &b).unwrap(),
        &[1.99833333],
        1e-7,
    );
    assert_close(&l1_loss(&a, &b, Reduction::Sum).unwrap(), &[6.5], 1e-7);
    assert_close(
        &smooth_l1_loss(&a, &b, Reduction::None, 0.5).unwrap(),
        &[0.25, 0.04, 1.75, 2.25, 0.01, 0.95],
        1e-7,
    );
    assert_close(
        &smooth_l1_loss(&a, &b, Reduction::Mean, 1.0).unwrap(),
        &[0.725],
        1e-7,
    );
    assert_close(
        &huber_loss(&a, &b, Reduction::None, 0.5).unwrap(),
        &[0.125, 0.02, 0.875, 1.125, 0.005, 0.475],
        1e-7,
    );
    assert_close(
        &huber_loss(&a, &b, Reduction::Mean, 1.5).unwrap(),
        &[0.895],
        1e-7,
    );
    let a2 = a.reshape(&[2, 3]).unwrap().t().unwrap();
    let b2 = b.reshape(&[2, 3]).unwrap().t().unwrap();
    gradcheck(
        |xs| {
            let m = mse_loss(&xs[0], &xs[1], Reduction::Mean)?;
            let h = huber_loss(&xs[0], &xs[1], Reduction::Sum, 0.5)?;
            let s = smooth_l1_loss(&xs[0], &xs[1], Reduction::Sum, 0.5)?;
            let l = l1_loss(&xs[0], &xs[1], Reduction::None)?;
            m.add(&h)?.add(&s)?.add(&l)
        },
        &[a2.contiguous().unwrap(), b2.contiguous().unwrap()],
        1e-6,
        1e-7,
        1e-5,
    )
    .unwrap();
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
    assert_close(
        &binary_cross_entropy(&p, &t, None, Reduction::None).unwrap(),
        &[0.10536052, 0.10536052, 0.69314718, 100.0, 100.0, 0.78032387],
        1e-7,
    );
    assert_close(
        &binary_cross_entropy(&p, &t, Some(&w), Reduction::Mean).unwrap(),
        &[25.55836672],
        1e-7,
    );
    let pi = t64(&[0.1, 0.9, 0.5, 0.3], &[4]);
    let ti = t64(&[0.0, 1.0, 0.2, 0.5], &[4]);
    gradcheck(
        |xs| binary_cross_entropy(&xs[0], &ti, None, Reduction::Mean),
        &[pi],
        1e-6,
        1e-7,
        1e-5,
    )
    .unwrap();
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
    assert_close(
        &binary_cross_entropy_with_logits(&x, &t, None, Reduction::None, None).unwrap(),
        &[0.47407698, 0.04858735, 0.0, 50.0, 0.81326169, 0.69314718],
        1e-7,
    );
    assert_close(
        &binary_cross_entropy_with_logits(&x, &t, None, Reduction::Sum, Some(&pw)).unwrap(),
        &[102.42483477],
        1e-7,
    );
    let xs0 = t64(&[0.5, -3.0, 2.0, -5.0, 1.0, 0.3], &[2, 3]);
    let w = t64(&[1.0, 2.0, 0.5], &[3]);
    gradcheck(
        |xs| binary_cross_entropy_with_logits(&xs[0], &t, Some(&w), Reduction::Mean, Some(&pw)),
        &[xs0],
        1e-6,
        1e-7,
        1e-5,
    )
    .unwrap();
}

#[test]
fn kl_div_matches_pytorch() {
    let input = t64(&[0.1, 0.5, 0.4, 1.0, 2.0, 3.0], &[2, 3])
        .log_softmax(1)
        .unwrap();
    let t = t64(&[0.2, 0.0, 0.8, 0.3, 0.3, 0.4], &[2, 3]);
    assert_close(
        &kl_div(&input, &t, KlDivReduction::None, false).unwrap(),
        &[
            -0.05270545,
            0.0,
            0.65821371,
            0.36108995,
            0.06108995,
            -0.20347391,
        ],
        1e-7,
    );
    assert_close(
        &kl_div(&input, &t, KlDivReduction::BatchMean, false).unwrap(),
        &[0.41210712],
        1e-7,
    );
    assert_close(
        &kl_div(&input, &t, KlDivReduction::Mean, false).unwrap(),
        &[0.13736904],
        1e-7,
    );
    let lt = t.clamp_min(1e-3).unwrap().log().unwrap();
    assert_close(
        &kl_div(&input, &lt, KlDivReduction::Sum, true).unwrap(),
        &[0.8182524],
        1e-7,
    );
    gradcheck(
        |xs| kl_div(&xs[0], &t, KlDivReduction::BatchMean, false),
        std::slice::from_ref(&input),
        1e-6,
        1e-7,
        1e-5,
    )
    .unwrap();
}
