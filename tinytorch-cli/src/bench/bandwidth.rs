//! Memory bandwidth of the elementwise paths on a device: ReLU, add and a strided copy
//! (a transpose made contiguous) over 2^26 f32 elements (256 MiB per tensor), device
//! synchronised around every call, reported in GB/s of bytes read plus written. On a GPU the
//! ratio to the device's peak (from `--peak-gbs`, e.g. 3350 for an H100 SXM) says how close
//! a kernel comes to what the memory can do.

use super::layers::time_row_fn;
use std::time::Duration;
use tinytorch::benchmark::Summary;
use tinytorch::{DType, Device, Result, Tensor};

/// Elements per tensor: large enough to leave every cache, small enough for any GPU.
const N: usize = 1 << 26;

/// A row to time: name, bytes moved per call, the call.
type Case<'a> = (&'static str, f64, Box<dyn Fn() -> Result<()> + 'a>);

/// One measured row: name, bytes moved per call, milliseconds per call.
pub struct BandwidthRow {
    /// What the row does.
    pub name: &'static str,
    /// Bytes read plus written by one call.
    pub bytes: f64,
    /// Time of one call.
    pub stats: Summary,
}

impl BandwidthRow {
    /// Achieved bandwidth, at the median time.
    pub fn gbs(&self) -> f64 {
        self.bytes / 1e9 / (self.stats.median / 1e3)
    }
}

/// Time the rows on `device`.
pub fn rows(device: Device, budget: Duration) -> Result<Vec<BandwidthRow>> {
    let bytes = (N * 4) as f64;
    let a = Tensor::randn(&[N], DType::F32, Device::Cpu)?.to_device(device)?;
    let b = Tensor::randn(&[N], DType::F32, Device::Cpu)?.to_device(device)?;
    let square = a.reshape(&[1 << 13, 1 << 13])?.t()?;
    let cases: [Case; 3] = [
        ("relu", 2.0 * bytes, Box::new(|| a.relu().map(drop))),
        ("add", 3.0 * bytes, Box::new(|| a.add(&b).map(drop))),
        (
            "transpose copy",
            2.0 * bytes,
            Box::new(|| square.contiguous().map(drop)),
        ),
    ];
    cases
        .into_iter()
        .map(|(name, bytes, run)| {
            let stats = time_row_fn(&*run, device, budget)?;
            Ok(BandwidthRow { name, bytes, stats })
        })
        .collect()
}
