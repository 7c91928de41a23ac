//! Higher-order gradients (`create_graph`): Hessian-vector products and a WGAN-GP gradient
//! penalty against PyTorch (fixtures/higher_order.safetensors from
//! scripts/fixtures/gen_higher_order_fixtures.py, f64), gradgradchecks (central differences of a
//! first gradient), and the errors of ops whose backward is a fused kernel.

mod common;
use common::{assert_close, load_fixture, Tol};

use std::collections::BTreeMap;
use tinytorch::autograd::gradcheck::gradcheck;
use tinytorch::autograd::{grad_with_options, set_grad_enabled, BackwardOptions};
use tinytorch::nn::functional::{cross_entropy, layer_norm, linear};
use tinytorch::nn::Reduction;
use tinytorch::ops::ConvPadding;
use tinytorch::{DType, Device, Tensor};

fn leaf(f: &BTreeMap<String, Tensor>, name: &str) -> Tensor {
    f[name]
        .contiguous_copy()
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

/// `grad(<grad f, v>, params)`: the Hessian-vector product, as PyTorch users write it.
fn hvp(loss: &Tensor, params: &[Tensor], vs: &[Tensor]) -> (Vec<Tensor>, Vec<Tensor>) {
    let grads = grad_with_options(loss, None, params, BackwardOptions::create_graph()).unwrap();
    let grads: Vec<Tensor> = grads.into_iter().map(Option::unwrap).collect();
    let mut dot = Tensor::scalar(0.0f64);
    for (g, v) in grads.iter().zip(vs) {
        assert!(g.requires_grad(), "a create_graph gradient is in the graph");
        dot = dot.add(&g.mul(v).unwrap().sum_all().unwrap()).unwrap();
    }
    let hv = tinytorch::autograd::grad(&dot, None, params, false).unwrap();
    (grads, hv.into_iter().map(Option::unwrap).collect())
}

#[test]
fn mlp_hessian_vector_product_matches_pytorch() {
    let f = load_fixture("higher_order.safetensors");
    let names = ["w1", "b1", "w2", "b2", "w3", "b3"];
    let p: Vec<Tensor> = names
        .iter()
        .map(|n| leaf(&f, &format!("mlp.{n}")))
        .collect();
    let vs: Vec<Tensor> = names
        .iter()
        .map(|n| f[&format!("mlp.v_{n}")].clone())
        .collect();
    let h = linear(&f["mlp.x"], &p[0], Some(&p[1]))
        .unwrap()
        .tanh()
        .unwrap();
    let h = linear(&h, &p[2], Some(&p[3])).unwrap().gelu().unwrap();
    let logits = linear(&h, &p[4], Some(&p[5])).unwrap();
    let loss = cross_entropy(&logits, &f["mlp.y"], None, -100, Reduction::Mean, 0.0).unwrap();
    assert_close(&loss, &f["mlp.loss"], Tol::scaled(1e-12), "loss");
    let (grads, hv) = hvp(&loss, &p, &vs);
    for (i, n) in names.iter().enumerate() {
        assert_close(
            &grads[i],
            &f[&format!("mlp.grad_{n}")],
            Tol::scaled(1e-10),
            n,
        );
        assert_close(&hv[i], &f[&format!("mlp.hvp_{n}")], Tol::scaled(1e-10), n);
    }
}

#[test]
fn tanh_squared_hessian_vector_product_matches_pytorch() {
    let f = load_fixture("higher_order.safetensors");
    let w = leaf(&f, "tanh_sq.w");
    let loss = w
        .matmul(&f["tanh_sq.x"])
        .unwrap()
        .tanh()
        .unwrap()
        .sum_all()
        .unwrap()
        .square()
        .unwrap();
    let (g, hv) = hvp(&loss, std::slice::from_ref(&w), &[f["tanh_sq.v"].clone()]);
    assert_close(&loss, &f["tanh_sq.loss"], Tol::scaled(1e-12), "loss");
    assert_close(&g[0], &f["tanh_sq.grad"], Tol::scaled(1e-10), "grad");
    assert_close(&hv[0], &f["tanh_sq.hvp"], Tol::scaled(1e-10), "hvp");
}

/// exp, log, sigmoid, pow, softmax, relu, mean and the arithmetic between them.
fn elementwise(x: &Tensor) -> tinytorch::Result<Tensor> {
    let a = x.exp()?.mul(&x.add_scalar(3.0)?.log()?)?;
    let b = x.sigmoid()?.mul(&x.pow_scalar(2.5)?)?;
    let c = x.softmax(-1)?.mul(x)?;
    let d = x.sub_scalar(0.6)?.relu()?.mul(x)?;
    let terms = a.add(&b)?.add(&c)?.add(&d)?;
    terms.sum_all()?.add(&x.mean_all()?.square()?)
}

#[test]
fn elementwise_hessian_vector_product_matches_pytorch() {
    let f = load_fixture("higher_order.safetensors");
    let x = leaf(&f, "elementwise.x");
    let loss = elementwise(&x).unwrap();
    let (g, hv) = hvp(
        &loss,
        std::slice::from_ref(&x),
        &[f["elementwise.v"].clone()],
    );
    assert_close(&loss, &f["elementwise.loss"], Tol::scaled(1e-12), "loss");
    assert_close(&g[0], &f["elementwise.grad"], Tol::scaled(1e-10), "grad");
    assert_close(&hv[0], &f["elementwise.hvp"], Tol::scaled(1e-10), "hvp");
}

/// The gradient of `d.sum()` with respect to the critic's input `x`, with create_graph (so
/// a penalty on it can be differentiated again): `grad(d.sum(), x, create_graph=True)[0]`.
fn input_grad(d: &Tensor, x: &Tensor) -> Tensor {
    grad_with_options(
        &d.sum_all().unwrap(),
        None,
        std::slice::from_ref(x),
        BackwardOptions::create_graph(),
    )
    .unwrap()[0]
        .clone()
        .unwrap()
}

/// WGAN-GP's penalty on a (batch, features) input gradient `gx`:
/// `((gx.norm(2, dim=1) - 1) ** 2).mean()`.
fn gradient_penalty(gx: &Tensor) -> Tensor {
    gx.norm(2.0, &[1], false)
        .unwrap()
        .sub_scalar(1.0)
        .unwrap()
        .square()
        .unwrap()
        .mean_all()
        .unwrap()
}

#[test]
fn gradient_penalty_matches_pytorch() {
    let f = load_fixture("higher_order.safetensors");
    let names = ["w1", "b1", "w2", "b2", "w3", "b3"];
    let p: Vec<Tensor> = names.iter().map(|n| leaf(&f, &format!("gp.{n}"))).collect();
    let x = leaf(&f, "gp.x");
    let h = linear(&x, &p[0], Some(&p[1])).unwrap().gelu().unwrap();
    let h = linear(&h, &p[2], Some(&p[3]))
        .unwrap()
        .leaky_relu(0.2)
        .unwrap();
    let d = linear(&h, &p[4], Some(&p[5])).unwrap();
    let gx = input_grad(&d, &x);
    assert_close(&gx, &f["gp.grad_x"], Tol::scaled(1e-12), "grad_x");
    let gp = gradient_penalty(&gx);
    assert_close(&gp, &f["gp.penalty"], Tol::scaled(1e-12), "penalty");
    gp.backward().unwrap();
    for (i, n) in names.iter().enumerate() {
        let want = &f[&format!("gp.grad_{n}")];
        let got = p[i].grad().unwrap_or_else(|| want.zeros_like().unwrap());
        assert_close(&got, want, Tol::scaled(1e-10), n);
    }
}

/// gradgradcheck: the gradient of `f` (with create_graph) as a function of the inputs, checked
/// by central differences: its own backward is the second derivative.
fn gradgradcheck(f: impl Fn(&Tensor) -> tinytorch::Result<Tensor>, x: &Tensor) {
    let first = |xs: &[Tensor]| -> tinytorch::Result<Tensor> {
        // The numeric side evaluates at plain tensors: make them leaves that require grad.
        let _grad = set_grad_enabled(true);
        let x = match xs[0].requires_grad() {
            true => xs[0].clone(),
            false => xs[0].detach().requires_grad_(true)?,
        };
        let y = f(&x)?;
        let g = grad_with_options(
            &y,
            Some(&y.ones_like()?),
            std::slice::from_ref(&x),
            BackwardOptions::create_graph(),
        )?;
        Ok(g[0].clone().expect("x reaches y"))
    };
    gradcheck(first, std::slice::from_ref(x), 1e-6, 1e-6, 1e-5).unwrap();
}

#[test]
fn gradgradcheck_of_elementwise_and_reductions() {
    let x = Tensor::rand(&[3, 4], DType::F64, Device::Cpu)
        .unwrap()
        .add_scalar(0.2)
        .unwrap();
    gradgradcheck(elementwise, &x);
    gradgradcheck(|x| x.tanh()?.mul(&x.gelu()?)?.div(&x.add_scalar(1.0)?), &x);
    gradgradcheck(|x| x.log_softmax(1)?.mul(&x.sqrt()?), &x);
    gradgradcheck(|x| x.pow_scalar(3)?.sum(&[0], true)?.mul(&x.sin()?), &x);
}

#[test]
fn gradgradcheck_of_matmul_and_cross_entropy() {
    let w = Tensor::randn(&[4, 5], DType::F64, Device::Cpu).unwrap();
    let x = Tensor::randn(&[3, 4], DType::F64, Device::Cpu).unwrap();
    let y = Tensor::from_vec(vec![0i64, 4, 2], &[3]).unwrap();
    let w2 = w.clone();
    gradgradcheck(
        move |x| x.matmul(&w2)?.tanh()?.matmul(&w2.transpose(0, 1)?),
        &x,
    );
    gradgradcheck(
        move |x| {
            let logits = x.matmul(&w)?;
            cross_entropy(&logits, &y, None, -100, Reduction::Sum, 0.1)
        },
        &x,
    );
}

#[test]
fn backward_with_create_graph_makes_grad_differentiable() {
    let x = Tensor::from_vec(vec![1.5f64, -2.0], &[2])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let y = x.pow_scalar(3).unwrap().sum_all().unwrap();
    y.backward_with_options(None, BackwardOptions::create_graph())
        .unwrap();
    let g = x.grad().unwrap();
    assert!(g.requires_grad());
    assert_eq!(g.to_vec::<f64>().unwrap(), vec![6.75, 12.0]);
    let gg = tinytorch::autograd::grad(&g.sum_all().unwrap(), None, &[x], false).unwrap();
    assert_eq!(
        gg[0].as_ref().unwrap().to_vec::<f64>().unwrap(),
        vec![9.0, -12.0]
    );
}

#[test]
fn without_create_graph_the_gradient_is_not_in_the_graph() {
    let x = Tensor::from_vec(vec![1.5f64], &[1])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let y = x.exp().unwrap().sum_all().unwrap();
    let g = tinytorch::autograd::grad(&y, None, std::slice::from_ref(&x), true).unwrap();
    assert!(!g[0].as_ref().unwrap().requires_grad());
}

#[test]
fn differentiating_a_fused_kernels_gradient_is_an_error_naming_the_op() {
    let x = Tensor::randn(&[2, 4], DType::F32, Device::Cpu)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let w = Tensor::ones(&[4], DType::F32, Device::Cpu)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let y = layer_norm(&x, &[4], Some(&w), None, 1e-5)
        .unwrap()
        .mul(&x)
        .unwrap()
        .sum_all()
        .unwrap();
    let g = grad_with_options(
        &y,
        None,
        std::slice::from_ref(&x),
        BackwardOptions::create_graph(),
    )
    .unwrap();
    let g = g[0].clone().unwrap();
    let e = g.sum_all().unwrap().backward().unwrap_err().to_string();
    assert!(
        e.contains("layer_norm") && e.contains("double backward"),
        "{e}"
    );
}

/// The convolutional critic's gradient penalty in `dtype` (f64 runs the im2col path, f32 the
/// CPU's fused kernels, whose backward falls back to im2col under create_graph).
fn conv_penalty_grads(f: &BTreeMap<String, Tensor>, dtype: DType) -> (Tensor, Vec<Tensor>) {
    // The fixture's tensor `gp_conv.<name>` in `dtype`, as a leaf that requires grad.
    let leaf_as = |name: &str| {
        f[&format!("gp_conv.{name}")]
            .to_dtype(dtype)
            .unwrap()
            .contiguous_copy()
            .unwrap()
            .requires_grad_(true)
            .unwrap()
    };
    let p: Vec<Tensor> = ["cw", "cb", "lw", "lb"]
        .iter()
        .map(|n| leaf_as(n))
        .collect();
    let x = leaf_as("x");
    let h = x
        .conv2d(
            &p[0],
            Some(&p[1]),
            [2, 2],
            ConvPadding::Explicit(1, 1),
            [1, 1],
            1,
        )
        .unwrap()
        .tanh()
        .unwrap()
        .flatten(1, -1)
        .unwrap();
    let d = linear(&h, &p[2], Some(&p[3])).unwrap();
    let gx = input_grad(&d, &x);
    let gp = gradient_penalty(&gx.flatten(1, -1).unwrap());
    gp.backward().unwrap();
    let grads = p
        .iter()
        // lb does not reach the penalty: no gradient (PyTorch's fixture holds zeros).
        .map(|t| {
            t.grad()
                .unwrap_or_else(|| t.zeros_like().unwrap())
                .to_dtype(DType::F64)
                .unwrap()
        })
        .collect();
    (gp.to_dtype(DType::F64).unwrap(), grads)
}

#[test]
fn conv_gradient_penalty_matches_pytorch_in_f64_and_f32() {
    let f = load_fixture("higher_order.safetensors");
    for (dtype, tol) in [(DType::F64, 1e-10), (DType::F32, 1e-4)] {
        let (gp, grads) = conv_penalty_grads(&f, dtype);
        assert_close(&gp, &f["gp_conv.penalty"], Tol::scaled(tol), "penalty");
        for (g, n) in grads.iter().zip(["cw", "cb", "lw", "lb"]) {
            assert_close(g, &f[&format!("gp_conv.grad_{n}")], Tol::scaled(tol), n);
        }
    }
}

#[test]
fn gradgradcheck_of_conv2d() {
    let w = Tensor::randn(&[2, 2, 3, 3], DType::F64, Device::Cpu).unwrap();
    let x = Tensor::randn(&[2, 2, 5, 5], DType::F64, Device::Cpu).unwrap();
    gradgradcheck(
        move |x| {
            x.conv2d(&w, None, [1, 2], ConvPadding::Explicit(1, 0), [1, 1], 1)?
                .tanh()
        },
        &x,
    );
}
