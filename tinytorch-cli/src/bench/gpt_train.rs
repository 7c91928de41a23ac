//! GPT training speed: one step (forward, cross-entropy, backward, AdamW step) of the
//! transformers issue's model: nanoGPT layout, 4 layers, d=128, 4 heads, context 64,
//! vocabulary 512, batch 16, random weights and tokens, no dropout.
//! `scripts/bench/bench_gpt_train_torch.py` builds the same model in PyTorch, runs this suite in
//! the same session and prints the ratio.

use super::timer::time_ms;
use std::time::Duration;
use tinytorch::benchmark::Summary;
use tinytorch::models::gpt::{Gpt, GptConfig};
use tinytorch::nn::Module;
use tinytorch::optim::{AdamOptions, AdamW, Optimizer};
use tinytorch::{manual_seed, Device, Result, Tensor};

/// The model of the row (PyTorch's twin in scripts/bench/bench_gpt_train_torch.py uses the same).
pub const CONFIG: GptConfig = GptConfig {
    vocab_size: 512,
    block_size: 64,
    n_layer: 4,
    n_head: 4,
    n_embd: 128,
    dropout: 0.0,
    bias: true,
};
/// Sequences per step.
pub const BATCH: usize = 16;

/// One training step of the row's model on fixed random tokens, as a closure to time.
pub fn step() -> Result<impl FnMut() -> Result<()>> {
    manual_seed(0);
    let c = CONFIG;
    let model = Gpt::new(c)?;
    let opts = AdamOptions {
        lr: 3e-4,
        betas: (0.9, 0.95),
        weight_decay: 0.1,
        ..Default::default()
    };
    let mut opt = AdamW::new(model.parameters(), opts)?;
    let shape = [BATCH, c.block_size];
    let v = c.vocab_size as i64;
    let x = Tensor::randint(0, v, &shape, Device::Cpu)?;
    let y = Tensor::randint(0, v, &shape, Device::Cpu)?;
    // The step on a compute thread, as `tinytorch lm train` runs it.
    Ok(move || -> Result<()> {
        tinytorch::parallel::run(|| {
            opt.zero_grad();
            let (loss, _) = model.loss(&x, &y)?;
            loss.backward()?;
            opt.step()
        })
    })
}

/// Milliseconds of one training step (at least `min_steps` timed steps after two warm-up
/// steps, more while `budget` lasts).
pub fn step_ms(min_steps: usize, budget: Duration) -> Result<Summary> {
    time_ms(min_steps, budget, step()?)
}
