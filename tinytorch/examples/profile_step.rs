//! Runs training steps of a built-in model in a loop, for profilers (`perf record`,
//! `valgrind --tool=callgrind`): `cargo run --release -p tinytorch --example profile_step --
//! MODEL [STEPS] [BATCH]` with MODEL one of mlp, seed-cnn, lenet5, resnet20. Prints the median
//! step time. Same step as `tinytorch bench --suite cpu`'s train_step rows.

use std::time::Instant;
use tinytorch::models::{ImageShape, ModelKind};
use tinytorch::nn::functional::cross_entropy;
use tinytorch::nn::Reduction;
use tinytorch::optim::{Optimizer, SgdOptions, SGD};
use tinytorch::{manual_seed, DType, Device, Result, Tensor};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let kind: ModelKind = args.get(1).map_or("mlp", |s| s.as_str()).parse()?;
    let steps: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100);
    let batch: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(64);
    let shape = if kind == ModelKind::ResNet20 {
        ImageShape::CIFAR
    } else {
        ImageShape::MNIST
    };
    manual_seed(0);
    let mut model = kind.build(shape, 10)?;
    model.train();
    let sgd = SgdOptions {
        lr: 0.05,
        ..Default::default()
    };
    let mut opt = SGD::new(model.parameters(), sgd)?;
    let dims = [batch, shape.channels, shape.height, shape.width];
    let x = Tensor::rand(&dims, DType::F32, Device::Cpu)?;
    let y = Tensor::randint(0, 10, &[batch], Device::Cpu)?;
    let mut times = Vec::with_capacity(steps);
    for _ in 0..steps {
        let t = Instant::now();
        opt.zero_grad();
        let logits = model.forward(&x)?;
        cross_entropy(&logits, &y, None, -100, Reduction::Mean, 0.0)?.backward()?;
        opt.step()?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "{} x{steps}: median {:.4} ms",
        kind.name(),
        times[steps / 2]
    );
    Ok(())
}
