//! The one error type of TinyTorch. Every message names the operation and the shapes, dtypes,
//! devices or values at fault, so a user can fix the call without reading the source.

use crate::base::{DType, Device};

/// Everything that can go wrong in a TinyTorch call.
#[derive(thiserror::Error, Debug)]
pub enum Error {
    /// Shapes that do not fit the operation (broadcasting, matmul, reshape, cat, ...).
    #[error("{op}: shape mismatch: {msg}")]
    Shape { op: &'static str, msg: String },

    /// A dtype the operation does not accept, or two dtypes that must agree.
    #[error("{op}: dtype mismatch: {msg}")]
    DType { op: &'static str, msg: String },

    /// Tensors on different devices, or a device that is not available.
    #[error("{op}: expected all tensors on the same device, got {lhs} and {rhs}")]
    Device {
        op: &'static str,
        lhs: Device,
        rhs: Device,
    },

    /// A dimension or element index outside its range.
    #[error("{op}: index out of range: {msg}")]
    Index { op: &'static str, msg: String },

    /// Any other invalid argument (negative step, bad padding mode, ...).
    #[error("{op}: invalid argument: {msg}")]
    Invalid { op: &'static str, msg: String },

    /// A matrix the linear-algebra routine cannot handle: singular for an inverse or solve,
    /// not positive definite for Cholesky (PyTorch's `torch.linalg.LinAlgError`). The
    /// message is PyTorch's.
    #[error("{op}: {msg}")]
    LinAlg { op: &'static str, msg: String },

    /// Misuse of autograd: backward twice through a freed graph, in-place writes to saved tensors, ...
    #[error("autograd: {0}")]
    Autograd(String),

    /// A primitive that a backend does not implement (yet).
    #[error("{op}: not implemented for {what}")]
    NotImplemented { op: &'static str, what: String },

    /// A failure reported by CUDA (driver, NVRTC, cuBLAS) or a missing CUDA library.
    #[error("{op}: CUDA error: {msg}")]
    Cuda { op: &'static str, msg: String },

    /// A failed collective or process group: a peer that disagrees or never answers.
    #[error("{op}: distributed error: {msg}")]
    Distributed { op: &'static str, msg: String },

    /// An allocation the device refused, or a size too large to allocate at all (an element
    /// count times the dtype's size beyond what an address can hold). `bytes` is wide enough
    /// for the overflowing products, so the message names the size that was asked for.
    #[error("{}", out_of_memory_message(*device, *bytes))]
    OutOfMemory { device: Device, bytes: u128 },

    /// File and stream errors.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

/// PyTorch's wording, so that a user who searches for the message finds the answer that
/// applies (`DefaultCPUAllocator: not enough memory: you tried to allocate N bytes.` on the
/// CPU, `CUDA out of memory. Tried to allocate ...` on a GPU).
fn out_of_memory_message(device: Device, bytes: u128) -> String {
    let gib = bytes as f64 / (1u64 << 30) as f64;
    match device {
        Device::Cpu => format!(
            "DefaultCPUAllocator: not enough memory: you tried to allocate {bytes} bytes ({gib:.2} GiB)."
        ),
        Device::Cuda(i) => format!(
            "CUDA out of memory. Tried to allocate {bytes} bytes ({gib:.2} GiB) on GPU {i}, after freeing every cached buffer."
        ),
    }
}

/// `Result` with TinyTorch's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// A distributed error for operation `op`.
    pub fn distributed(op: &'static str, msg: impl Into<String>) -> Self {
        Error::Distributed {
            op,
            msg: msg.into(),
        }
    }

    /// A shape error for operation `op`.
    pub fn shape(op: &'static str, msg: impl Into<String>) -> Self {
        Error::Shape {
            op,
            msg: msg.into(),
        }
    }
    /// A dtype error for operation `op`.
    pub fn dtype(op: &'static str, msg: impl Into<String>) -> Self {
        Error::DType {
            op,
            msg: msg.into(),
        }
    }
    /// An index error for operation `op`.
    pub fn index(op: &'static str, msg: impl Into<String>) -> Self {
        Error::Index {
            op,
            msg: msg.into(),
        }
    }
    /// An invalid-argument error for operation `op`.
    pub fn invalid(op: &'static str, msg: impl Into<String>) -> Self {
        Error::Invalid {
            op,
            msg: msg.into(),
        }
    }
    /// The allocation of `n` elements of `dtype` on `device` failed (or `n` times the dtype's
    /// size overflows).
    pub fn out_of_memory(device: Device, dtype: DType, n: usize) -> Self {
        Error::OutOfMemory {
            device,
            bytes: n as u128 * dtype.size_in_bytes() as u128,
        }
    }
    /// A linear-algebra error (singular or not positive-definite input) for operation `op`.
    pub fn linalg(op: &'static str, msg: impl Into<String>) -> Self {
        Error::LinAlg {
            op,
            msg: msg.into(),
        }
    }
    /// A dtype the operation does not support.
    pub fn unsupported_dtype(op: &'static str, dtype: DType) -> Self {
        Error::DType {
            op,
            msg: format!("dtype {dtype} is not supported"),
        }
    }
}
