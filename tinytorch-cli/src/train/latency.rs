//! `tinytorch eval --latency`: how fast a model answers and how much memory it takes, on
//! test images, without gradients: forward time at batch 1 and 64 (median, mean and 95%
//! confidence interval of many runs), and the most memory a batch-64 forward holds above what
//! was allocated before it (activations and scratch buffers, int8 layers' included).

use super::data::LoadedSplit;
use serde_json::{json, Value};
use tinytorch::benchmark::{measure, Summary};
use tinytorch::nn::Module;
use tinytorch::tensor::memory::{max_memory_allocated, memory_allocated, reset_peak_memory_stats};
use tinytorch::{no_grad, Device, Result};

/// Batch sizes timed.
const BATCHES: [usize; 2] = [1, 64];
/// Timed runs per batch size, after `WARMUP` untimed ones.
const RUNS: [usize; 2] = [200, 30];
const WARMUP: usize = 5;

/// The measurements of one model.
pub(super) struct Latency {
    /// Forward times at batch 1 and 64, in milliseconds.
    pub times: [Summary; 2],
    /// Peak bytes a batch-64 forward holds above what was allocated before it.
    pub peak_bytes: usize,
}

impl Latency {
    /// Time `model` on the first images of `test`.
    pub fn measure(model: &dyn Module, test: &LoadedSplit) -> Result<Latency> {
        let _guard = no_grad();
        let (images, _) = test.batches(64)?.next().expect("the test set has images")?;
        let mut times = Vec::new();
        for (batch, runs) in BATCHES.into_iter().zip(RUNS) {
            let x = images.narrow(0, 0, batch.min(images.shape()[0]))?;
            times.push(measure(WARMUP, runs, || model.forward(&x).map(drop))?);
        }
        let before = memory_allocated(Device::Cpu);
        reset_peak_memory_stats(Device::Cpu);
        drop(model.forward(&images)?);
        let peak_bytes = max_memory_allocated(Device::Cpu).saturating_sub(before);
        let [b1, b64]: [Summary; 2] = times.try_into().expect("two batch sizes");
        Ok(Latency {
            times: [b1, b64],
            peak_bytes,
        })
    }

    /// As JSON fields.
    pub fn to_json(&self) -> Value {
        let time = |s: &Summary| {
            json!({"median_ms": s.median, "mean_ms": s.mean, "ci95_ms": [s.ci95.0, s.ci95.1],
                   "runs": s.n})
        };
        json!({"latency_b1": time(&self.times[0]), "latency_b64": time(&self.times[1]),
               "peak_bytes_b64": self.peak_bytes})
    }

    /// As one line of text.
    pub fn describe(&self) -> String {
        let time =
            |s: &Summary| format!("{:.3} ms (95% CI {:.3}-{:.3})", s.mean, s.ci95.0, s.ci95.1);
        format!(
            "forward at batch 1 {}, at batch 64 {}; peak memory of a batch-64 forward {:.2} MB",
            time(&self.times[0]),
            time(&self.times[1]),
            self.peak_bytes as f64 / 1e6
        )
    }
}
