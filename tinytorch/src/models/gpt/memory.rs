//! Peak memory of one GPT training step with and without gradient checkpointing: what
//! `examples/checkpoint_memory.rs` prints and `tests/checkpoint_memory.rs` checks.

use super::{Gpt, GptConfig};
use crate::error::Result;
use crate::nn::Module;
use crate::tensor::memory::{max_memory_allocated, memory_allocated, reset_peak_memory_stats};
use crate::tensor::{manual_seed, Device, Tensor};

/// The bytes of one training step (forward, loss, backward), above what was live before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepMemory {
    /// Peak tensor bytes during the step, above the bytes live before it (parameters,
    /// batch): activations, saved tensors, gradients.
    pub peak_above_start: usize,
    /// Bytes live before the step.
    pub start: usize,
}

/// Measure one CPU training step of a fresh model of `config` on a random `(batch, block)`
/// batch, with blocks checkpointed or not. The counters are process-wide: run it where no
/// other thread allocates tensors.
pub fn training_step_memory(
    config: GptConfig,
    batch: usize,
    checkpointed: bool,
) -> Result<StepMemory> {
    manual_seed(0);
    let mut model = Gpt::new(config)?;
    model.set_gradient_checkpointing(checkpointed);
    let t = config.block_size;
    let idx = Tensor::randint(0, config.vocab_size as i64, &[batch, t], Device::Cpu)?;
    let targets = Tensor::randint(0, config.vocab_size as i64, &[batch, t], Device::Cpu)?;
    let start = memory_allocated(Device::Cpu);
    reset_peak_memory_stats(Device::Cpu);
    let (loss, logits) = model.loss(&idx, &targets)?;
    drop(logits);
    loss.backward()?;
    let peak = max_memory_allocated(Device::Cpu);
    model.zero_grad();
    Ok(StepMemory {
        peak_above_start: peak.saturating_sub(start),
        start,
    })
}
