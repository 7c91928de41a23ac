//! The CUDA backend (feature `cuda`): `CudaStorage`, a byte buffer on one GPU with a dtype,
//! and the same primitives as the CPU backend as NVRTC-compiled kernels (kernels/*.cu) and
//! cuBLAS; convolutions through cuDNN where it loads (cudnn/). Libraries load at run time
//! (cudarc's dynamic loading), so a build needs no CUDA and a machine without a GPU gets an
//! `Err` from the first CUDA call, never a panic.
//!
//! All work goes to the device's one stream in order; only copies to the host synchronise,
//! and a training step makes one, for its loss (`CudaDevice::traffic` counts them).

pub(crate) mod adam;
pub(crate) mod attention;
pub(crate) mod batch_norm;
mod conv;
pub(crate) mod cross_entropy;
pub mod cudnn;
pub mod device;
mod elementwise;
pub mod event;
mod index;
pub mod kernels;
mod launch;
mod matmul;
pub(crate) mod norm;
pub mod op_codes;
pub mod random;
mod reduce;

pub use device::{
    allow_tf32, device_count, device_name, device_properties, is_available, nvrtc_available,
    set_allow_tf32, CudaDevice, DeviceProperties, Traffic,
};

use crate::backend::{
    ArgReduceOp, BackendStorage, BinaryOp, CmpOp, ConvGeometry, CpuStorage, ReduceOp, ScanOp,
    UnaryOp,
};
use crate::base::{DType, Device, Layout};
use crate::error::Result;
use cudarc::driver::{CudaSlice, DevicePtr};
use device::cuda_err;
use half::{bf16, f16};
use std::sync::Arc;

/// A buffer of `len` elements of `dtype` on one GPU. Dropping it returns the memory to the
/// device's cache.
pub struct CudaStorage {
    buf: Option<CudaSlice<u8>>,
    dtype: DType,
    len: usize,
    dev: Arc<CudaDevice>,
}

impl std::fmt::Debug for CudaStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CudaStorage({} x {} on {:?})",
            self.len, self.dtype, self.dev
        )
    }
}

impl Drop for CudaStorage {
    fn drop(&mut self) {
        if let Some(b) = self.buf.take() {
            self.dev.release(b);
        }
    }
}

/// View a typed host slice as bytes (every storage element type is plain old data; bool is
/// one byte holding 0 or 1).
fn as_bytes<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: T is a primitive number type (or bool) with no padding.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

/// Rebuild a typed Vec from bytes copied off the device.
fn from_bytes<T: Copy + Default>(bytes: &[u8]) -> Vec<T> {
    let n = bytes.len() / std::mem::size_of::<T>();
    let mut v = vec![T::default(); n];
    // SAFETY: the bytes were written from (or by a kernel as) valid values of T, so each
    // element is a valid bit pattern (bool bytes are 0 or 1).
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), v.as_mut_ptr() as *mut u8, bytes.len())
    };
    v
}

impl CudaStorage {
    /// An uninitialised buffer of `len` elements (every caller writes all of it).
    pub(crate) fn uninit(dev: &Arc<CudaDevice>, dtype: DType, len: usize) -> Result<Self> {
        // A byte count that overflows is a request no device can meet, not a wrapped size.
        let bytes = len
            .checked_mul(dtype.size_in_bytes())
            .ok_or_else(|| crate::Error::out_of_memory(Device::Cuda(dev.ordinal()), dtype, len))?;
        Ok(CudaStorage {
            buf: Some(dev.alloc(bytes)?),
            dtype,
            len,
            dev: dev.clone(),
        })
    }

    /// A zero-filled buffer on `cuda:ordinal`.
    pub fn zeros(ordinal: usize, dtype: DType, len: usize) -> Result<Self> {
        let dev = device::get(ordinal)?;
        let mut s = CudaStorage::uninit(&dev, dtype, len)?;
        dev.stream
            .memset_zeros(s.buf_mut())
            .map_err(|e| cuda_err("zeros", e))?;
        Ok(s)
    }

    /// `start + i * step` for i < n on `cuda:ordinal`, computed in f64 and converted as a
    /// fill converts (`arange` built on the device, not copied from the host).
    pub fn arange(ordinal: usize, dtype: DType, n: usize, start: f64, step: f64) -> Result<Self> {
        let dev = device::get(ordinal)?;
        let out = CudaStorage::uninit(&dev, dtype, n)?;
        elementwise::arange(&out, start, step)?;
        Ok(out)
    }

    /// Copy a host buffer to `cuda:ordinal`.
    pub fn from_cpu(cpu: &CpuStorage, ordinal: usize) -> Result<Self> {
        let dev = device::get(ordinal)?;
        let mut s = CudaStorage::uninit(&dev, cpu.dtype(), cpu.len())?;
        let bytes = crate::with_cpu_storage!(cpu, v => as_bytes(v));
        if !bytes.is_empty() {
            dev.count_copy_to_device();
            dev.stream
                .memcpy_htod(bytes, &mut s.buf_mut().slice_mut(..bytes.len()))
                .map_err(|e| cuda_err("to", e))?;
        }
        Ok(s)
    }

    /// Copy the elements of `layout` to a contiguous host buffer; waits for the device and
    /// reports an out-of-range index met by an earlier kernel.
    pub fn to_cpu(&self, layout: &Layout) -> Result<CpuStorage> {
        let contiguous;
        let src = if layout.is_contiguous() && layout.offset() == 0 && layout.numel() == self.len {
            self
        } else {
            contiguous = self.to_contiguous(layout)?;
            &contiguous
        };
        let nbytes = layout.numel() * self.dtype.size_in_bytes();
        let bytes = if nbytes == 0 {
            Vec::new()
        } else {
            self.dev.count_copy_to_host();
            self.dev
                .stream
                .clone_dtoh(&src.buf().slice(..nbytes))
                .map_err(|e| cuda_err("to", e))?
        };
        self.dev.synchronize()?;
        Ok(match self.dtype {
            DType::Bool => {
                CpuStorage::Bool(from_bytes::<u8>(&bytes).iter().map(|&b| b != 0).collect())
            }
            DType::U8 => CpuStorage::U8(bytes.into()),
            DType::I32 => CpuStorage::I32(from_bytes(&bytes).into()),
            DType::I64 => CpuStorage::I64(from_bytes(&bytes).into()),
            DType::F16 => CpuStorage::F16((from_bytes::<f16>(&bytes)).into()),
            DType::BF16 => CpuStorage::BF16((from_bytes::<bf16>(&bytes)).into()),
            DType::F32 => CpuStorage::F32(from_bytes(&bytes).into()),
            DType::F64 => CpuStorage::F64(from_bytes(&bytes).into()),
        })
    }

    /// The device this buffer lives on.
    pub fn cuda_device(&self) -> &Arc<CudaDevice> {
        &self.dev
    }

    fn buf(&self) -> &CudaSlice<u8> {
        self.buf.as_ref().expect("buffer present until drop")
    }

    fn buf_mut(&mut self) -> &mut CudaSlice<u8> {
        self.buf.as_mut().expect("buffer present until drop")
    }

    /// The device address of the buffer, as a kernel argument. Kernels index it with the
    /// layouts' element offsets.
    pub(crate) fn ptr(&self) -> u64 {
        let (p, _sync) = self.buf().device_ptr(&self.dev.stream);
        p
    }

    /// The device address of element `at` (an operand that starts inside the buffer).
    pub(crate) fn ptr_at(&self, at: usize) -> u64 {
        self.ptr() + (at * self.dtype.size_in_bytes()) as u64
    }

    /// A new buffer on the same device.
    pub(crate) fn alloc_like(&self, dtype: DType, len: usize) -> Result<Self> {
        CudaStorage::uninit(&self.dev, dtype, len)
    }

    /// A copy of the whole buffer.
    pub fn try_clone(&self) -> Result<Self> {
        let mut out = self.alloc_like(self.dtype, self.len)?;
        self.dev
            .stream
            .memcpy_dtod(self.buf(), out.buf_mut())
            .map_err(|e| cuda_err("clone", e))?;
        Ok(out)
    }
}

impl BackendStorage for CudaStorage {
    fn dtype(&self) -> DType {
        self.dtype
    }

    fn device(&self) -> Device {
        Device::Cuda(self.dev.ordinal())
    }

    fn len(&self) -> usize {
        self.len
    }

    fn to_contiguous(&self, layout: &Layout) -> Result<Self> {
        elementwise::to_contiguous(self, layout)
    }

    fn to_dtype(&self, layout: &Layout, dtype: DType) -> Result<Self> {
        elementwise::cast(self, layout, dtype)
    }

    fn unary(&self, layout: &Layout, op: UnaryOp) -> Result<Self> {
        elementwise::unary(self, layout, op)
    }

    fn unary_inplace(&mut self, layout: &Layout, op: UnaryOp) -> Result<()> {
        elementwise::unary_inplace(self, layout, op)
    }

    fn binary(&self, lhs: &Layout, rhs: &Self, rhs_l: &Layout, op: BinaryOp) -> Result<Self> {
        elementwise::binary(self, lhs, rhs, rhs_l, op)
    }

    fn binary_inplace(
        &mut self,
        lhs: &Layout,
        rhs: &Self,
        rhs_l: &Layout,
        op: BinaryOp,
    ) -> Result<()> {
        elementwise::binary_inplace(self, lhs, rhs, rhs_l, op)
    }

    fn cmp(&self, lhs: &Layout, rhs: &Self, rhs_l: &Layout, op: CmpOp) -> Result<Self> {
        elementwise::cmp(self, lhs, rhs, rhs_l, op)
    }

    fn where_cond(
        &self,
        layout: &Layout,
        on_true: &Self,
        true_l: &Layout,
        on_false: &Self,
        false_l: &Layout,
    ) -> Result<Self> {
        elementwise::where_cond(self, layout, on_true, true_l, on_false, false_l)
    }

    fn reduce(&self, layout: &Layout, op: ReduceOp, dims: &[usize]) -> Result<Self> {
        reduce::reduce(self, layout, op, dims)
    }

    fn arg_reduce(&self, layout: &Layout, op: ArgReduceOp, dim: usize) -> Result<Self> {
        reduce::arg_reduce(self, layout, op, dim)
    }

    fn scan(&self, layout: &Layout, op: ScanOp, dim: usize) -> Result<Self> {
        reduce::scan(self, layout, op, dim)
    }

    fn softmax(&self, layout: &Layout, dim: usize, log: bool) -> Result<Self> {
        reduce::softmax(self, layout, dim, log)
    }

    fn matmul(&self, lhs: &Layout, rhs: &Self, rhs_l: &Layout) -> Result<Self> {
        matmul::matmul(self, lhs, rhs, rhs_l)
    }

    fn index_select(
        &self,
        layout: &Layout,
        dim: usize,
        index: &Self,
        index_l: &Layout,
    ) -> Result<Self> {
        index::index_select(self, layout, dim, index, index_l)
    }

    fn gather(&self, layout: &Layout, dim: usize, index: &Self, index_l: &Layout) -> Result<Self> {
        index::gather(self, layout, dim, index, index_l)
    }

    fn scatter_inplace(
        &mut self,
        layout: &Layout,
        dim: usize,
        index: &Self,
        index_l: &Layout,
        src: &Self,
        src_l: &Layout,
        accumulate: bool,
    ) -> Result<()> {
        index::scatter_inplace(self, layout, dim, index, index_l, src, src_l, accumulate)
    }

    fn index_add_inplace(
        &mut self,
        layout: &Layout,
        dim: usize,
        index: &Self,
        index_l: &Layout,
        src: &Self,
        src_l: &Layout,
    ) -> Result<()> {
        index::index_add_inplace(self, layout, dim, index, index_l, src, src_l)
    }

    fn copy_strided_from(&mut self, dst_l: &Layout, src: &Self, src_l: &Layout) -> Result<()> {
        elementwise::copy_strided(self, dst_l, src, src_l)
    }

    fn fill(&mut self, layout: &Layout, value: f64) -> Result<()> {
        elementwise::fill(self, layout, value)
    }

    fn sort(&self, layout: &Layout, dim: usize, descending: bool) -> Result<(Self, Self)> {
        index::sort(self, layout, dim, descending)
    }

    fn im2col(&self, layout: &Layout, geom: &ConvGeometry) -> Result<Self> {
        conv::im2col(self, layout, geom)
    }

    fn col2im(&self, layout: &Layout, geom: &ConvGeometry) -> Result<Self> {
        conv::col2im(self, layout, geom)
    }
}

/// The kernel-name suffix of a dtype (`unary_f32`, `cast_i64_f16`, ...).
pub(crate) fn suffix(dtype: DType) -> &'static str {
    match dtype {
        DType::Bool => "bool",
        DType::U8 => "u8",
        DType::I32 => "i32",
        DType::I64 => "i64",
        DType::F16 => "f16",
        DType::BF16 => "bf16",
        DType::F32 => "f32",
        DType::F64 => "f64",
    }
}
