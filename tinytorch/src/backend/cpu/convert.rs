//! Copies and casts: strided-to-contiguous, dtype conversion, strided writes and fills.

use super::strided::{map1, update1, update2};
use super::{CpuElement, CpuStorage};
use crate::backend::BackendStorage;
use crate::base::{DType, Element, Layout};
use crate::error::{Error, Result};
use crate::with_cpu_storage;
use half::{bf16, f16};

/// The elements of `layout` in row-major order.
pub fn to_contiguous(s: &CpuStorage, layout: &Layout) -> CpuStorage {
    if let Some((a, b)) = layout.contiguous_range() {
        return with_cpu_storage!(s, v => CpuStorage::from_vec(v[a..b].to_vec()));
    }
    with_cpu_storage!(s, v => CpuStorage::from_vec(map1(v, layout, |x| x)))
}

fn cast_vec<T: CpuElement, U: CpuElement>(v: &[T], layout: &Layout) -> CpuStorage {
    CpuStorage::from_vec(map1(v, layout, |x: T| U::from_f64(x.to_f64())))
}

/// The elements of `layout` converted to `dtype`. Floats to integers truncate toward zero
/// and bool is `x != 0`, as in PyTorch.
pub fn to_dtype(s: &CpuStorage, layout: &Layout, dtype: DType) -> CpuStorage {
    if s.dtype() == dtype {
        return to_contiguous(s, layout);
    }
    // f16/bf16 <-> f32 have dedicated conversions that skip the f64 detour.
    match (s, dtype) {
        (CpuStorage::F16(v), DType::F32) => {
            return CpuStorage::F32(map1(v, layout, |x| x.to_f32()).into())
        }
        (CpuStorage::BF16(v), DType::F32) => {
            return CpuStorage::F32(map1(v, layout, |x| x.to_f32()).into())
        }
        // Integer to integer wraps, as C++'s casts in PyTorch do (-1 becomes 255), where
        // the f64 detour would saturate.
        (CpuStorage::I64(v), DType::U8) => {
            return CpuStorage::U8(map1(v, layout, |x| x as u8).into())
        }
        (CpuStorage::F32(v), DType::F16) => {
            return CpuStorage::F16(map1(v, layout, f16::from_f32).into())
        }
        (CpuStorage::F32(v), DType::BF16) => {
            return CpuStorage::BF16(map1(v, layout, <bf16 as Element>::from_f32).into())
        }
        _ => {}
    }
    with_cpu_storage!(s, v => match dtype {
        DType::Bool => cast_vec::<_, bool>(v, layout),
        DType::U8 => cast_vec::<_, u8>(v, layout),
        DType::I64 => cast_vec::<_, i64>(v, layout),
        DType::F16 => cast_vec::<_, f16>(v, layout),
        DType::BF16 => cast_vec::<_, bf16>(v, layout),
        DType::F32 => cast_vec::<_, f32>(v, layout),
        DType::F64 => cast_vec::<_, f64>(v, layout),
    })
}

/// Copy `src[src_l]` over `dst[dst_l]`.
pub fn copy_strided_from(
    dst: &mut CpuStorage,
    dst_l: &Layout,
    src: &CpuStorage,
    src_l: &Layout,
) -> Result<()> {
    if dst.dtype() != src.dtype() {
        return Err(Error::dtype(
            "copy_",
            format!("destination {} vs source {}", dst.dtype(), src.dtype()),
        ));
    }
    with_cpu_storage!(dst, d => {
        let s = CpuElement::slice(src).expect("dtype checked above");
        update2(d, dst_l, s, src_l, |_, y| y);
    });
    Ok(())
}

/// Set every element of `layout` to `value` (converted to the dtype).
pub fn fill(dst: &mut CpuStorage, layout: &Layout, value: f64) {
    fn go<T: CpuElement>(d: &mut [T], layout: &Layout, value: f64) {
        let v = T::from_f64(value);
        update1(d, layout, |_| v);
    }
    with_cpu_storage!(dst, d => go(d, layout, value))
}
