//! `Tensor::register_hook` (on leaves and non-leaves, replacing the gradient, removable) and
//! `retain_grad`, with the values PyTorch gives for the same graphs (worked by hand below).

mod common;
use common::{backward_sum, leaf64 as leaf};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tinytorch::autograd::grad;
use tinytorch::Tensor;

#[test]
fn a_hook_on_a_non_leaf_sees_the_whole_gradient_and_may_replace_it() {
    // y = 3x, used twice: z = y*y + y. dz/dy = 2y + 1; with the hook doubling it, x gets
    // 3 * 2 * (2y + 1).
    let x = leaf(&[1.0, 2.0]);
    let y = x.mul_scalar(3.0).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    y.register_hook(move |g| {
        s.lock().unwrap().push(g.to_vec::<f64>()?);
        Ok(Some(g.mul_scalar(2.0)?))
    })
    .unwrap();
    let z = y.mul(&y).unwrap().add(&y).unwrap().sum_all().unwrap();
    z.backward().unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![vec![7.0, 13.0]]);
    assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), vec![42.0, 78.0]);
}

#[test]
fn hooks_on_a_leaf_run_before_accumulation_in_order_and_reach_autograd_grad() {
    let x = leaf(&[1.0, -1.0]);
    x.register_hook(|g| Ok(Some(g.add_scalar(1.0)?))).unwrap();
    x.register_hook(|g| Ok(Some(g.mul_scalar(10.0)?))).unwrap();
    let y = x.mul_scalar(2.0).unwrap().sum_all().unwrap();
    y.backward().unwrap();
    // (2 + 1) * 10
    assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), vec![30.0, 30.0]);
    let y = x.mul_scalar(2.0).unwrap().sum_all().unwrap();
    let g = grad(&y, None, std::slice::from_ref(&x), false).unwrap();
    assert_eq!(
        g[0].as_ref().unwrap().to_vec::<f64>().unwrap(),
        vec![30.0, 30.0]
    );
}

#[test]
fn a_removed_hook_no_longer_runs_and_none_keeps_the_gradient() {
    let x = leaf(&[1.0]);
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let h = x
        .register_hook(move |_| {
            c.fetch_add(1, Ordering::SeqCst);
            Ok(None)
        })
        .unwrap();
    backward_sum(x.mul_scalar(5.0));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), vec![5.0]);
    h.remove();
    h.remove(); // twice is fine, as in PyTorch
    backward_sum(x.mul_scalar(5.0));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), vec![10.0]);
}

#[test]
fn retain_grad_keeps_a_non_leaf_gradient_after_the_hooks() {
    let x = leaf(&[1.0, 2.0]);
    let y = x.exp().unwrap();
    assert!(!y.retains_grad());
    y.retain_grad().unwrap();
    y.register_hook(|g| Ok(Some(g.mul_scalar(3.0)?))).unwrap();
    assert!(y.retains_grad());
    y.sum_all().unwrap().backward_with(None, true).unwrap();
    assert_eq!(y.grad().unwrap().to_vec::<f64>().unwrap(), vec![3.0, 3.0]);
    // Accumulates over passes, like a leaf's.
    y.sum_all().unwrap().backward().unwrap();
    assert_eq!(y.grad().unwrap().to_vec::<f64>().unwrap(), vec![6.0, 6.0]);
    assert!(!y.grad().unwrap().requires_grad());
    // On a leaf retain_grad is a no-op.
    x.retain_grad().unwrap();
    assert!(!x.retains_grad());
}

#[test]
fn bad_hooks_are_errors_naming_the_call() {
    let plain = Tensor::from_vec(vec![1.0f64], &[1]).unwrap();
    let e = plain.register_hook(|_| Ok(None)).err().unwrap().to_string();
    assert!(e.contains("register_hook") && e.contains("require"), "{e}");
    let e = plain.retain_grad().unwrap_err().to_string();
    assert!(e.contains("retain_grad"), "{e}");
    let x = leaf(&[1.0, 2.0]);
    let y = x.mul_scalar(2.0).unwrap();
    y.register_hook(|g| Ok(Some(g.sum_all()?))).unwrap();
    let e = y.sum_all().unwrap().backward().unwrap_err().to_string();
    assert!(e.contains("register_hook") && e.contains("[2]"), "{e}");
    let y = x.mul_scalar(2.0).unwrap();
    y.register_hook(|_| Err(tinytorch::Error::Autograd("hook failed".into())))
        .unwrap();
    let e = y.sum_all().unwrap().backward().unwrap_err().to_string();
    assert!(e.contains("hook failed"), "{e}");
}
