//! Times one training step of the seed CNN (batch 64, 1x28x28): forward, cross-entropy,
//! backward, SGD step. Median of 5 steps after 1 warm-up, with the median forward (model +
//! loss) and backward times beside it to show where a step goes.
//!
//! Run: cargo run --release -p tinytorch --example seed_cnn_step

use std::time::Instant;
use tinytorch::nn::functional::cross_entropy;
use tinytorch::nn::{
    AdaptiveAvgPool2d, Conv2d, Flatten, Linear, Module, ReLU, Reduction, Sequential,
};
use tinytorch::ops::ConvPadding;
use tinytorch::optim::{Optimizer, SgdOptions, SGD};
use tinytorch::{manual_seed, DType, Device, Result, Tensor};

fn main() -> Result<()> {
    manual_seed(0);
    let pad = ConvPadding::Explicit(2, 2);
    let model = Sequential::new(vec![
        Box::new(Conv2d::new(1, 48, [5, 5], [1, 1], pad, [1, 1], 1, true)?),
        Box::new(ReLU::new()),
        Box::new(Conv2d::new(48, 96, [5, 5], [1, 1], pad, [1, 1], 1, true)?),
        Box::new(ReLU::new()),
        Box::new(AdaptiveAvgPool2d::new([1, 1])),
        Box::new(Flatten::default()),
        Box::new(Linear::new(96, 128, true)?),
        Box::new(ReLU::new()),
        Box::new(Linear::new(128, 10, true)?),
    ]);
    let mut opt = SGD::new(
        model.parameters(),
        SgdOptions {
            lr: 0.05,
            ..Default::default()
        },
    )?;
    let x = Tensor::rand(&[64, 1, 28, 28], DType::F32, Device::Cpu)?;
    let y = Tensor::randint(0, 10, &[64], Device::Cpu)?;
    let (mut steps, mut forwards, mut backwards) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..6 {
        let t = Instant::now();
        opt.zero_grad();
        let loss = cross_entropy(&model.forward(&x)?, &y, None, -100, Reduction::Mean, 0.0)?;
        let fwd = t.elapsed();
        loss.backward()?;
        let bwd = t.elapsed() - fwd;
        opt.step()?;
        if i > 0 {
            steps.push(t.elapsed().as_secs_f64() * 1e3);
            forwards.push(fwd.as_secs_f64() * 1e3);
            backwards.push(bwd.as_secs_f64() * 1e3);
        }
    }
    println!(
        "seed-cnn training step, batch 64: median {:.1} ms (forward {:.1} ms, backward {:.1} ms)",
        median(&mut steps),
        median(&mut forwards),
        median(&mut backwards)
    );
    Ok(())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}
