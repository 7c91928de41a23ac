//! Peak memory of one GPT training step (CPU) with and without gradient checkpointing of the
//! blocks: `cargo run -p tinytorch --example checkpoint_memory` (byte counts, the same in
//! any profile). The figures are in
//! docs/TESTING.md's checkpointing section.

use tinytorch::models::gpt::memory::training_step_memory;
use tinytorch::models::gpt::GptConfig;

fn main() -> tinytorch::Result<()> {
    // A GPT-2-small-shaped model, narrowed: 6 layers, 6 heads, 384 wide, 256 positions.
    let config = GptConfig {
        vocab_size: 4096,
        block_size: 256,
        n_layer: 6,
        n_head: 6,
        n_embd: 384,
        dropout: 0.1,
        bias: true,
    };
    let batch = 8;
    println!("GPT {config:?}, batch {batch}");
    let mib = |b: usize| b as f64 / (1024.0 * 1024.0);
    let plain = training_step_memory(config, batch, false)?;
    let ckpt = training_step_memory(config, batch, true)?;
    println!(
        "live before the step (parameters, batch): {:.1} MiB",
        mib(plain.start)
    );
    println!(
        "peak above that, plain:        {:.1} MiB",
        mib(plain.peak_above_start)
    );
    println!(
        "peak above that, checkpointed: {:.1} MiB",
        mib(ckpt.peak_above_start)
    );
    println!(
        "saved: {:.1} MiB ({:.0}%)",
        mib(plain.peak_above_start - ckpt.peak_above_start),
        100.0 * (1.0 - ckpt.peak_above_start as f64 / plain.peak_above_start as f64)
    );
    Ok(())
}
