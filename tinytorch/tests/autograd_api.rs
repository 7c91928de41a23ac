//! `autograd::grad` (`torch.autograd.grad`) and custom differentiable ops
//! (`Tensor::with_custom_backward`, what `torch.autograd.Function` is built on).

mod common;
use common::leaf64 as leaf;

use tinytorch::autograd::gradcheck::gradcheck;
use tinytorch::autograd::{grad, no_grad};
use tinytorch::Tensor;

#[test]
fn grad_returns_gradients_of_leaves_and_intermediates_without_touching_dot_grad() {
    // y = sum((x * x) * w); dy/dx = 2 x w, dy/dw = x^2, dy/d(x*x) = w.
    let (x, w) = (leaf(&[1.0, -2.0, 3.0]), leaf(&[0.5, 1.5, -1.0]));
    let sq = x.mul(&x).unwrap();
    let y = sq.mul(&w).unwrap().sum_all().unwrap();
    let g = grad(&y, None, &[x.clone(), sq.clone(), w.clone()], true).unwrap();
    let vals = |t: &Option<Tensor>| t.as_ref().unwrap().to_vec::<f64>().unwrap();
    assert_eq!(vals(&g[0]), vec![1.0, -6.0, -6.0]);
    assert_eq!(vals(&g[1]), vec![0.5, 1.5, -1.0]);
    assert_eq!(vals(&g[2]), vec![1.0, 4.0, 9.0]);
    assert!(x.grad().is_none() && w.grad().is_none());
    // The graph was kept: an ordinary backward still works and accumulates as usual.
    y.backward().unwrap();
    assert_eq!(
        x.grad().unwrap().to_vec::<f64>().unwrap(),
        vec![1.0, -6.0, -6.0]
    );
}

#[test]
fn grad_of_an_unreached_input_is_none_and_inputs_must_require_grad() {
    let (x, z) = (leaf(&[1.0]), leaf(&[2.0]));
    let y = x.mul_scalar(3.0).unwrap().sum_all().unwrap();
    let g = grad(&y, None, &[x.clone(), z], false).unwrap();
    assert_eq!(g[0].as_ref().unwrap().to_vec::<f64>().unwrap(), vec![3.0]);
    assert!(g[1].is_none());
    let plain = Tensor::from_vec(vec![1.0f64], &[1]).unwrap();
    let y = x.mul_scalar(3.0).unwrap().sum_all().unwrap();
    let e = grad(&y, None, &[plain], false).unwrap_err().to_string();
    assert!(e.contains("does not require grad"), "{e}");
}

/// A custom op: f(a, b) = a * exp(b), computed without a graph, with a hand-written backward.
fn custom(a: &Tensor, b: &Tensor) -> tinytorch::Result<Tensor> {
    let out = {
        let _g = no_grad();
        a.mul(&b.exp()?)?
    };
    let (sa, sb) = (a.detach(), b.detach());
    Ok(
        out.with_custom_backward("a_exp_b", &[a, b], move |g, need| {
            let e = sb.exp()?;
            Ok(vec![
                need[0].then(|| g.mul(&e)).transpose()?,
                need[1].then(|| g.mul(&e)?.mul(&sa)).transpose()?,
            ])
        }),
    )
}

#[test]
fn a_custom_backward_is_used_and_gradchecks() {
    let (a, b) = (leaf(&[0.5, -1.0]), leaf(&[0.2, 0.7]));
    let y = custom(&a, &b).unwrap();
    assert_eq!(y.grad_fn_name(), Some("a_exp_b"));
    y.sum_all().unwrap().backward().unwrap();
    let want_a: Vec<f64> = [0.2f64, 0.7].iter().map(|v| v.exp()).collect();
    assert_eq!(a.grad().unwrap().to_vec::<f64>().unwrap(), want_a);
    gradcheck(
        |t| custom(&t[0], &t[1]),
        &[a.detach(), b.detach()],
        1e-6,
        1e-7,
        1e-5,
    )
    .unwrap();
    // Without an input that requires grad: a plain tensor.
    let plain = custom(&a.detach(), &b.detach()).unwrap();
    assert!(!plain.requires_grad());
}

/// Post-accumulate-grad hooks run once per backward, as soon as the leaf's gradient is final
/// (before the sweep ends: the first layer's hook sees the later layer's already run), with
/// `.grad` written; a removed hook no longer runs; an error from a hook ends backward.
#[test]
fn post_accumulate_grad_hooks_run_when_the_gradient_is_final() {
    use std::sync::{Arc, Mutex};
    let w1 = Tensor::from_vec(vec![1.0f32, 2.0], &[2])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let w2 = Tensor::from_vec(vec![3.0f32, 4.0], &[2])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    /// (leaf name, its .grad when its hook ran), in the order the hooks ran.
    type Calls = Arc<Mutex<Vec<(String, Vec<f32>)>>>;
    let seen: Calls = Arc::default();
    let hook = |name: &'static str| {
        let seen = seen.clone();
        move |t: &Tensor| {
            let g = t
                .grad()
                .expect(".grad is written before the hook")
                .to_vec::<f32>()?;
            seen.lock().unwrap().push((name.to_string(), g));
            Ok(())
        }
    };
    let h1 = w1.register_post_accumulate_grad_hook(hook("w1")).unwrap();
    let _h2 = w2.register_post_accumulate_grad_hook(hook("w2")).unwrap();
    // w1 is used twice: its hook runs once, with both contributions summed.
    let h = w1.mul(&w1).unwrap().add(&w1).unwrap();
    let loss = h
        .mul(&w2)
        .unwrap()
        .sum_all()
        .unwrap()
        .exp()
        .unwrap()
        .log()
        .unwrap();
    loss.backward().unwrap();
    let got = seen.lock().unwrap().clone();
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].0, "w2", "w2's gradient is final first");
    assert_eq!(got[1], ("w1".to_string(), vec![9.0, 20.0]), "(2 w1 + 1) w2");
    h1.remove();
    seen.lock().unwrap().clear();
    w1.mul(&w2).unwrap().sum_all().unwrap().backward().unwrap();
    assert_eq!(seen.lock().unwrap().len(), 1, "only w2's hook is left");
    let _bad = w1
        .register_post_accumulate_grad_hook(|_| Err(tinytorch::Error::invalid("hook", "refused")))
        .unwrap();
    let e = w1
        .mul(&w2)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap_err();
    assert!(e.to_string().contains("refused"), "{e}");
    let e = w1
        .mul(&w2)
        .unwrap()
        .register_post_accumulate_grad_hook(|_| Ok(()))
        .err()
        .unwrap();
    assert!(e.to_string().contains("only leaf tensors"), "{e}");
}
