//! Backends: per-device storage and the primitive kernels on it. A backend knows buffers,
//! layouts and dtypes, and nothing about autograd. `Storage` is the runtime-dispatched enum
//! over devices that `Tensor` holds; each device's storage implements `BackendStorage`.

pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
mod fused;
/// NCCL collectives on CUDA memory, the door the distributed layer's NCCL backend uses.
#[cfg(feature = "nccl")]
pub mod nccl;
mod op_kinds;
mod random;

/// An empty host buffer with room for `n` elements: an out-of-memory error, not an abort,
/// when the memory is not there (for the layers above, which name no device backend).
pub use cpu::allocator::try_take as try_host_buffer;
pub use cpu::{CpuElement, CpuStorage};
#[cfg(feature = "cuda")]
pub use cuda::CudaStorage;
pub use fused::*;
pub use op_kinds::{ArgReduceOp, BinaryOp, CmpOp, ReduceOp, ScanOp, UnaryOp};
pub use random::RandomDraw;

use crate::base::{DType, Device, Layout};
use crate::error::{Error, Result};

/// The primitive kernels of one device. Every layout argument describes where the operand's
/// elements sit in its buffer (any strides, any offset); outputs are new contiguous buffers
/// unless the method says it writes in place. Binary primitives receive operands of the same
/// dtype whose layouts have the same shape (broadcasting is applied by the caller with
/// stride-0 dims).
pub trait BackendStorage: Sized {
    /// The element type of the buffer.
    fn dtype(&self) -> DType;
    /// The device the buffer lives on.
    fn device(&self) -> Device;
    /// Number of elements in the buffer.
    fn len(&self) -> usize;
    /// True when the buffer holds no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copy the elements of `layout` in row-major order into a new buffer.
    fn to_contiguous(&self, layout: &Layout) -> Result<Self>;
    /// Convert the elements of `layout` to `dtype` (row-major output).
    fn to_dtype(&self, layout: &Layout, dtype: DType) -> Result<Self>;
    /// Apply `op` elementwise.
    fn unary(&self, layout: &Layout, op: UnaryOp) -> Result<Self>;
    /// Apply `op` elementwise, writing the result over the elements of `layout`.
    fn unary_inplace(&mut self, layout: &Layout, op: UnaryOp) -> Result<()>;
    /// `self[lhs] op rhs[rhs_l]` elementwise.
    fn binary(&self, lhs: &Layout, rhs: &Self, rhs_l: &Layout, op: BinaryOp) -> Result<Self>;
    /// `self[lhs] = self[lhs] op rhs[rhs_l]`; `rhs` must not alias `self`.
    fn binary_inplace(
        &mut self,
        lhs: &Layout,
        rhs: &Self,
        rhs_l: &Layout,
        op: BinaryOp,
    ) -> Result<()>;
    /// Elementwise predicate, bool output.
    fn cmp(&self, lhs: &Layout, rhs: &Self, rhs_l: &Layout, op: CmpOp) -> Result<Self>;
    /// `self` is a bool condition: picks `on_true` where true, `on_false` elsewhere.
    fn where_cond(
        &self,
        layout: &Layout,
        on_true: &Self,
        true_l: &Layout,
        on_false: &Self,
        false_l: &Layout,
    ) -> Result<Self>;
    /// Reduce over `dims` (sorted, unique); the output has the input's shape with those dims
    /// set to 1. All/Any give bool; Sum/Prod of bool and u8 give i64 as in PyTorch.
    fn reduce(&self, layout: &Layout, op: ReduceOp, dims: &[usize]) -> Result<Self>;
    /// Index of the max/min along `dim` (first occurrence); output i64 with `dim` set to 1.
    fn arg_reduce(&self, layout: &Layout, op: ArgReduceOp, dim: usize) -> Result<Self>;
    /// Inclusive scan along `dim`; output has the input's shape.
    fn scan(&self, layout: &Layout, op: ScanOp, dim: usize) -> Result<Self>;
    /// Numerically stable softmax (or log-softmax) along `dim`.
    fn softmax(&self, layout: &Layout, dim: usize, log: bool) -> Result<Self>;
    /// Batched matrix product of 3-D layouts `(b, m, k) x (b, k, n) -> (b, m, n)`, any strides
    /// (batch stride 0 for broadcast batches).
    fn matmul(&self, lhs: &Layout, rhs: &Self, rhs_l: &Layout) -> Result<Self>;
    /// Pick slices along `dim` by the i64 indices in `index` (1-D).
    fn index_select(
        &self,
        layout: &Layout,
        dim: usize,
        index: &Self,
        index_l: &Layout,
    ) -> Result<Self>;
    /// `out[i][j] = self[index[i][j]][j]` style gather along `dim`; output has index's shape.
    fn gather(&self, layout: &Layout, dim: usize, index: &Self, index_l: &Layout) -> Result<Self>;
    /// Scatter `src` into the elements of `self[layout]` at `index` along `dim`; with
    /// `accumulate` the values are added instead of written.
    #[allow(clippy::too_many_arguments)]
    fn scatter_inplace(
        &mut self,
        layout: &Layout,
        dim: usize,
        index: &Self,
        index_l: &Layout,
        src: &Self,
        src_l: &Layout,
        accumulate: bool,
    ) -> Result<()>;
    /// `self[layout].index_select(dim, index) += src` (PyTorch's `index_add_`).
    fn index_add_inplace(
        &mut self,
        layout: &Layout,
        dim: usize,
        index: &Self,
        index_l: &Layout,
        src: &Self,
        src_l: &Layout,
    ) -> Result<()>;
    /// Copy `src[src_l]` over `self[dst_l]` (same shape and dtype); `src` must not alias `self`.
    fn copy_strided_from(&mut self, dst_l: &Layout, src: &Self, src_l: &Layout) -> Result<()>;
    /// Set every element of `self[layout]` to `value`.
    fn fill(&mut self, layout: &Layout, value: f64) -> Result<()>;
    /// Stable sort along `dim`: (values, i64 indices).
    fn sort(&self, layout: &Layout, dim: usize, descending: bool) -> Result<(Self, Self)>;
    /// im2col of a 2-D convolution: `self[layout]` is the `(N, C, H, W)` input (any strides);
    /// the output is the contiguous `(C*kh*kw, N*OH*OW)` column matrix of `geom`, zero where
    /// a window reaches into the padding. Any dtype (it only moves elements).
    fn im2col(&self, layout: &Layout, geom: &ConvGeometry) -> Result<Self>;
    /// col2im, the adjoint of `im2col`: `self[layout]` is a `(C*kh*kw, N*OH*OW)` column
    /// matrix; the output is the contiguous `(N, C, H, W)` input-shaped sum of every column
    /// entry into the input element it was taken from. Float dtypes only.
    fn col2im(&self, layout: &Layout, geom: &ConvGeometry) -> Result<Self>;
}

/// Geometry of a 2-D sliding-window op (a convolution's im2col/col2im): sizes, and the
/// `(top, left)` zero padding. The bottom/right padding is implied by `output`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvGeometry {
    /// Number of images `N`.
    pub batch: usize,
    /// Input channels `C`.
    pub channels: usize,
    /// Input spatial size `(H, W)`.
    pub input: [usize; 2],
    /// Kernel size `(kh, kw)`.
    pub kernel: [usize; 2],
    /// Window step `(sh, sw)`, positive.
    pub stride: [usize; 2],
    /// Spacing of kernel taps `(dh, dw)`, positive.
    pub dilation: [usize; 2],
    /// Zero padding before the input `(top, left)`.
    pub padding: [usize; 2],
    /// Output spatial size `(OH, OW)`.
    pub output: [usize; 2],
}

impl ConvGeometry {
    /// The same convolution over `batch` images (a chunk of the batch).
    pub fn with_batch(&self, batch: usize) -> ConvGeometry {
        ConvGeometry { batch, ..*self }
    }

    /// Rows of the column matrix: `C * kh * kw`.
    pub fn rows(&self) -> usize {
        self.channels * self.kernel[0] * self.kernel[1]
    }

    /// Columns of the column matrix: `N * OH * OW`.
    pub fn cols(&self) -> usize {
        self.batch * self.output[0] * self.output[1]
    }

    /// Error unless `l` is an `(N, C, H, W)` input of this geometry inside a buffer of
    /// `buffer_len` elements (a kernel walking a malformed layout would read out of bounds).
    pub fn check_input(&self, l: &Layout, buffer_len: usize) -> Result<()> {
        let want = [self.batch, self.channels, self.input[0], self.input[1]];
        check_layout("im2col", "input", l, &want, buffer_len)
    }

    /// Error unless `l` is a `(C*kh*kw, N*OH*OW)` column matrix of this geometry inside a
    /// buffer of `buffer_len` elements.
    pub fn check_columns(&self, l: &Layout, buffer_len: usize) -> Result<()> {
        check_layout(
            "col2im",
            "columns",
            l,
            &[self.rows(), self.cols()],
            buffer_len,
        )
    }

    /// The `(channel, kernel row, kernel column)` of column-matrix row `r`.
    pub fn tap(&self, r: usize) -> (usize, usize, usize) {
        let taps = self.kernel[0] * self.kernel[1];
        let t = r % taps;
        (r / taps, t / self.kernel[1], t % self.kernel[1])
    }
}

/// Error unless layout `l` has shape `want` and stays inside a buffer of `buffer_len`.
fn check_layout(
    op: &'static str,
    what: &str,
    l: &Layout,
    want: &[usize],
    buffer_len: usize,
) -> Result<()> {
    if l.shape() != want {
        return Err(Error::shape(
            op,
            format!(
                "{what} layout {:?} does not match the geometry {want:?}",
                l.shape()
            ),
        ));
    }
    if l.storage_extent() > buffer_len {
        return Err(Error::invalid(
            op,
            format!("the {what} layout reaches past the end of its buffer"),
        ));
    }
    Ok(())
}

/// A buffer on some device. The enum is the runtime dispatch point: an op calls one method
/// here and the match sends it to that device's kernels.
#[derive(Debug)]
pub enum Storage {
    /// Host memory.
    Cpu(CpuStorage),
    /// Memory of one NVIDIA GPU.
    #[cfg(feature = "cuda")]
    Cuda(CudaStorage),
}

impl Storage {
    /// A zero-filled buffer of `n` elements.
    pub fn zeros(device: Device, dtype: DType, n: usize) -> Result<Storage> {
        match device {
            Device::Cpu => Ok(Storage::Cpu(CpuStorage::zeros(dtype, n)?)),
            #[cfg(feature = "cuda")]
            Device::Cuda(i) => Ok(Storage::Cuda(CudaStorage::zeros(i, dtype, n)?)),
            #[cfg(not(feature = "cuda"))]
            Device::Cuda(_) => Err(no_cuda("zeros")),
        }
    }

    /// `start + i * step` for i < n, in `dtype` on `device`: built on the device itself, so
    /// that a model's positions (`arange(T)` in each forward) cost no copy from the host.
    pub fn arange(
        device: Device,
        dtype: DType,
        n: usize,
        start: f64,
        step: f64,
    ) -> Result<Storage> {
        match device {
            Device::Cpu => {
                let values: Vec<f64> = (0..n).map(|i| start + i as f64 * step).collect();
                let cpu = CpuStorage::F64(values.into());
                if dtype == DType::F64 {
                    return Ok(Storage::Cpu(cpu));
                }
                Ok(Storage::Cpu(
                    cpu.to_dtype(&Layout::contiguous(&[n]), dtype)?,
                ))
            }
            #[cfg(feature = "cuda")]
            Device::Cuda(i) => Ok(Storage::Cuda(CudaStorage::arange(
                i, dtype, n, start, step,
            )?)),
            #[cfg(not(feature = "cuda"))]
            Device::Cuda(_) => Err(no_cuda("arange")),
        }
    }

    /// Move a host buffer to `device`.
    pub fn from_cpu(cpu: CpuStorage, device: Device) -> Result<Storage> {
        match device {
            Device::Cpu => Ok(Storage::Cpu(cpu)),
            #[cfg(feature = "cuda")]
            Device::Cuda(i) => Ok(Storage::Cuda(CudaStorage::from_cpu(&cpu, i)?)),
            #[cfg(not(feature = "cuda"))]
            Device::Cuda(_) => Err(no_cuda("to")),
        }
    }

    /// Copy the elements of `layout` to a contiguous host buffer.
    pub fn to_cpu(&self, layout: &Layout) -> Result<CpuStorage> {
        match self {
            Storage::Cpu(s) => s.to_contiguous(layout),
            #[cfg(feature = "cuda")]
            Storage::Cuda(s) => s.to_cpu(layout),
        }
    }

    /// The host buffer, when the storage is on the CPU.
    pub fn as_cpu(&self) -> Option<&CpuStorage> {
        match self {
            Storage::Cpu(s) => Some(s),
            #[cfg(feature = "cuda")]
            Storage::Cuda(_) => None,
        }
    }

    /// The host buffer for writing, when the storage is on the CPU.
    pub fn as_cpu_mut(&mut self) -> Option<&mut CpuStorage> {
        match self {
            Storage::Cpu(s) => Some(s),
            #[cfg(feature = "cuda")]
            Storage::Cuda(_) => None,
        }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            Storage::Cpu(s) => s.dtype(),
            #[cfg(feature = "cuda")]
            Storage::Cuda(s) => s.dtype(),
        }
    }

    /// The device.
    pub fn device(&self) -> Device {
        match self {
            Storage::Cpu(s) => s.device(),
            #[cfg(feature = "cuda")]
            Storage::Cuda(s) => s.device(),
        }
    }

    /// Number of elements in the buffer.
    pub fn len(&self) -> usize {
        match self {
            Storage::Cpu(s) => s.len(),
            #[cfg(feature = "cuda")]
            Storage::Cuda(s) => s.len(),
        }
    }

    /// True when the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Implements a `Storage` method with one storage operand by dispatching on the device.
macro_rules! dispatch_unary {
    ($(fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*) => {
        impl Storage {
            $(
                #[doc = concat!("Device dispatch of `BackendStorage::", stringify!($name), "`.")]
                pub fn $name(&self $(, $arg: $ty)*) -> Result<$ret> {
                    match self {
                        Storage::Cpu(s) => Ok(wrap_cpu(s.$name($($arg),*)?)),
                        #[cfg(feature = "cuda")]
                        Storage::Cuda(s) => Ok(wrap_cuda(s.$name($($arg),*)?)),
                    }
                }
            )*
        }
    };
}

/// Implements a `Storage` method with two or more storage operands, checking devices agree.
macro_rules! dispatch_binary {
    ($(fn $name:ident(&self, $l:ident: &Layout, $other:ident: &Storage $(, $arg:ident: $ty:ty)*) -> Storage;)*) => {
        impl Storage {
            $(
                #[doc = concat!("Device dispatch of `BackendStorage::", stringify!($name), "`.")]
                pub fn $name(&self, $l: &Layout, $other: &Storage $(, $arg: $ty)*) -> Result<Storage> {
                    match (self, $other) {
                        (Storage::Cpu(a), Storage::Cpu(b)) => Ok(Storage::Cpu(a.$name($l, b $(, $arg)*)?)),
                        #[cfg(feature = "cuda")]
                        (Storage::Cuda(a), Storage::Cuda(b)) => Ok(Storage::Cuda(a.$name($l, b $(, $arg)*)?)),
                        #[allow(unreachable_patterns)]
                        (a, b) => Err(mismatch(stringify!($name), a, b)),
                    }
                }
            )*
        }
    };
}

/// Wraps a CPU kernel's result back into `Storage`.
trait WrapCpu {
    type Out;
    fn wrap(self) -> Self::Out;
}
impl WrapCpu for CpuStorage {
    type Out = Storage;
    fn wrap(self) -> Storage {
        Storage::Cpu(self)
    }
}
impl WrapCpu for (CpuStorage, CpuStorage) {
    type Out = (Storage, Storage);
    fn wrap(self) -> (Storage, Storage) {
        (Storage::Cpu(self.0), Storage::Cpu(self.1))
    }
}
fn wrap_cpu<T: WrapCpu>(t: T) -> T::Out {
    t.wrap()
}

/// Wraps a CUDA kernel's result back into `Storage`.
#[cfg(feature = "cuda")]
trait WrapCuda {
    type Out;
    fn wrap(self) -> Self::Out;
}
#[cfg(feature = "cuda")]
impl WrapCuda for CudaStorage {
    type Out = Storage;
    fn wrap(self) -> Storage {
        Storage::Cuda(self)
    }
}
#[cfg(feature = "cuda")]
impl WrapCuda for (CudaStorage, CudaStorage) {
    type Out = (Storage, Storage);
    fn wrap(self) -> (Storage, Storage) {
        (Storage::Cuda(self.0), Storage::Cuda(self.1))
    }
}
#[cfg(feature = "cuda")]
fn wrap_cuda<T: WrapCuda>(t: T) -> T::Out {
    t.wrap()
}

/// The error for operands on different devices.
fn mismatch(op: &'static str, a: &Storage, b: &Storage) -> Error {
    Error::Device {
        op,
        lhs: a.device(),
        rhs: b.device(),
    }
}

dispatch_unary! {
    fn to_contiguous(&self, layout: &Layout) -> Storage;
    fn to_dtype(&self, layout: &Layout, dtype: DType) -> Storage;
    fn unary(&self, layout: &Layout, op: UnaryOp) -> Storage;
    fn reduce(&self, layout: &Layout, op: ReduceOp, dims: &[usize]) -> Storage;
    fn arg_reduce(&self, layout: &Layout, op: ArgReduceOp, dim: usize) -> Storage;
    fn scan(&self, layout: &Layout, op: ScanOp, dim: usize) -> Storage;
    fn softmax(&self, layout: &Layout, dim: usize, log: bool) -> Storage;
    fn im2col(&self, layout: &Layout, geom: &ConvGeometry) -> Storage;
    fn col2im(&self, layout: &Layout, geom: &ConvGeometry) -> Storage;
    fn sort(&self, layout: &Layout, dim: usize, descending: bool) -> (Storage, Storage);
}

dispatch_binary! {
    fn binary(&self, lhs: &Layout, rhs: &Storage, rhs_l: &Layout, op: BinaryOp) -> Storage;
    fn cmp(&self, lhs: &Layout, rhs: &Storage, rhs_l: &Layout, op: CmpOp) -> Storage;
    fn matmul(&self, lhs: &Layout, rhs: &Storage, rhs_l: &Layout) -> Storage;
}

impl Storage {
    /// Device dispatch of `BackendStorage::index_select`.
    pub fn index_select(
        &self,
        layout: &Layout,
        dim: usize,
        index: &Storage,
        index_l: &Layout,
    ) -> Result<Storage> {
        match (self, index) {
            (Storage::Cpu(a), Storage::Cpu(i)) => {
                Ok(Storage::Cpu(a.index_select(layout, dim, i, index_l)?))
            }
            #[cfg(feature = "cuda")]
            (Storage::Cuda(a), Storage::Cuda(i)) => {
                Ok(Storage::Cuda(a.index_select(layout, dim, i, index_l)?))
            }
            #[allow(unreachable_patterns)]
            (a, i) => Err(mismatch("index_select", a, i)),
        }
    }

    /// Device dispatch of `BackendStorage::gather`.
    pub fn gather(
        &self,
        layout: &Layout,
        dim: usize,
        index: &Storage,
        index_l: &Layout,
    ) -> Result<Storage> {
        match (self, index) {
            (Storage::Cpu(a), Storage::Cpu(i)) => {
                Ok(Storage::Cpu(a.gather(layout, dim, i, index_l)?))
            }
            #[cfg(feature = "cuda")]
            (Storage::Cuda(a), Storage::Cuda(i)) => {
                Ok(Storage::Cuda(a.gather(layout, dim, i, index_l)?))
            }
            #[allow(unreachable_patterns)]
            (a, i) => Err(mismatch("gather", a, i)),
        }
    }

    /// Device dispatch of `BackendStorage::where_cond`.
    pub fn where_cond(
        &self,
        layout: &Layout,
        on_true: &Storage,
        true_l: &Layout,
        on_false: &Storage,
        false_l: &Layout,
    ) -> Result<Storage> {
        match (self, on_true, on_false) {
            (Storage::Cpu(c), Storage::Cpu(t), Storage::Cpu(f)) => {
                Ok(Storage::Cpu(c.where_cond(layout, t, true_l, f, false_l)?))
            }
            #[cfg(feature = "cuda")]
            (Storage::Cuda(c), Storage::Cuda(t), Storage::Cuda(f)) => {
                Ok(Storage::Cuda(c.where_cond(layout, t, true_l, f, false_l)?))
            }
            #[allow(unreachable_patterns)]
            (c, t, f) => Err(mismatch(
                "where",
                c,
                if c.device() != t.device() { t } else { f },
            )),
        }
    }

    /// Device dispatch of `BackendStorage::unary_inplace`.
    pub fn unary_inplace(&mut self, layout: &Layout, op: UnaryOp) -> Result<()> {
        match self {
            Storage::Cpu(s) => s.unary_inplace(layout, op),
            #[cfg(feature = "cuda")]
            Storage::Cuda(s) => s.unary_inplace(layout, op),
        }
    }

    /// Device dispatch of `BackendStorage::binary_inplace`.
    pub fn binary_inplace(
        &mut self,
        lhs: &Layout,
        rhs: &Storage,
        rhs_l: &Layout,
        op: BinaryOp,
    ) -> Result<()> {
        match (self, rhs) {
            (Storage::Cpu(a), Storage::Cpu(b)) => a.binary_inplace(lhs, b, rhs_l, op),
            #[cfg(feature = "cuda")]
            (Storage::Cuda(a), Storage::Cuda(b)) => a.binary_inplace(lhs, b, rhs_l, op),
            #[allow(unreachable_patterns)]
            (a, b) => Err(mismatch("binary_", a, b)),
        }
    }

    /// Device dispatch of `BackendStorage::copy_strided_from`.
    pub fn copy_strided_from(
        &mut self,
        dst_l: &Layout,
        src: &Storage,
        src_l: &Layout,
    ) -> Result<()> {
        match (self, src) {
            (Storage::Cpu(a), Storage::Cpu(b)) => a.copy_strided_from(dst_l, b, src_l),
            #[cfg(feature = "cuda")]
            (Storage::Cuda(a), Storage::Cuda(b)) => a.copy_strided_from(dst_l, b, src_l),
            #[allow(unreachable_patterns)]
            (a, b) => Err(mismatch("copy_", a, b)),
        }
    }

    /// Device dispatch of `BackendStorage::fill`.
    pub fn fill(&mut self, layout: &Layout, value: f64) -> Result<()> {
        match self {
            Storage::Cpu(s) => s.fill(layout, value),
            #[cfg(feature = "cuda")]
            Storage::Cuda(s) => s.fill(layout, value),
        }
    }

    /// Device dispatch of `BackendStorage::scatter_inplace`.
    #[allow(clippy::too_many_arguments)]
    pub fn scatter_inplace(
        &mut self,
        layout: &Layout,
        dim: usize,
        index: &Storage,
        index_l: &Layout,
        src: &Storage,
        src_l: &Layout,
        accumulate: bool,
    ) -> Result<()> {
        match (self, index, src) {
            (Storage::Cpu(a), Storage::Cpu(i), Storage::Cpu(s)) => {
                a.scatter_inplace(layout, dim, i, index_l, s, src_l, accumulate)
            }
            #[cfg(feature = "cuda")]
            (Storage::Cuda(a), Storage::Cuda(i), Storage::Cuda(s)) => {
                a.scatter_inplace(layout, dim, i, index_l, s, src_l, accumulate)
            }
            #[allow(unreachable_patterns)]
            (a, i, s) => Err(mismatch(
                "scatter_",
                a,
                if a.device() != i.device() { i } else { s },
            )),
        }
    }

    /// Device dispatch of `BackendStorage::index_add_inplace`.
    pub fn index_add_inplace(
        &mut self,
        layout: &Layout,
        dim: usize,
        index: &Storage,
        index_l: &Layout,
        src: &Storage,
        src_l: &Layout,
    ) -> Result<()> {
        match (self, index, src) {
            (Storage::Cpu(a), Storage::Cpu(i), Storage::Cpu(s)) => {
                a.index_add_inplace(layout, dim, i, index_l, s, src_l)
            }
            #[cfg(feature = "cuda")]
            (Storage::Cuda(a), Storage::Cuda(i), Storage::Cuda(s)) => {
                a.index_add_inplace(layout, dim, i, index_l, s, src_l)
            }
            #[allow(unreachable_patterns)]
            (a, i, s) => Err(mismatch(
                "index_add_",
                a,
                if a.device() != i.device() { i } else { s },
            )),
        }
    }
}

#[cfg(not(feature = "cuda"))]
fn no_cuda(op: &'static str) -> Error {
    Error::NotImplemented {
        op,
        what: "CUDA devices (this build has no CUDA backend)".into(),
    }
}

impl Device {
    /// Wait until the work queued on this device is done (`torch.cuda.synchronize()`), and
    /// report an error a kernel raised; a no-op on the CPU, whose ops finish before returning.
    pub fn synchronize(self) -> crate::Result<()> {
        match self {
            Device::Cpu => Ok(()),
            #[cfg(feature = "cuda")]
            Device::Cuda(i) => cuda::device::get(i)?.synchronize(),
            #[cfg(not(feature = "cuda"))]
            Device::Cuda(_) => Err(crate::Error::NotImplemented {
                op: "synchronize",
                what: "CUDA devices (this build has no CUDA backend)".into(),
            }),
        }
    }
}

impl Storage {
    /// Hand the buffer of a dying storage back to its device's cache: a large host buffer
    /// goes to the CPU's caching allocator (`cpu/allocator.rs`) for the next request of its size;
    /// CUDA buffers return to their pool when they drop.
    #[allow(irrefutable_let_patterns)] // refutable with the `cuda` feature
    pub fn release(&mut self) {
        if let Storage::Cpu(s) = self {
            cpu::allocator::recycle(std::mem::replace(s, CpuStorage::Bool(Vec::new().into())));
        }
    }
}
