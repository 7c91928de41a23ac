//! im2col / col2im on CUDA (kernels/conv.cu); the convolution itself is a cuBLAS matmul of
//! the column matrix, driven by ops/conv/im2col.rs exactly as on the CPU.

use super::launch::{grid, launch};
use super::{suffix, CudaStorage};
use crate::backend::ConvGeometry;
use crate::base::Layout;
use crate::error::{Error, Result};
use cudarc::driver::DeviceRepr;

/// `struct Geometry` of conv.cu.
#[repr(C)]
#[derive(Clone, Copy)]
struct KGeometry([i64; 14]);

// SAFETY: a `repr(C)` array of i64, laid out as the C struct of 14 i64 fields.
unsafe impl DeviceRepr for KGeometry {}

impl From<&ConvGeometry> for KGeometry {
    fn from(g: &ConvGeometry) -> Self {
        let v = [
            g.batch,
            g.channels,
            g.input[0],
            g.input[1],
            g.kernel[0],
            g.kernel[1],
            g.stride[0],
            g.stride[1],
            g.dilation[0],
            g.dilation[1],
            g.padding[0],
            g.padding[1],
            g.output[0],
            g.output[1],
        ];
        KGeometry(v.map(|x| x as i64))
    }
}

pub fn im2col(x: &CudaStorage, l: &Layout, g: &ConvGeometry) -> Result<CudaStorage> {
    g.check_input(l, x.len)?;
    let total = g.rows() * g.cols();
    let out = x.alloc_like(x.dtype, total)?;
    if total > 0 {
        let s = l.strides();
        let (sn, sc, sy, sx) = (s[0] as i64, s[1] as i64, s[2] as i64, s[3] as i64);
        let name = format!("im2col_{}", suffix(x.dtype));
        launch!(
            &x.dev,
            "conv",
            name,
            grid(total),
            total as i64,
            KGeometry::from(g),
            l.offset() as i64,
            sn,
            sc,
            sy,
            sx,
            x.ptr(),
            out.ptr()
        );
    }
    Ok(out)
}

pub fn col2im(cols: &CudaStorage, l: &Layout, g: &ConvGeometry) -> Result<CudaStorage> {
    g.check_columns(l, cols.len)?;
    if !cols.dtype.is_float() {
        return Err(Error::unsupported_dtype("col2im", cols.dtype));
    }
    let total = g.batch * g.channels * g.input[0] * g.input[1];
    let out = cols.alloc_like(cols.dtype, total)?;
    if total > 0 {
        let (srow, scol) = (l.strides()[0] as i64, l.strides()[1] as i64);
        let name = format!("col2im_{}", suffix(cols.dtype));
        launch!(
            &cols.dev,
            "conv",
            name,
            grid(total),
            total as i64,
            KGeometry::from(g),
            l.offset() as i64,
            srow,
            scol,
            cols.ptr(),
            out.ptr()
        );
    }
    Ok(out)
}
