//! The CPU backend: `CpuStorage` (a typed [`Buffer`] per dtype, in the leaf `storage.rs`), its
//! `BackendStorage` primitives, and the kernels, one file per family of primitives. All
//! kernels walk their operands with `strided::MultiStrided`.

pub(crate) mod adam;
pub mod allocator;
pub(crate) mod attention;
pub(crate) mod attention_half;
pub(crate) mod batch_norm;
#[cfg(target_arch = "x86_64")]
pub(crate) mod bf16_gemm;
pub(crate) mod binary;
pub mod buffer;
pub(crate) mod conv;
mod convert;
pub(crate) mod cross_entropy;
mod fast_math;
pub(crate) mod float;
pub(crate) mod index;
pub(crate) mod matmul;
pub(crate) mod max_pool;
pub(crate) mod norm;
pub(crate) mod pixels;
pub(crate) mod reduce;
mod rows;
mod scan;
mod softmax;
pub(crate) mod special;
mod storage;
pub mod strided;
mod sync_ptr;
pub(crate) mod unary;
pub mod warm;

use crate::backend::{
    ArgReduceOp, BackendStorage, BinaryOp, CmpOp, ConvGeometry, ReduceOp, ScanOp, UnaryOp,
};
use crate::base::{DType, Device, Layout};
use crate::error::Result;
use crate::with_cpu_storage;

pub use buffer::Buffer;
pub use storage::{CpuElement, CpuStorage};

impl BackendStorage for CpuStorage {
    fn dtype(&self) -> DType {
        match self {
            CpuStorage::Bool(_) => DType::Bool,
            CpuStorage::U8(_) => DType::U8,
            CpuStorage::I32(_) => DType::I32,
            CpuStorage::I64(_) => DType::I64,
            CpuStorage::F16(_) => DType::F16,
            CpuStorage::BF16(_) => DType::BF16,
            CpuStorage::F32(_) => DType::F32,
            CpuStorage::F64(_) => DType::F64,
        }
    }

    fn device(&self) -> Device {
        Device::Cpu
    }

    fn len(&self) -> usize {
        with_cpu_storage!(self, v => v.len())
    }

    fn to_contiguous(&self, layout: &Layout) -> Result<Self> {
        Ok(convert::to_contiguous(self, layout))
    }

    fn to_dtype(&self, layout: &Layout, dtype: DType) -> Result<Self> {
        Ok(convert::to_dtype(self, layout, dtype))
    }

    fn unary(&self, layout: &Layout, op: UnaryOp) -> Result<Self> {
        unary::unary(self, layout, op)
    }

    fn unary_inplace(&mut self, layout: &Layout, op: UnaryOp) -> Result<()> {
        unary::unary_inplace(self, layout, op)
    }

    fn binary(&self, lhs: &Layout, rhs: &Self, rhs_l: &Layout, op: BinaryOp) -> Result<Self> {
        binary::binary(self, lhs, rhs, rhs_l, op)
    }

    fn binary_inplace(
        &mut self,
        lhs: &Layout,
        rhs: &Self,
        rhs_l: &Layout,
        op: BinaryOp,
    ) -> Result<()> {
        binary::binary_inplace(self, lhs, rhs, rhs_l, op)
    }

    fn cmp(&self, lhs: &Layout, rhs: &Self, rhs_l: &Layout, op: CmpOp) -> Result<Self> {
        binary::cmp(self, lhs, rhs, rhs_l, op)
    }

    fn where_cond(
        &self,
        layout: &Layout,
        on_true: &Self,
        true_l: &Layout,
        on_false: &Self,
        false_l: &Layout,
    ) -> Result<Self> {
        binary::where_cond(self, layout, on_true, true_l, on_false, false_l)
    }

    fn reduce(&self, layout: &Layout, op: ReduceOp, dims: &[usize]) -> Result<Self> {
        reduce::reduce(self, layout, op, dims)
    }

    fn arg_reduce(&self, layout: &Layout, op: ArgReduceOp, dim: usize) -> Result<Self> {
        reduce::arg_reduce(self, layout, op, dim)
    }

    fn scan(&self, layout: &Layout, op: ScanOp, dim: usize) -> Result<Self> {
        scan::scan(self, layout, op, dim)
    }

    fn softmax(&self, layout: &Layout, dim: usize, log: bool) -> Result<Self> {
        softmax::softmax(self, layout, dim, log)
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
        convert::copy_strided_from(self, dst_l, src, src_l)
    }

    fn fill(&mut self, layout: &Layout, value: f64) -> Result<()> {
        convert::fill(self, layout, value);
        Ok(())
    }

    fn sort(&self, layout: &Layout, dim: usize, descending: bool) -> Result<(Self, Self)> {
        index::sort(self, layout, dim, descending)
    }

    fn im2col(&self, layout: &Layout, geom: &ConvGeometry) -> Result<Self> {
        conv::im2col::im2col(self, layout, geom)
    }

    fn col2im(&self, layout: &Layout, geom: &ConvGeometry) -> Result<Self> {
        conv::im2col::col2im(self, layout, geom)
    }
}
