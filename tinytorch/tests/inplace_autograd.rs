//! In-place ops on autograd-graph tensors (PyTorch's history rebase), version counters and
//! their errors: every gradient is compared with the same computation written out of place.

mod common;
use common::{assert_close_f32, Tol};

use tinytorch::autograd::gradcheck::gradcheck;
use tinytorch::{no_grad, DType, Device, Result, Tensor};

fn t(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.iter().map(|&x| x as f32).collect::<Vec<f32>>(), shape).unwrap()
}

fn leaf(v: &[f64], shape: &[usize]) -> Tensor {
    t(v, shape).requires_grad_(true).unwrap()
}

/// An f64 input for gradcheck (which makes its own leaves).
fn f64s(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn grad(x: &Tensor) -> Vec<f32> {
    x.grad().expect("a gradient").to_vec::<f32>().unwrap()
}

/// The gradient of `x` through `f`, run on a fresh leaf.
fn grad_of(v: &[f64], shape: &[usize], f: impl Fn(&Tensor) -> Result<Tensor>) -> Vec<f32> {
    let x = leaf(v, shape);
    f(&x).unwrap().sum_all().unwrap().backward().unwrap();
    grad(&x)
}

const X: [f64; 6] = [-1.5, -0.2, 0.0, 0.3, 1.2, 2.5];

#[test]
fn add_on_a_graph_tensor_rebases_its_history() {
    let x = leaf(&X, &[2, 3]);
    let y = x.mul_scalar(2.0).unwrap();
    assert_eq!(y.version(), 0);
    y.add_scalar_(1.0).unwrap();
    assert_eq!(y.version(), 1);
    assert_eq!(y.grad_fn_name(), Some("add"));
    assert!(!y.is_leaf());
    y.sum_all().unwrap().backward().unwrap();
    assert_close_f32(&grad(&x), &[2.0; 6], Tol::scaled(1e-5), "grad(&x)");
}

#[test]
fn relu_in_place_in_an_mlp_matches_out_of_place() {
    let w = [0.5, -1.0, 0.25, 2.0, -0.75, 1.5];
    let run = |inplace: bool| {
        let x = leaf(&X, &[2, 3]);
        let w = leaf(&w, &[3, 2]);
        let h = x.matmul(&w).unwrap();
        let h = if inplace {
            h.relu_().unwrap()
        } else {
            h.relu().unwrap()
        };
        let out = h.matmul(&w.transpose(0, 1).unwrap()).unwrap();
        out.sum_all().unwrap().backward().unwrap();
        (grad(&x), grad(&w))
    };
    let (a, b) = (run(true), run(false));
    assert_close_f32(&a.0, &b.0, Tol::scaled(1e-5), "a.0");
    assert_close_f32(&a.1, &b.1, Tol::scaled(1e-5), "a.1");
}

#[test]
fn every_in_place_op_matches_its_out_of_place_form() {
    let o = t(&[0.5, 2.0, -1.0, 1.5, 3.0, -0.5], &[2, 3]);
    let mask = t(&[1., 0., 0., 1., 0., 1.], &[2, 3])
        .to_dtype(DType::Bool)
        .unwrap();
    type Pair = (
        &'static str,
        Box<dyn Fn(&Tensor) -> Result<Tensor>>,
        Box<dyn Fn(&Tensor) -> Result<Tensor>>,
    );
    let o2 = o.clone();
    let o3 = o.clone();
    let o4 = o.clone();
    let o5 = o.clone();
    let m1 = mask.clone();
    let m2 = mask.clone();
    let cases: Vec<Pair> = vec![
        (
            "add_",
            Box::new(move |y| y.add_(&o)),
            Box::new(|_| unreachable!()),
        ),
        (
            "sub_",
            Box::new(move |y| y.sub_(&o2)),
            Box::new(|_| unreachable!()),
        ),
        (
            "mul_",
            Box::new(move |y| y.mul_(&o3)),
            Box::new(|_| unreachable!()),
        ),
        (
            "div_",
            Box::new(move |y| y.div_(&o4)),
            Box::new(|_| unreachable!()),
        ),
        (
            "add_scaled_",
            Box::new(move |y| y.add_scaled_(&o5, -0.5)),
            Box::new(|_| unreachable!()),
        ),
        ("relu_", Box::new(|y| y.relu_()), Box::new(|y| y.relu())),
        (
            "sigmoid_",
            Box::new(|y| y.sigmoid_()),
            Box::new(|y| y.sigmoid()),
        ),
        ("tanh_", Box::new(|y| y.tanh_()), Box::new(|y| y.tanh())),
        ("exp_", Box::new(|y| y.exp_()), Box::new(|y| y.exp())),
        ("neg_", Box::new(|y| y.neg_()), Box::new(|y| y.neg())),
        ("silu_", Box::new(|y| y.silu_()), Box::new(|y| y.silu())),
        (
            "leaky_relu_",
            Box::new(|y| y.leaky_relu_(0.1)),
            Box::new(|y| y.leaky_relu(0.1)),
        ),
        ("elu_", Box::new(|y| y.elu_(0.7)), Box::new(|y| y.elu(0.7))),
        (
            "clamp_",
            Box::new(|y| y.clamp_(Some(-1.0), Some(2.0))),
            Box::new(|y| y.clamp(Some(-1.0), Some(2.0))),
        ),
        (
            "clamp_min_",
            Box::new(|y| y.clamp_min_(0.1)),
            Box::new(|y| y.clamp_min(0.1)),
        ),
        (
            "masked_fill_",
            Box::new(move |y| y.masked_fill_(&m1, 0.0)),
            Box::new(move |y| y.masked_fill(&m2, 0.0)),
        ),
        (
            "mul_scalar_",
            Box::new(|y| y.mul_scalar_(3.0)),
            Box::new(|y| y.mul_scalar(3.0)),
        ),
        (
            "div_scalar_",
            Box::new(|y| y.div_scalar_(4.0)),
            Box::new(|y| y.div_scalar(4.0)),
        ),
        (
            "sub_scalar_",
            Box::new(|y| y.sub_scalar_(1.0)),
            Box::new(|y| y.sub_scalar(1.0)),
        ),
    ];
    let o = t(&[0.5, 2.0, -1.0, 1.5, 3.0, -0.5], &[2, 3]);
    for (name, inplace, plain) in &cases {
        // Each case squares the result so that the gradient depends on the values too.
        let a = grad_of(&X, &[2, 3], |x| {
            let y = x.mul_scalar(1.5)?;
            let r = inplace(&y)?;
            assert!(r.shares_storage(&y), "{name} returns the tensor itself");
            y.square()
        });
        let b = grad_of(&X, &[2, 3], |x| {
            let y = x.mul_scalar(1.5)?;
            let r = match *name {
                "add_" => y.add(&o)?,
                "sub_" => y.sub(&o)?,
                "mul_" => y.mul(&o)?,
                "div_" => y.div(&o)?,
                "add_scaled_" => y.add(&o.mul_scalar(-0.5)?)?,
                _ => plain(&y)?,
            };
            r.square()
        });
        assert_close_f32(&a, &b, Tol::scaled(1e-5), "a");
    }
}

#[test]
fn an_operand_that_requires_grad_gets_its_gradient() {
    // x += f(w) on a constant buffer, and mul_/div_ by a tensor that requires grad.
    let w = leaf(&[1., 2., 3.], &[3]);
    let buf = Tensor::zeros(&[3], DType::F32, Device::Cpu).unwrap();
    buf.add_(&w.square().unwrap()).unwrap();
    assert!(!buf.is_leaf());
    buf.sum_all().unwrap().backward().unwrap();
    assert_close_f32(&grad(&w), &[2., 4., 6.], Tol::scaled(1e-5), "grad(&w)");

    let x = leaf(&[1., -2., 3.], &[3]);
    let w = leaf(&[0.5, 4., -2.], &[3]);
    let y = x.mul_scalar(2.0).unwrap();
    y.mul_(&w)
        .unwrap()
        .div_(&w.add_scalar(3.0).unwrap())
        .unwrap();
    y.square().unwrap().sum_all().unwrap().backward().unwrap();
    let (gx, gw) = (grad(&x), grad(&w));
    let x2 = leaf(&[1., -2., 3.], &[3]);
    let w2 = leaf(&[0.5, 4., -2.], &[3]);
    let y2 = x2
        .mul_scalar(2.0)
        .unwrap()
        .mul(&w2)
        .unwrap()
        .div(&w2.add_scalar(3.0).unwrap())
        .unwrap();
    y2.square().unwrap().sum_all().unwrap().backward().unwrap();
    assert_close_f32(&gx, &grad(&x2), Tol::scaled(1e-5), "gx");
    assert_close_f32(&gw, &grad(&w2), Tol::scaled(1e-5), "gw");
}

#[test]
fn residual_in_place_add_and_chains() {
    // y += relu(y): relu saves its output, not y, so this is allowed (as in PyTorch).
    let a = grad_of(&X, &[6], |x| {
        let y = x.mul_scalar(3.0)?;
        y.add_(&y.relu()?)?;
        y.mul_scalar_(2.0)?.add_scalar_(1.0)?.tanh_()?;
        Ok(y)
    });
    let b = grad_of(&X, &[6], |x| {
        let y = x.mul_scalar(3.0)?;
        let y = y.add(&y.relu()?)?;
        y.mul_scalar(2.0)?.add_scalar(1.0)?.tanh()
    });
    assert_close_f32(&a, &b, Tol::scaled(1e-5), "a");
}

#[test]
fn ops_recorded_before_an_in_place_op_keep_the_old_history() {
    // z was computed from y's old value: its gradient goes through y's old node.
    let x = leaf(&[1., 2.], &[2]);
    let y = x.mul_scalar(2.0).unwrap();
    let z = y.mul_scalar(3.0).unwrap();
    y.mul_scalar_(5.0).unwrap();
    z.add(&y).unwrap().sum_all().unwrap().backward().unwrap();
    assert_close_f32(&grad(&x), &[16., 16.], Tol::scaled(1e-5), "grad(&x)");
}

#[test]
fn fill_zero_and_copy_give_the_old_values_a_zero_gradient() {
    let x = leaf(&[1., 2., 3.], &[3]);
    let w = leaf(&[4., 5., 6.], &[3]);
    let y = x.mul_scalar(2.0).unwrap();
    let z = y.mul_scalar(1.0).unwrap();
    y.fill_(7.0).unwrap();
    assert_eq!(y.grad_fn_name(), Some("fill"));
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![7.0; 3]);
    let u = z.mul_scalar(1.0).unwrap();
    u.zero_().unwrap();
    let v = x.mul_scalar(1.0).unwrap();
    v.copy_(&w.mul_scalar(3.0).unwrap()).unwrap();
    y.add(&u)
        .unwrap()
        .add(&v)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    assert_close_f32(&grad(&x), &[0.0; 3], Tol::scaled(1e-5), "grad(&x)");
    assert_close_f32(&grad(&w), &[3.0; 3], Tol::scaled(1e-5), "grad(&w)");
}

#[test]
fn in_place_on_a_view_rebases_the_base() {
    // y[:, 0] = 0 and y[:, 1] *= 2 on a graph tensor.
    let x = leaf(&X, &[2, 3]);
    let y = x.mul_scalar(1.0).unwrap();
    y.select(1, 0).unwrap().fill_(0.0).unwrap();
    y.narrow(1, 1, 1).unwrap().mul_scalar_(2.0).unwrap();
    assert_eq!(y.grad_fn_name(), Some("copy_slices"));
    y.square().unwrap().sum_all().unwrap().backward().unwrap();
    let g = grad(&x);
    let want: Vec<f32> = X
        .iter()
        .enumerate()
        .map(|(i, &v)| match i % 3 {
            0 => 0.0,
            1 => (8.0 * v) as f32,
            _ => (2.0 * v) as f32,
        })
        .collect();
    assert_close_f32(&g, &want, Tol::scaled(1e-5), "g");

    // A constant buffer written through a view with a value that requires grad.
    let w = leaf(&[2.0], &[1]);
    let buf = Tensor::zeros(&[3], DType::F32, Device::Cpu).unwrap();
    buf.narrow(0, 1, 1)
        .unwrap()
        .copy_(&w.mul_scalar(3.0).unwrap())
        .unwrap();
    assert_eq!(buf.to_vec::<f32>().unwrap(), vec![0.0, 6.0, 0.0]);
    buf.square().unwrap().sum_all().unwrap().backward().unwrap();
    assert_close_f32(&grad(&w), &[36.0], Tol::scaled(1e-5), "grad(&w)");
}

#[test]
fn a_view_made_before_an_in_place_op_on_its_base_uses_the_new_history() {
    // v = y[0]; y *= 2; v += 1: v's gradient goes through the mul_, as in PyTorch.
    let x = leaf(&[1., 2., 3., 4.], &[2, 2]);
    let y = x.mul_scalar(1.0).unwrap();
    let v = y.select(0, 0).unwrap();
    y.mul_scalar_(2.0).unwrap();
    v.add_scalar_(1.0).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![3., 5., 6., 8.]);
    y.square().unwrap().sum_all().unwrap().backward().unwrap();
    // d/dx (2x + 1)^2 = 4 (2x + 1) in row 0, d/dx (2x)^2 = 8x in row 1.
    assert_close_f32(
        &grad(&x),
        &[12., 20., 24., 32.],
        Tol::scaled(1e-5),
        "grad(&x)",
    );
}

#[test]
fn in_place_on_a_leaf_that_requires_grad_is_an_error_outside_no_grad() {
    let w = leaf(&[1., 2.], &[2]);
    let e = w.relu_().unwrap_err().to_string();
    assert!(
        e.contains("a leaf Variable that requires grad is being used in an in-place operation."),
        "{e}"
    );
    let e = w.narrow(0, 0, 1).unwrap().zero_().unwrap_err().to_string();
    assert!(
        e.contains("a view of a leaf Variable that requires grad"),
        "{e}"
    );
    {
        let _g = no_grad();
        w.mul_scalar_(2.0).unwrap();
        w.narrow(0, 0, 1).unwrap().zero_().unwrap();
    }
    assert_eq!(w.to_vec::<f32>().unwrap(), vec![0.0, 4.0]);
    assert!(w.is_leaf() && w.requires_grad());
}

#[test]
fn modifying_a_saved_tensor_fails_at_backward_with_pytorchs_message() {
    let x = leaf(&[1., 2., 3.], &[3]);
    let y = x.mul_scalar(2.0).unwrap();
    let z = y.mul(&y).unwrap(); // saves y at version 0
    y.add_scalar_(1.0).unwrap(); // allowed: the error comes at backward
    let e = z.sum_all().unwrap().backward().unwrap_err().to_string();
    assert!(
        e.contains(
            "one of the variables needed for gradient computation has been modified by an \
             inplace operation: [torch.FloatTensor [3]], which is output 0 of Add, is at \
             version 1; expected version 0 instead."
        ),
        "{e}"
    );

    // exp saves its output: exp_ then add_ invalidates it.
    let x = leaf(&[1., 2.], &[2]);
    let y = x.mul_scalar(1.0).unwrap().exp().unwrap();
    y.add_scalar_(1.0).unwrap();
    let e = y.sum_all().unwrap().backward().unwrap_err().to_string();
    assert!(e.contains("output 0 of Add, is at version 1"), "{e}");
    // Through a detached alias the producer stays: "output 0 of Exp".
    let x = leaf(&[1., 2.], &[2]);
    let y = x.exp().unwrap();
    y.detach().add_scalar_(1.0).unwrap();
    let e = y.sum_all().unwrap().backward().unwrap_err().to_string();
    assert!(e.contains("output 0 of Exp, is at version 1"), "{e}");
}

#[test]
fn detach_aliases_storage_and_version_and_data_alias_does_not_track() {
    let x = leaf(&[1., 2.], &[2]);
    let y = x.exp().unwrap();
    let d = y.detach();
    assert!(d.shares_storage(&y) && !d.requires_grad());
    d.zero_().unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![0.0, 0.0]);
    assert_eq!(y.version(), 1);
    let e = y.sum_all().unwrap().backward().unwrap_err().to_string();
    assert!(e.contains("is at version 1; expected version 0"), "{e}");

    // `.data`: the same memory, its own version counter, so autograd does not notice.
    let x = leaf(&[1., 2.], &[2]);
    let y = x.exp().unwrap();
    let d = y.data_alias();
    d.mul_scalar_(1.0).unwrap();
    assert_eq!(y.version(), 0);
    assert_eq!(d.version(), 1);
    y.sum_all().unwrap().backward().unwrap();
    assert_close_f32(
        &grad(&x),
        &[1f64.exp() as f32, 2f64.exp() as f32],
        Tol::scaled(1e-5),
        "grad(&x)",
    );
}

#[test]
fn views_share_the_version_counter() {
    let y = Tensor::zeros(&[2, 3], DType::F32, Device::Cpu).unwrap();
    let v = y.select(0, 1).unwrap();
    v.add_scalar_(1.0).unwrap();
    assert_eq!((y.version(), v.version()), (1, 1));
}

#[test]
fn gradcheck_in_place_chains_in_f64() {
    let x = f64s(&[0.3, -0.7, 1.1, 0.2], &[2, 2]);
    let w = f64s(&[0.9, -0.4, 0.6, 1.3], &[2, 2]);
    let err = gradcheck(
        |v| {
            let y = v[0].matmul(&v[1])?;
            y.add_(&v[0].sigmoid()?)?;
            y.mul_(&v[1])?;
            y.select(1, 0)?.tanh_()?;
            y.elu_(0.5)?;
            y.sum_all()
        },
        &[x, w],
        1e-6,
        1e-5,
        1e-4,
    );
    assert!(err.is_ok(), "{err:?}");
}
