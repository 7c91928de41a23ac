//! The door to the fused kernels that sit beside the primitives of [`BackendStorage`]: per
//! fused op, `Storage` methods that send it to its device's kernel, or answer "nothing done"
//! (`Ok(false)` / `Ok(None)`) where that device has none for these operands, so that the op
//! layer composes the op from primitives instead. The op layer calls these without naming a
//! device; each file here holds one family's operand and result types and its dispatch.
//!
//! Operands are contiguous runs of a buffer ([`Span`]); results are new contiguous buffers
//! (`Storage`) and, where a backward needs them, statistics the forward kept, opaque to the
//! op layer (they live wherever the device keeps them).
//!
//! [`BackendStorage`]: super::BackendStorage

mod adam;
mod attention;
mod conv;
mod cross_entropy;
mod matmul_bias;
mod norm;
mod pixels;
mod pointwise;
mod pool;

pub use adam::{AdamOperands, AdamStep};
pub use attention::{AttnConfig, AttnForward, AttnGrads, AttnOperand, AttnSaved};
pub use conv::{set_direct_convolution, set_winograd_convolution, Conv2dSpec, ConvPlan};
pub use cross_entropy::{CeForward, CeParams, CeReduction, CeRowGrad, CeSaved};
pub use norm::{
    BatchNormDims, BatchNormForward, BatchNormThen, NormForward, NormGrads, NormKind, NormSaved,
    NormWanted,
};
pub use pointwise::ActivationGrad;
pub use pool::PoolPlane;

use crate::backend::{BackendStorage, CpuElement, Storage};
use crate::base::{DType, Layout};
use crate::error::{Error, Result};

/// `len` elements of a buffer, contiguous from element `offset`: how a fused kernel reads an
/// operand in place.
#[derive(Clone, Copy)]
pub struct Span<'a> {
    /// The buffer.
    pub storage: &'a Storage,
    /// Where the operand starts, in elements.
    pub offset: usize,
    /// How many elements it has.
    pub len: usize,
}

impl<'a> Span<'a> {
    /// The operand's elements as a host slice of `T`; `None` for a buffer on another device
    /// or of another dtype.
    pub fn cpu<T: CpuElement>(&self) -> Option<&'a [T]> {
        let data = self.storage.as_cpu()?.as_slice::<T>()?;
        if self.len == 0 {
            return Some(&[]); // an empty view's offset may lie past its buffer
        }
        data.get(self.offset..self.offset + self.len)
    }

    /// [`Span::cpu`], or an error naming `op` and `what` (the operand).
    fn cpu_or_err<T: CpuElement>(&self, op: &'static str, what: &str) -> Result<&'a [T]> {
        self.cpu().ok_or_else(|| {
            Error::dtype(
                op,
                format!(
                    "{what} must be a host buffer of {} holding {} elements from {}, got {} on {}",
                    T::DTYPE,
                    self.len,
                    self.offset,
                    self.storage.dtype(),
                    self.storage.device()
                ),
            )
        })
    }

    /// The dtype of the buffer.
    pub fn dtype(&self) -> DType {
        self.storage.dtype()
    }

    /// Error naming `op` and `what` unless the operand has `want` elements (checked before a
    /// kernel indexes it).
    fn check_len(&self, op: &'static str, what: &str, want: usize) -> Result<()> {
        if self.len == want {
            return Ok(());
        }
        Err(Error::shape(
            op,
            format!("{what} has {} elements, {op} needs {want}", self.len),
        ))
    }
}

/// The GPU buffer of a storage the op's CUDA kernel reads; an error naming `op` for a host
/// buffer (operands on two devices).
#[cfg(feature = "cuda")]
fn cuda_buffer<'a>(op: &'static str, s: &'a Storage) -> Result<&'a crate::backend::CudaStorage> {
    match s {
        Storage::Cuda(c) => Ok(c),
        Storage::Cpu(_) => Err(Error::invalid(
            op,
            "every operand must be on the first operand's GPU, got a host buffer",
        )),
    }
}

/// A host vector as a buffer.
fn host<T: CpuElement>(v: Vec<T>) -> Storage {
    Storage::Cpu(crate::backend::CpuStorage::from_vec(v))
}

/// An f16/bf16 host operand of `op` as a new f32 buffer (every half value is exact in f32):
/// where a CPU kernel exists for f32 only, half-precision operands run it widened and the
/// results are rounded once ([`narrow`]).
fn widen(op: &'static str, s: Span<'_>, what: &str) -> Result<Storage> {
    let buffer = s
        .storage
        .as_cpu()
        .filter(|c| s.offset + s.len <= c.len())
        .ok_or_else(|| {
            Error::invalid(
                op,
                format!(
                    "{what} must be a host buffer holding {} elements from {}",
                    s.len, s.offset
                ),
            )
        })?;
    let layout = Layout::from_parts(vec![s.len], vec![1], s.offset);
    Ok(Storage::Cpu(buffer.to_dtype(&layout, DType::F32)?))
}

/// The whole of a buffer as an operand.
fn whole(s: &Storage) -> Span<'_> {
    Span {
        storage: s,
        offset: 0,
        len: s.len(),
    }
}

/// An f32 result of a CPU kernel of `op` rounded to `half` (to nearest even), as the
/// half-precision op's output.
fn narrow(op: &'static str, s: &Storage, half: DType) -> Result<Storage> {
    let buffer = s
        .as_cpu()
        .ok_or_else(|| Error::invalid(op, "the CPU kernel's result is not on the host"))?;
    Ok(Storage::Cpu(
        buffer.to_dtype(&Layout::contiguous(&[buffer.len()]), half)?,
    ))
}
