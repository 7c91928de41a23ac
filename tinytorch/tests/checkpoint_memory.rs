//! Gradient checkpointing lowers the peak memory of a GPT training step
//! (`models::gpt::memory`). One test in its own binary, so no other test's tensors move the
//! process-wide memory counters.

use tinytorch::models::gpt::memory::training_step_memory;
use tinytorch::models::gpt::GptConfig;

#[test]
fn checkpointed_gpt_step_peaks_lower() {
    let config = GptConfig {
        vocab_size: 64,
        block_size: 32,
        n_layer: 4,
        n_head: 4,
        n_embd: 64,
        dropout: 0.1,
        bias: true,
    };
    let plain = training_step_memory(config, 4, false).unwrap();
    let ckpt = training_step_memory(config, 4, true).unwrap();
    assert_eq!(plain.start, ckpt.start);
    // Four blocks' activations against one block's plus the four block inputs.
    assert!(
        ckpt.peak_above_start * 2 < plain.peak_above_start,
        "checkpointed peak {} vs plain {}",
        ckpt.peak_above_start,
        plain.peak_above_start
    );
}
