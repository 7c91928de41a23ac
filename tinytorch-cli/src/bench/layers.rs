//! The seed's layer table: conv2d, linear, relu, global average pooling and cross-entropy,
//! each timed forward + backward (a fixed random upstream gradient where the output is not a
//! scalar), with the device synchronised around every iteration. On CUDA: 20 warm-up and 80
//! timed iterations, and the L2 cache flushed (a ~96 MiB scratch sum) between families, as
//! the seed timed it. On the CPU, rows that would take more than ~0.5 s are scaled down in
//! batch and the iteration count is bounded by a time budget. Each JSON row carries its
//! parameters, so scripts/bench/bench_layers_torch.py times exactly the same work in PyTorch.

use super::timer::{time_fixed_ms, time_ms};
use serde_json::{json, Value};
use std::time::Duration;
use tinytorch::benchmark::Summary;
use tinytorch::nn::functional::cross_entropy;
use tinytorch::nn::Reduction;
use tinytorch::ops::ConvPadding;
use tinytorch::{DType, Device, Result, Tensor};

/// Conv rows: N, Ci, HW, Co, k, same padding.
const CONV: &[(usize, usize, usize, usize, usize, bool)] = &[
    (2, 8, 32, 16, 3, true),
    (4, 16, 32, 32, 3, true),
    (8, 32, 28, 64, 5, true),
    (16, 64, 28, 64, 3, true),
    (16, 1, 28, 8, 5, true),
    (32, 128, 16, 256, 3, true),
    (32, 128, 16, 32, 3, false),
    (64, 256, 14, 255, 3, true),
    (4, 64, 14, 128, 7, false),
    (32, 512, 7, 127, 3, true),
    (1, 3, 224, 64, 7, true),
    (2, 3, 224, 64, 7, true),
    (4, 64, 56, 128, 3, true),
    (8, 128, 56, 256, 3, true),
    (16, 256, 28, 255, 3, true),
    (1, 256, 8, 48, 1, true),
    (8, 48, 32, 96, 5, true),
    (256, 64, 8, 128, 3, true),
];
/// Linear rows: batch, in, out.
const LINEAR: &[(usize, usize, usize)] = &[
    (1, 4096, 4096),
    (4, 4096, 4096),
    (8, 3584, 3584),
    (16, 1024, 4096),
    (32, 768, 3072),
    (64, 512, 2048),
    (128, 784, 256),
    (256, 512, 512),
    (512, 256, 1024),
    (1024, 128, 512),
    (64, 2048, 512),
    (32, 8192, 2048),
];
/// ReLU rows: N, C, HW.
const RELU: &[(usize, usize, usize)] = &[
    (1, 64, 224),
    (2, 128, 112),
    (4, 256, 56),
    (8, 512, 28),
    (16, 1024, 14),
    (2, 2048, 7),
    (8, 32, 56),
    (32, 128, 16),
];
/// Global average pooling rows: N, C, HW.
const POOL: &[(usize, usize, usize)] = &[
    (1, 64, 224),
    (4, 256, 56),
    (16, 512, 14),
    (32, 128, 14),
    (16, 64, 32),
    (8, 512, 7),
];
/// Cross-entropy rows: N, classes.
const CROSS_ENTROPY: &[(usize, usize)] = &[
    (128, 10),
    (512, 16),
    (1024, 32),
    (4096, 48),
    (1024, 63),
    (4096, 1000),
    (8192, 32000),
];

/// Forward + backward FLOPs above which a CPU row is halved in batch (~0.5 s of PyTorch on
/// 2 cores).
const CPU_FLOP_BUDGET: f64 = 40e9;

/// One row: its family, parameters (as JSON, for the PyTorch script) and the closure timed.
pub struct LayerRow {
    /// The layer family (`conv2d`, `linear`, ...).
    pub family: &'static str,
    /// The row's shapes and options, as the PyTorch script reads them.
    pub params: Value,
    /// One forward and backward pass on inputs allocated once, outside the timing.
    pub run: Box<dyn Fn() -> Result<()>>,
}

fn randn(shape: &[usize], device: Device) -> Result<Tensor> {
    Tensor::randn(shape, DType::F32, Device::Cpu)?.to_device(device)
}

/// A fresh leaf on the same data each iteration, so gradients never accumulate.
fn leaf(t: &Tensor) -> Result<Tensor> {
    t.detach().requires_grad_(true)
}

/// The batch for a row on `device`: halved on the CPU until the row fits the budget.
fn batch_for(device: Device, n: usize, flops_per_sample: f64) -> usize {
    let mut n = n;
    while device.is_cpu() && n > 1 && 3.0 * flops_per_sample * n as f64 > CPU_FLOP_BUDGET {
        n /= 2;
    }
    n
}

/// Whether a row of a family with these parameters is asked for.
type Wanted<'a> = &'a dyn Fn(&str, &Value) -> bool;

/// The rows of the table on `device` whose family or parameters (as compact JSON, e.g.
/// `"ci":512`) contain `filter` (all without one); the other rows' inputs are never allocated.
pub fn rows(device: Device, filter: Option<&str>) -> Result<Vec<LayerRow>> {
    let wanted = |family: &str, params: &Value| {
        filter.is_none_or(|f| family.contains(f) || params.to_string().contains(f))
    };
    let mut rows = Vec::new();
    conv_rows(device, &wanted, &mut rows)?;
    linear_rows(device, &wanted, &mut rows)?;
    relu_rows(device, &wanted, &mut rows)?;
    pool_rows(device, &wanted, &mut rows)?;
    cross_entropy_rows(device, &wanted, &mut rows)?;
    Ok(rows)
}

/// The conv2d rows (forward with bias, backward from a random upstream gradient).
fn conv_rows(device: Device, wanted: Wanted<'_>, rows: &mut Vec<LayerRow>) -> Result<()> {
    for &(n, ci, hw, co, k, same) in CONV {
        let out_hw = if same { hw } else { hw - k + 1 };
        let per_sample = 2.0 * (co * ci * k * k * out_hw * out_hw) as f64;
        let n = batch_for(device, n, per_sample);
        let params = json!({"n": n, "ci": ci, "hw": hw, "co": co, "k": k, "padding": if same { "same" } else { "valid" }});
        if !wanted("conv2d", &params) {
            continue;
        }
        let (x, w, b) = (
            randn(&[n, ci, hw, hw], device)?,
            randn(&[co, ci, k, k], device)?,
            randn(&[co], device)?,
        );
        let g = randn(&[n, co, out_hw, out_hw], device)?;
        let pad = if same {
            ConvPadding::Same
        } else {
            ConvPadding::Valid
        };
        rows.push(LayerRow {
            family: "conv2d",
            params,
            run: Box::new(move || {
                let (x, w, b) = (leaf(&x)?, leaf(&w)?, leaf(&b)?);
                x.conv2d(&w, Some(&b), [1, 1], pad, [1, 1], 1)?
                    .backward_with(Some(&g), false)
            }),
        });
    }
    Ok(())
}

/// The linear rows.
fn linear_rows(device: Device, wanted: Wanted<'_>, rows: &mut Vec<LayerRow>) -> Result<()> {
    for &(n, fin, fout) in LINEAR {
        let n = batch_for(device, n, 2.0 * (fin * fout) as f64);
        let params = json!({"batch": n, "in": fin, "out": fout});
        if !wanted("linear", &params) {
            continue;
        }
        let (x, w, b, g) = (
            randn(&[n, fin], device)?,
            randn(&[fout, fin], device)?,
            randn(&[fout], device)?,
            randn(&[n, fout], device)?,
        );
        rows.push(LayerRow {
            family: "linear",
            params,
            run: Box::new(move || {
                let (x, w, b) = (leaf(&x)?, leaf(&w)?, leaf(&b)?);
                tinytorch::nn::functional::linear(&x, &w, Some(&b))?.backward_with(Some(&g), false)
            }),
        });
    }
    Ok(())
}

/// The relu rows.
fn relu_rows(device: Device, wanted: Wanted<'_>, rows: &mut Vec<LayerRow>) -> Result<()> {
    for &(n, c, hw) in RELU {
        let params = json!({"n": n, "c": c, "hw": hw});
        if !wanted("relu", &params) {
            continue;
        }
        let (x, g) = (
            randn(&[n, c, hw, hw], device)?,
            randn(&[n, c, hw, hw], device)?,
        );
        rows.push(LayerRow {
            family: "relu",
            params,
            run: Box::new(move || leaf(&x)?.relu()?.backward_with(Some(&g), false)),
        });
    }
    Ok(())
}

/// The global average pooling rows.
fn pool_rows(device: Device, wanted: Wanted<'_>, rows: &mut Vec<LayerRow>) -> Result<()> {
    for &(n, c, hw) in POOL {
        let params = json!({"n": n, "c": c, "hw": hw});
        if !wanted("global_avg_pool", &params) {
            continue;
        }
        let (x, g) = (
            randn(&[n, c, hw, hw], device)?,
            randn(&[n, c, 1, 1], device)?,
        );
        rows.push(LayerRow {
            family: "global_avg_pool",
            params,
            run: Box::new(move || {
                leaf(&x)?
                    .adaptive_avg_pool2d([1, 1])?
                    .backward_with(Some(&g), false)
            }),
        });
    }
    Ok(())
}

/// The cross-entropy rows (mean over the batch, so `backward` starts from the scalar).
fn cross_entropy_rows(device: Device, wanted: Wanted<'_>, rows: &mut Vec<LayerRow>) -> Result<()> {
    for &(n, classes) in CROSS_ENTROPY {
        let params = json!({"n": n, "classes": classes});
        if !wanted("cross_entropy", &params) {
            continue;
        }
        let logits = randn(&[n, classes], device)?;
        let targets: Vec<i64> = (0..n).map(|i| ((i * 7919) % classes) as i64).collect();
        let y = Tensor::from_vec(targets, &[n])?.to_device(device)?;
        rows.push(LayerRow {
            family: "cross_entropy",
            params,
            run: Box::new(move || {
                cross_entropy(&leaf(&logits)?, &y, None, -100, Reduction::Mean, 0.0)?.backward()
            }),
        });
    }
    Ok(())
}

/// Median milliseconds of one row: on CUDA 20 warm-up + 80 timed iterations, synchronised
/// around each; on the CPU 2 warm-up and at least 5 timed iterations, more while `budget`
/// lasts.
pub fn time_row(row: &LayerRow, device: Device, budget: Duration) -> Result<Summary> {
    time_row_fn(&*row.run, device, budget)
}

/// Milliseconds of `run` on `device` with the device synchronised around every call: on the CPU within `budget`, on a GPU 20 warm-up and 80 timed calls (the seed's
/// protocol).
pub fn time_row_fn(
    run: &dyn Fn() -> Result<()>,
    device: Device,
    budget: Duration,
) -> Result<Summary> {
    let timed = || -> Result<()> {
        device.synchronize()?;
        run()?;
        device.synchronize()
    };
    if device.is_cpu() {
        return time_ms(5, budget, timed);
    }
    time_fixed_ms(20, 80, timed)
}

/// Evict the GPU's L2 cache between families: sum a ~96 MiB scratch tensor.
pub fn flush_l2(device: Device) -> Result<()> {
    if device.is_cuda() {
        Tensor::ones(&[24 << 20], DType::F32, device)?.sum_all()?;
        device.synchronize()?;
    }
    Ok(())
}
