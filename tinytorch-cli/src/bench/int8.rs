//! The int8 suite: dynamically quantized Linear (`quant::DynamicQuantLinear`) beside the f32
//! Linear it came from, at batch 1, 16 and 64 and sizes from 784 -> 256 to 4096 -> 4096
//! (scripts/bench/bench_int8_torch.py adds PyTorch's `quantize_dynamic` beside them).

use super::timer::time_ms;
use std::time::Duration;
use tinytorch::autograd::no_grad;
use tinytorch::benchmark::Summary;
use tinytorch::nn::{Linear, Module};
use tinytorch::quant::DynamicQuantLinear;
use tinytorch::{DType, Device, Result, Tensor};

/// `(in_features, out_features)` of the rows.
const SIZES: [(usize, usize); 3] = [(784, 256), (1024, 1024), (4096, 4096)];
/// Batch sizes of the rows.
const BATCHES: [usize; 3] = [1, 16, 64];

/// One row: its parameters and the int8 and f32 timings.
pub struct Int8Row {
    /// `{"batch", "in", "out"}`.
    pub params: serde_json::Value,
    /// The quantized layer.
    pub int8: Summary,
    /// The f32 layer.
    pub f32: Summary,
}

/// Time every row (rows whose parameters do not contain `filter` are skipped).
pub fn rows(budget: Duration, filter: Option<&str>) -> Result<Vec<Int8Row>> {
    let _guard = no_grad();
    let mut out = Vec::new();
    for (k, n) in SIZES {
        let linear = Linear::new(k, n, true)?;
        let q = DynamicQuantLinear::from_linear(&linear)?;
        for batch in BATCHES {
            let params = serde_json::json!({"batch": batch, "in": k, "out": n});
            if filter.is_some_and(|f| !params.to_string().contains(f)) {
                continue;
            }
            let x = Tensor::randn(&[batch, k], DType::F32, Device::Cpu)?;
            let int8 = time_ms(5, budget, || q.forward(&x).map(drop))?;
            let f32 = time_ms(5, budget, || linear.forward(&x).map(drop))?;
            out.push(Int8Row { params, int8, f32 });
        }
    }
    Ok(out)
}
