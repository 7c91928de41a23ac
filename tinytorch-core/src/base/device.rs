//! Where a tensor's storage lives. (Device work, such as `Device::synchronize`, is the
//! backend's: `backend/mod.rs`.)

use std::fmt;

/// A compute device. `Cpu` is always available; `Cuda(ordinal)` names an NVIDIA GPU and is
/// served by the `cuda` backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Device {
    /// Host memory, served by the CPU backend.
    #[default]
    Cpu,
    /// The NVIDIA GPU with this ordinal.
    Cuda(usize),
}

impl Device {
    /// True for `Device::Cpu`.
    pub fn is_cpu(self) -> bool {
        matches!(self, Device::Cpu)
    }
    /// True for any CUDA device.
    pub fn is_cuda(self) -> bool {
        matches!(self, Device::Cuda(_))
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Cuda(i) => write!(f, "cuda:{i}"),
        }
    }
}

impl std::str::FromStr for Device {
    type Err = crate::Error;

    /// `cpu`, `cuda` (ordinal 0) or `cuda:N`, as PyTorch spells devices.
    fn from_str(s: &str) -> crate::Result<Device> {
        let bad =
            || crate::Error::invalid("device", format!("expected cpu, cuda or cuda:N, got {s:?}"));
        match s {
            "cpu" => Ok(Device::Cpu),
            "cuda" => Ok(Device::Cuda(0)),
            _ => s
                .strip_prefix("cuda:")
                .and_then(|n| n.parse().ok())
                .map(Device::Cuda)
                .ok_or_else(bad),
        }
    }
}
