//! Runs training steps of a built-in model in a loop, for profilers (`perf record`,
//! `valgrind --tool=callgrind`): `cargo run --release -p tinytorch --example profile_step --
//! MODEL [STEPS] [BATCH]` with MODEL one of mlp, seed-cnn, lenet5, resnet20 (SGD step on
//! random images) or gpt (the small GPT of `tinytorch bench`: 4 layers, d=128, context 64,
//! AdamW; BATCH sequences, default 16). Prints the median and mean step times. Same steps as
//! `tinytorch bench --suite cpu`'s train_step rows. With `AMP=bf16` in the environment the
//! forward pass and the loss run under `autocast(bf16)`, as `tinytorch train --amp bf16`.

use std::time::Instant;
use tinytorch::models::gpt::{Gpt, GptConfig};
use tinytorch::models::{ImageShape, ModelKind};
use tinytorch::nn::functional::cross_entropy;
use tinytorch::nn::{Module, Reduction};
use tinytorch::optim::{AdamOptions, AdamW, Optimizer, SgdOptions, SGD};
use tinytorch::{manual_seed, DType, Device, Result, Tensor};

/// `autocast(bf16)` when `AMP=bf16` is set, else nothing.
fn amp_guard() -> Result<Option<tinytorch::amp::AutocastGuard>> {
    match std::env::var("AMP").as_deref() {
        Ok("bf16") => Ok(Some(tinytorch::amp::autocast(DType::BF16)?)),
        _ => Ok(None),
    }
}

/// One image-classifier step: forward, cross-entropy, backward, SGD.
fn image_step(kind: ModelKind, batch: usize) -> Result<Box<dyn FnMut() -> Result<()> + Send>> {
    let shape = if kind == ModelKind::ResNet20 {
        ImageShape::CIFAR
    } else {
        ImageShape::MNIST
    };
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
    Ok(Box::new(move || {
        opt.zero_grad();
        let loss = {
            let _amp = amp_guard()?;
            let logits = model.forward(&x)?;
            cross_entropy(&logits, &y, None, -100, Reduction::Mean, 0.0)?
        };
        loss.backward()?;
        opt.step()
    }))
}

/// One GPT step: forward, token cross-entropy, backward, AdamW.
fn gpt_step(batch: usize) -> Result<Box<dyn FnMut() -> Result<()> + Send>> {
    let c = GptConfig {
        vocab_size: 512,
        block_size: 64,
        n_layer: 4,
        n_head: 4,
        n_embd: 128,
        dropout: 0.0,
        bias: true,
    };
    let model = Gpt::new(c)?;
    let opts = AdamOptions {
        lr: 3e-4,
        betas: (0.9, 0.95),
        weight_decay: 0.1,
        ..Default::default()
    };
    let mut opt = AdamW::new(model.parameters(), opts)?;
    let v = c.vocab_size as i64;
    let x = Tensor::randint(0, v, &[batch, c.block_size], Device::Cpu)?;
    let y = Tensor::randint(0, v, &[batch, c.block_size], Device::Cpu)?;
    Ok(Box::new(move || {
        opt.zero_grad();
        let loss = {
            let _amp = amp_guard()?;
            model.loss(&x, &y)?.0
        };
        loss.backward()?;
        opt.step()
    }))
}

fn main() -> Result<()> {
    // As the `tinytorch` command does: the main thread is compute thread 0.
    tinytorch::parallel::use_current_thread()?;
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map_or("mlp", |s| s.as_str());
    let steps: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100);
    let batch: Option<usize> = args.get(3).and_then(|s| s.parse().ok());
    manual_seed(0);
    let mut step = if name == "gpt" {
        gpt_step(batch.unwrap_or(16))?
    } else {
        image_step(name.parse()?, batch.unwrap_or(64))?
    };
    let mut times = Vec::with_capacity(steps);
    for _ in 0..steps {
        let t = Instant::now();
        tinytorch::parallel::run(&mut step)?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    // The mean is what a whole epoch's samples/s sees (slow steps included).
    let mean = times.iter().sum::<f64>() / steps as f64;
    times.sort_by(f64::total_cmp);
    println!(
        "{name} x{steps}: median {:.4} ms, mean {mean:.4} ms",
        times[steps / 2]
    );
    Ok(())
}
