//! Batched matrix products through cuBLAS (`cublasGemmStridedBatchedEx`): f32 (TF32 only
//! when allowed, as in PyTorch), f64, and f16/bf16 with f32 accumulation. Operands with a
//! unit stride in either matrix dim are passed as they are (transposed when column-major);
//! others are copied to contiguous first. Integer products (i64, u8), which cuBLAS lacks,
//! run a kernel of their own (`kernels/matmul.cu`) on any strides.

use super::device::{allow_tf32, cuda_err};
use super::launch::{grid, launch, KStrides};
use super::{elementwise, suffix, CudaStorage};
use crate::base::{DType, Layout};
use crate::error::{Error, Result};
use cudarc::cublas::sys::{
    cublasComputeType_t, cublasGemmAlgo_t, cublasOperation_t, cudaDataType_t,
};
use std::ffi::c_void;

/// How cuBLAS reads one `(batch, rows, cols)` operand.
struct Operand {
    /// Stored column-major (its transpose is row-major).
    col_major: bool,
    ld: usize,
    batch_stride: usize,
    offset: usize,
}

/// The operand as stored, when one matrix dim has unit stride.
fn operand(l: &Layout) -> Option<Operand> {
    let (rows, cols) = (l.shape()[1], l.shape()[2]);
    let (s0, s1, s2) = (l.strides()[0], l.strides()[1], l.strides()[2]);
    let op = |col_major, ld| Operand {
        col_major,
        ld,
        batch_stride: s0,
        offset: l.offset(),
    };
    if (s2 == 1 || cols == 1) && (rows == 1 || s1 >= cols.max(1)) {
        Some(op(false, if rows == 1 { cols.max(1) } else { s1 }))
    } else if (s1 == 1 || rows == 1) && (cols == 1 || s2 >= rows.max(1)) {
        Some(op(true, if cols == 1 { rows.max(1) } else { s2 }))
    } else {
        None
    }
}

/// `(batch, m, k) @ (batch, k, n)` for integer operands, wrapping as on the CPU.
fn matmul_int(a: &CudaStorage, al: &Layout, b: &CudaStorage, bl: &Layout) -> Result<CudaStorage> {
    let (batch, m, k, n) = (al.shape()[0], al.shape()[1], al.shape()[2], bl.shape()[2]);
    let out = a.alloc_like(a.dtype, batch * m * n)?;
    if batch * m * n == 0 {
        return Ok(out);
    }
    let sa = KStrides::new("matmul", al.strides(), al.offset())?;
    let sb = KStrides::new("matmul", bl.strides(), bl.offset())?;
    launch!(
        &a.dev,
        "matmul",
        format!("matmul_int_{}", suffix(a.dtype)),
        grid(batch * m * n),
        batch as i64,
        m as i64,
        k as i64,
        n as i64,
        sa,
        a.ptr(),
        sb,
        b.ptr(),
        out.ptr()
    );
    Ok(out)
}

pub fn matmul(a: &CudaStorage, al: &Layout, b: &CudaStorage, bl: &Layout) -> Result<CudaStorage> {
    if matches!(a.dtype, DType::I64 | DType::I32 | DType::U8) {
        return matmul_int(a, al, b, bl);
    }
    // A layout cuBLAS cannot read directly is made contiguous (kept alive here).
    let (a_copy, b_copy);
    let (a, al, ao) = match operand(al) {
        Some(o) => (a, al.clone(), o),
        None => {
            a_copy = elementwise::to_contiguous(a, al)?;
            let l = Layout::contiguous(al.shape());
            let o = operand(&l).expect("contiguous is row-major");
            (&a_copy, l, o)
        }
    };
    let (b, bl, bo) = match operand(bl) {
        Some(o) => (b, bl.clone(), o),
        None => {
            b_copy = elementwise::to_contiguous(b, bl)?;
            let l = Layout::contiguous(bl.shape());
            let o = operand(&l).expect("contiguous is row-major");
            (&b_copy, l, o)
        }
    };
    let (batch, m, k, n) = (al.shape()[0], al.shape()[1], al.shape()[2], bl.shape()[2]);
    let dtype = a.dtype;
    let mut out = a.alloc_like(dtype, batch * m * n)?;
    if batch * m * n == 0 {
        return Ok(out);
    }
    if k == 0 {
        elementwise::fill(&mut out, &Layout::contiguous(&[batch * m * n]), 0.0)?;
        return Ok(out);
    }
    let f32_compute = if allow_tf32() {
        cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32
    } else {
        cublasComputeType_t::CUBLAS_COMPUTE_32F
    };
    let (data_type, compute) = match dtype {
        DType::F32 => (cudaDataType_t::CUDA_R_32F, f32_compute),
        DType::F64 => (
            cudaDataType_t::CUDA_R_64F,
            cublasComputeType_t::CUBLAS_COMPUTE_64F,
        ),
        // Half types accumulate in f32 (no TF32 question: their inputs have fewer bits).
        DType::F16 => (
            cudaDataType_t::CUDA_R_16F,
            cublasComputeType_t::CUBLAS_COMPUTE_32F,
        ),
        DType::BF16 => (
            cudaDataType_t::CUDA_R_16BF,
            cublasComputeType_t::CUBLAS_COMPUTE_32F,
        ),
        other => {
            return Err(Error::NotImplemented {
                op: "matmul",
                what: format!("{other} tensors on CUDA"),
            })
        }
    };
    // alpha and beta have the compute type: f64 for f64, f32 otherwise.
    let (alpha32, beta32, alpha64, beta64) = (1.0f32, 0.0f32, 1.0f64, 0.0f64);
    let (alpha, beta): (*const c_void, *const c_void) = if dtype == DType::F64 {
        (&alpha64 as *const f64 as _, &beta64 as *const f64 as _)
    } else {
        (&alpha32 as *const f32 as _, &beta32 as *const f32 as _)
    };
    let esize = dtype.size_in_bytes() as u64;
    let op_of = |o: &Operand| {
        if o.col_major {
            cublasOperation_t::CUBLAS_OP_T
        } else {
            cublasOperation_t::CUBLAS_OP_N
        }
    };
    let int = |v: usize| -> Result<i32> {
        i32::try_from(v).map_err(|_| {
            Error::invalid("matmul", format!("size {v} exceeds cuBLAS's 32-bit limit"))
        })
    };
    let blas = a.dev.blas()?;
    // cuBLAS works on the calling thread's current context, which the raw `result::` call
    // below does not set (cudarc's safe wrappers do): with two GPUs it could be the other's.
    a.dev
        .stream
        .context()
        .bind_to_thread()
        .map_err(|e| cuda_err("matmul", e))?;
    // Row-major C = A B is column-major C^T = B^T A^T: cuBLAS's first operand is B.
    // SAFETY: the pointers are live buffers of this device; the sizes, leading dimensions
    // and batch strides describe elements inside them (checked by the layouts).
    unsafe {
        cudarc::cublas::result::gemm_strided_batched_ex(
            *blas.handle(),
            op_of(&bo),
            op_of(&ao),
            int(n)?,
            int(m)?,
            int(k)?,
            alpha,
            (b.ptr() + bo.offset as u64 * esize) as *const c_void,
            data_type,
            int(bo.ld)?,
            bo.batch_stride as i64,
            (a.ptr() + ao.offset as u64 * esize) as *const c_void,
            data_type,
            int(ao.ld)?,
            ao.batch_stride as i64,
            beta,
            out.ptr() as *mut c_void,
            data_type,
            int(n)?,
            (m * n) as i64,
            int(batch)?,
            compute,
            cublasGemmAlgo_t::CUBLAS_GEMM_DFALT,
        )
    }
    .map_err(|e| cuda_err("matmul", e))?;
    Ok(out)
}
