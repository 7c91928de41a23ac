//! The roofline model: a device's peak compute (FLOP/s, from a large f32 matrix product) and
//! memory bandwidth (bytes/s, from a large element-wise add), measured once per device and
//! process. An op whose arithmetic intensity (FLOPs per byte moved) lies below the ridge
//! point (peak FLOP/s over peak bytes/s) is memory-bound: bandwidth, not arithmetic, limits
//! it.

use crate::base::{DType, Device};
use crate::error::Result;
use crate::tensor::Tensor;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

/// A device's measured peaks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Machine {
    /// f32 FLOP/s of a 1024 x 1024 x 1024 matrix product.
    pub peak_flops: f64,
    /// Bytes/s of `a + b` over 16 Mi-element f32 tensors (two reads and a write each).
    pub peak_bandwidth: f64,
}

/// What limits an op on the roofline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// Its intensity is at or above the ridge point.
    Compute,
    /// Its intensity is below the ridge point (every op without FLOPs).
    Memory,
}

impl Bound {
    /// `"compute"` or `"memory"`.
    pub fn name(self) -> &'static str {
        match self {
            Bound::Compute => "compute",
            Bound::Memory => "memory",
        }
    }
}

impl Machine {
    /// FLOPs per byte where the two roofs meet.
    pub fn ridge(&self) -> f64 {
        self.peak_flops / self.peak_bandwidth
    }

    /// Whether `flops` over `bytes` is compute- or memory-bound here.
    pub fn bound(&self, flops: u64, bytes: u64) -> Bound {
        if flops > 0 && flops as f64 >= self.ridge() * bytes as f64 {
            Bound::Compute
        } else {
            Bound::Memory
        }
    }

    /// The best FLOP/s the roofline allows at `flops` over `bytes`.
    pub fn attainable(&self, flops: u64, bytes: u64) -> f64 {
        if bytes == 0 {
            return self.peak_flops;
        }
        self.peak_flops
            .min(flops as f64 / bytes as f64 * self.peak_bandwidth)
    }

    /// The peaks of `device`, measured the first time it is asked for (about a second).
    pub fn of(device: Device) -> Result<Machine> {
        static MEASURED: OnceLock<Mutex<HashMap<Device, Machine>>> = OnceLock::new();
        let cache = MEASURED.get_or_init(Default::default);
        if let Some(m) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&device) {
            return Ok(*m);
        }
        let m = Machine::measure(device)?;
        cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(device, m);
        Ok(m)
    }

    /// Measure the peaks of `device` now: the best of several runs of each kernel.
    pub fn measure(device: Device) -> Result<Machine> {
        let _guard = crate::autograd::no_grad();
        let n = 1024;
        let a = Tensor::randn(&[n, n], DType::F32, Device::Cpu)?.to_device(device)?;
        let b = Tensor::randn(&[n, n], DType::F32, Device::Cpu)?.to_device(device)?;
        let matmul = best_seconds(6, || {
            drop(a.matmul(&b)?);
            device.synchronize()
        })?;
        let len = 16 << 20;
        let x = Tensor::ones(&[len], DType::F32, device)?;
        let y = Tensor::ones(&[len], DType::F32, device)?;
        let add = best_seconds(6, || {
            drop(x.add(&y)?);
            device.synchronize()
        })?;
        Ok(Machine {
            peak_flops: 2.0 * (n * n * n) as f64 / matmul,
            peak_bandwidth: (3 * len * 4) as f64 / add,
        })
    }
}

/// The fastest of `runs` calls of `f` (after one warm-up), in seconds.
fn best_seconds(runs: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    let mut best = f64::INFINITY;
    for _ in 0..runs {
        let start = Instant::now();
        f()?;
        best = best.min(start.elapsed().as_secs_f64());
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_fall_on_either_side_of_the_ridge() {
        let m = Machine {
            peak_flops: 100e9,
            peak_bandwidth: 10e9,
        };
        assert_eq!(m.ridge(), 10.0);
        assert_eq!(m.bound(1000, 10), Bound::Compute);
        assert_eq!(m.bound(50, 10), Bound::Memory);
        assert_eq!(m.bound(0, 10), Bound::Memory);
        assert_eq!(m.attainable(50, 10), 50e9);
        assert_eq!(m.attainable(1000, 10), 100e9);
    }
}
