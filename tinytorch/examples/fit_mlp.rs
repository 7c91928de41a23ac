//! The foundation's main job: fit a small MLP to a synthetic regression task
//! (y = sin(3x) + 0.3x on [-2, 2]) with full-batch SGD + momentum, written only with
//! TinyTorch's tensor API, autograd and in-place updates. Prints the loss as it falls and
//! exits non-zero if it does not fall by 10x.
//!
//! Run: cargo run --release -p tinytorch --example fit_mlp

use tinytorch::{manual_seed, no_grad, DType, Device, Result, Tensor};

/// A parameter initialised like nn.Linear: U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
fn param(shape: &[usize], fan_in: usize) -> Result<Tensor> {
    let bound = 1.0 / (fan_in as f64).sqrt();
    Tensor::rand(shape, DType::F32, Device::Cpu)?
        .mul_scalar(2.0 * bound)?
        .sub_scalar(bound)?
        .requires_grad_(true)
}

fn main() -> Result<()> {
    manual_seed(0);
    let n = 256;
    let x = Tensor::linspace(-2.0, 2.0, n, DType::F32, Device::Cpu)?.reshape(&[n as isize, 1])?;
    let y = (x.mul_scalar(3.0)?.sin()? + &x.mul_scalar(0.3)?)?;

    let hidden = 64;
    let params = [
        param(&[1, hidden], 1)?,
        param(&[hidden], 1)?,
        param(&[hidden, hidden], hidden)?,
        param(&[hidden], hidden)?,
        param(&[hidden, 1], hidden)?,
        param(&[1], hidden)?,
    ];
    let velocity: Vec<Tensor> = params
        .iter()
        .map(|p| p.zeros_like())
        .collect::<Result<_>>()?;
    let (lr, momentum) = (0.05, 0.9);

    let forward = |x: &Tensor| -> Result<Tensor> {
        let h = x.matmul(&params[0])?.add(&params[1])?.tanh()?;
        let h = h.matmul(&params[2])?.add(&params[3])?.tanh()?;
        h.matmul(&params[4])?.add(&params[5])
    };

    let mut first = None;
    let mut last = 0.0;
    for step in 0..=2000 {
        let loss = forward(&x)?.sub(&y)?.square()?.mean_all()?;
        last = loss.item::<f32>()?;
        first.get_or_insert(last);
        if step % 200 == 0 {
            println!("step {step:>5}  loss {last:.6}");
        }
        loss.backward()?;
        let _guard = no_grad();
        for (p, v) in params.iter().zip(velocity.iter()) {
            let g = p.grad().expect("every parameter is used");
            v.mul_scalar_(momentum)?.add_(&g)?;
            p.sub_(&v.mul_scalar(lr)?)?;
            p.set_grad(None);
        }
    }
    let first = first.unwrap_or(last);
    println!("loss {first:.6} -> {last:.6}");
    if last * 10.0 > first {
        eprintln!("error: the loss did not fall by 10x");
        std::process::exit(1);
    }
    Ok(())
}
