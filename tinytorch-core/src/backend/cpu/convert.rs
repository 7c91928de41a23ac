//! Copies and casts: strided-to-contiguous, dtype conversion, strided writes and fills.

use super::strided::{map1, update1, update2, wide, Map1, MultiStrided};
use super::{CpuElement, CpuStorage};
use crate::backend::BackendStorage;
use crate::base::{DType, Element, Layout};
use crate::error::{Error, Result};
use crate::with_cpu_storage;
use half::{bf16, f16};
use std::mem::MaybeUninit;

/// The elements of `layout` in row-major order.
pub fn to_contiguous(s: &CpuStorage, layout: &Layout) -> CpuStorage {
    if let Some((a, b)) = layout.contiguous_range() {
        // Into a pooled buffer: a large copy (a `clone()`, a data set copied once) then gets
        // the cache's reuse and its 2 MiB pages instead of a fresh `mmap`.
        return with_cpu_storage!(s, v => {
            let mut out = super::allocator::take(b - a);
            out.extend_from_slice(&v[a..b]);
            CpuStorage::from_vec(out)
        });
    }
    with_cpu_storage!(s, v => CpuStorage::from_vec(map1(v, layout, |x| x)))
}

fn cast_vec<T: CpuElement, U: CpuElement>(v: &[T], layout: &Layout) -> CpuStorage {
    CpuStorage::from_vec(map1(v, layout, |x: T| U::from_f64(x.to_f64())))
}

/// `cast` of every element of `src[layout]`. Contiguous sources are cut into runs by the
/// strided walker as usual (in parallel above its threshold), and each run goes through
/// [`cast_run`]; the others take the generic `map1`.
fn cast_map<T: Copy + Sync, U: CpuElement>(
    src: &[T],
    layout: &Layout,
    cast: impl Fn(T) -> U + Sync + Copy,
) -> Vec<U> {
    if layout.contiguous_range().is_none() {
        return map1(src, layout, cast);
    }
    MultiStrided::new([layout]).collect_output(|out, run| {
        let [off] = run.offs;
        cast_run(out, &src[off..off + run.len], cast)
    })
}

/// `cast` of a contiguous run, in `wide`'s AVX-512 copy where the CPU has it: the bf16 casts
/// of autocast (weights and activations before each product, logits and gradients back) are
/// branch-free and vectorise 16 elements at a time.
fn cast_run<T: Copy, U>(dst: &mut [MaybeUninit<U>], src: &[T], cast: impl Fn(T) -> U + Copy) {
    wide(Map1 {
        o: dst,
        x: src,
        f: &cast,
    });
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
            return CpuStorage::F32(cast_map(v, layout, <bf16 as Element>::to_f32).into())
        }
        // Integer to integer wraps, as C++'s casts in PyTorch do (-1 becomes 255), where
        // the f64 detour would saturate.
        (CpuStorage::I64(v), DType::U8) => {
            return CpuStorage::U8(map1(v, layout, |x| x as u8).into())
        }
        (CpuStorage::I64(v), DType::I32) => {
            return CpuStorage::I32(map1(v, layout, |x| x as i32).into())
        }
        (CpuStorage::I32(v), DType::U8) => {
            return CpuStorage::U8(map1(v, layout, |x| x as u8).into())
        }
        (CpuStorage::I32(v), DType::I64) => {
            return CpuStorage::I64(map1(v, layout, i64::from).into())
        }
        (CpuStorage::F32(v), DType::F16) => {
            return CpuStorage::F16(map1(v, layout, f16::from_f32).into())
        }
        (CpuStorage::F32(v), DType::BF16) => {
            return CpuStorage::BF16(cast_map(v, layout, <bf16 as Element>::from_f32).into())
        }
        _ => {}
    }
    with_cpu_storage!(s, v => match dtype {
        DType::Bool => cast_vec::<_, bool>(v, layout),
        DType::U8 => cast_vec::<_, u8>(v, layout),
        DType::I32 => cast_vec::<_, i32>(v, layout),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The contiguous casts (parallel pieces, the AVX-512 copy where the CPU has it) give
    /// half's bits for every element, specials included, and match the strided path.
    #[test]
    fn contiguous_bf16_casts_match_half() {
        let specials = [
            0.0f32,
            -0.0,
            1.0,
            f32::MAX,
            f32::MIN_POSITIVE,
            1e-40,
            f32::INFINITY,
        ];
        let n = super::super::strided::PAR_THRESHOLD * 2 + 37;
        let src: Vec<f32> = (0..n)
            .map(|i| match i % 11 {
                0 => specials[i / 11 % specials.len()],
                1 => f32::NAN,
                _ => f32::from_bits((i as u32).wrapping_mul(0x9E37_79B9)),
            })
            .collect();
        let s = CpuStorage::F32(src.clone().into());
        let layout = Layout::contiguous(&[n]);
        let CpuStorage::BF16(down) = to_dtype(&s, &layout, DType::BF16) else {
            panic!("expected bf16")
        };
        for (x, y) in src.iter().zip(down.iter()) {
            assert_eq!(y.to_bits(), bf16::from_f32(*x).to_bits(), "{x:e}");
        }
        let CpuStorage::F32(up) = to_dtype(&CpuStorage::BF16(down.clone()), &layout, DType::F32)
        else {
            panic!("expected f32")
        };
        for (x, y) in down.iter().zip(up.iter()) {
            assert_eq!(y.to_bits(), x.to_f32().to_bits());
        }
        // Every other element: the strided walk, same values.
        let strided = Layout::from_parts(vec![n / 2], vec![2], 0);
        let CpuStorage::BF16(half_way) = to_dtype(&s, &strided, DType::BF16) else {
            panic!("expected bf16")
        };
        for (i, y) in half_way.iter().enumerate() {
            assert_eq!(y.to_bits(), down[2 * i].to_bits());
        }
    }
}
