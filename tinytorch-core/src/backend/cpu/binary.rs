//! Elementwise kernels of two operands (arithmetic, comparisons, logical ops) and the
//! three-operand `where`. Operands arrive with equal shapes (broadcast as stride-0 dims) and,
//! except for `where`'s condition, equal dtypes.

use super::strided::{map2, map3, update2};
use super::{CpuElement, CpuStorage};
use crate::backend::{BackendStorage, BinaryOp, CmpOp};
use crate::base::{DType, Element, Layout};
use crate::error::{Error, Result};
use half::{bf16, f16};

/// Arithmetic on one element type, with PyTorch's semantics (integers wrap, maximum and
/// minimum propagate NaN).
pub(crate) trait Arith: CpuElement {
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
    fn pow(self, o: Self) -> Self;
    fn maximum(self, o: Self) -> Self;
    fn minimum(self, o: Self) -> Self;
}

macro_rules! float_arith {
    ($t:ty) => {
        impl Arith for $t {
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self + o
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self - o
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self * o
            }
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                self / o
            }
            #[inline(always)]
            fn pow(self, o: Self) -> Self {
                self.powf(o)
            }
            #[inline(always)]
            fn maximum(self, o: Self) -> Self {
                if self.is_nan() || o.is_nan() {
                    <$t>::NAN
                } else if self > o {
                    self
                } else {
                    o
                }
            }
            #[inline(always)]
            fn minimum(self, o: Self) -> Self {
                if self.is_nan() || o.is_nan() {
                    <$t>::NAN
                } else if self < o {
                    self
                } else {
                    o
                }
            }
        }
    };
}
float_arith!(f32);
float_arith!(f64);

/// Half types compute in f32 and round once (bf16 with the branch-free rounding of
/// `Element::from_f32`).
macro_rules! half_arith {
    ($t:ty) => {
        impl Arith for $t {
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                <$t as Element>::from_f32(self.to_f32() + o.to_f32())
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                <$t as Element>::from_f32(self.to_f32() - o.to_f32())
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                <$t as Element>::from_f32(self.to_f32() * o.to_f32())
            }
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                <$t as Element>::from_f32(self.to_f32() / o.to_f32())
            }
            #[inline(always)]
            fn pow(self, o: Self) -> Self {
                <$t as Element>::from_f32(self.to_f32().powf(o.to_f32()))
            }
            #[inline(always)]
            fn maximum(self, o: Self) -> Self {
                <$t as Element>::from_f32(Arith::maximum(self.to_f32(), o.to_f32()))
            }
            #[inline(always)]
            fn minimum(self, o: Self) -> Self {
                <$t as Element>::from_f32(Arith::minimum(self.to_f32(), o.to_f32()))
            }
        }
    };
}
half_arith!(f16);
half_arith!(bf16);

macro_rules! int_arith {
    ($t:ty) => {
        impl Arith for $t {
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            // Integer division is floor division (torch's `floor_divide`); the ops layer
            // sends true division of integers to floats first, and checks for zero divisors.
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                if o == 0 {
                    0
                } else {
                    let q = self.wrapping_div(o);
                    let r = self.wrapping_rem(o);
                    // Round toward negative infinity when the signs differ (a no-op for u8).
                    if r != 0 && ((r ^ o) as i64) < 0 {
                        q.wrapping_sub(1)
                    } else {
                        q
                    }
                }
            }
            #[inline(always)]
            fn pow(self, o: Self) -> Self {
                #[allow(unused_comparisons)]
                if o < 0 {
                    0
                } else {
                    self.wrapping_pow(o as u32)
                }
            }
            #[inline(always)]
            fn maximum(self, o: Self) -> Self {
                self.max(o)
            }
            #[inline(always)]
            fn minimum(self, o: Self) -> Self {
                self.min(o)
            }
        }
    };
}
int_arith!(i64);
int_arith!(i32);
int_arith!(u8);

fn binary_typed<T: Arith>(a: &[T], al: &Layout, b: &[T], bl: &Layout, op: BinaryOp) -> CpuStorage {
    // One instantiation per (dtype, op) so that the inner loops inline the arithmetic.
    let out = match op {
        BinaryOp::Add => map2(a, al, b, bl, T::add),
        BinaryOp::Sub => map2(a, al, b, bl, T::sub),
        BinaryOp::Mul => map2(a, al, b, bl, T::mul),
        BinaryOp::Div => map2(a, al, b, bl, T::div),
        BinaryOp::Pow => map2(a, al, b, bl, T::pow),
        BinaryOp::Maximum => map2(a, al, b, bl, T::maximum),
        BinaryOp::Minimum => map2(a, al, b, bl, T::minimum),
    };
    CpuStorage::from_vec(out)
}

fn same_dtype(op: &'static str, a: &CpuStorage, b: &CpuStorage) -> Result<()> {
    if a.dtype() != b.dtype() {
        return Err(Error::dtype(
            op,
            format!("operands have dtypes {} and {}", a.dtype(), b.dtype()),
        ));
    }
    Ok(())
}

/// `a op b` elementwise.
pub fn binary(
    a: &CpuStorage,
    al: &Layout,
    b: &CpuStorage,
    bl: &Layout,
    op: BinaryOp,
) -> Result<CpuStorage> {
    same_dtype("binary", a, b)?;
    Ok(match (a, b) {
        (CpuStorage::F32(x), CpuStorage::F32(y)) => binary_typed(x, al, y, bl, op),
        (CpuStorage::F64(x), CpuStorage::F64(y)) => binary_typed(x, al, y, bl, op),
        (CpuStorage::F16(x), CpuStorage::F16(y)) => binary_typed(x, al, y, bl, op),
        (CpuStorage::BF16(x), CpuStorage::BF16(y)) => binary_typed(x, al, y, bl, op),
        (CpuStorage::I64(x), CpuStorage::I64(y)) => binary_typed(x, al, y, bl, op),
        (CpuStorage::I32(x), CpuStorage::I32(y)) => binary_typed(x, al, y, bl, op),
        (CpuStorage::U8(x), CpuStorage::U8(y)) => binary_typed(x, al, y, bl, op),
        (CpuStorage::Bool(x), CpuStorage::Bool(y)) => {
            CpuStorage::Bool(map2(x, al, y, bl, bool_op("binary", op)?).into())
        }
        _ => unreachable!("dtypes checked equal"),
    })
}

/// `op` on bools as PyTorch defines it: `+` and maximum are logical or, `*` and minimum
/// logical and; the rest is an error.
fn bool_op(name: &'static str, op: BinaryOp) -> Result<fn(bool, bool) -> bool> {
    match op {
        BinaryOp::Add | BinaryOp::Maximum => Ok(|p, q| p | q),
        BinaryOp::Mul | BinaryOp::Minimum => Ok(|p, q| p & q),
        _ => Err(Error::unsupported_dtype(name, DType::Bool)),
    }
}

/// `a = a op b` elementwise, in place.
pub fn binary_inplace(
    a: &mut CpuStorage,
    al: &Layout,
    b: &CpuStorage,
    bl: &Layout,
    op: BinaryOp,
) -> Result<()> {
    same_dtype("binary_", a, b)?;
    // One instantiation per (dtype, op), as in `binary_typed`: a function pointer here left
    // a call per element in the optimizers' `p.sub_(..)` (7% of an mlp training step).
    fn go<T: Arith>(x: &mut [T], al: &Layout, y: &[T], bl: &Layout, op: BinaryOp) {
        match op {
            BinaryOp::Add => update2(x, al, y, bl, T::add),
            BinaryOp::Sub => update2(x, al, y, bl, T::sub),
            BinaryOp::Mul => update2(x, al, y, bl, T::mul),
            BinaryOp::Div => update2(x, al, y, bl, T::div),
            BinaryOp::Pow => update2(x, al, y, bl, T::pow),
            BinaryOp::Maximum => update2(x, al, y, bl, T::maximum),
            BinaryOp::Minimum => update2(x, al, y, bl, T::minimum),
        }
    }
    match (a, b) {
        (CpuStorage::F32(x), CpuStorage::F32(y)) => go(x, al, y, bl, op),
        (CpuStorage::F64(x), CpuStorage::F64(y)) => go(x, al, y, bl, op),
        (CpuStorage::F16(x), CpuStorage::F16(y)) => go(x, al, y, bl, op),
        (CpuStorage::BF16(x), CpuStorage::BF16(y)) => go(x, al, y, bl, op),
        (CpuStorage::I64(x), CpuStorage::I64(y)) => go(x, al, y, bl, op),
        (CpuStorage::I32(x), CpuStorage::I32(y)) => go(x, al, y, bl, op),
        (CpuStorage::U8(x), CpuStorage::U8(y)) => go(x, al, y, bl, op),
        (CpuStorage::Bool(x), CpuStorage::Bool(y)) => {
            update2(x, al, y, bl, bool_op("binary_", op)?)
        }
        (a, _) => return Err(Error::unsupported_dtype("binary_", a.dtype())),
    }
    Ok(())
}

/// `a[al] += alpha * b[bl]` in one pass (an optimizer's update `p.add_(d, alpha=-lr)`), for
/// f32 and f64 (alpha rounded to the dtype first, as PyTorch does); `Ok(false)`, untouched,
/// for other dtypes, which take the two-op path.
pub fn add_scaled_inplace(
    a: &mut CpuStorage,
    al: &Layout,
    b: &CpuStorage,
    bl: &Layout,
    alpha: f64,
) -> Result<bool> {
    same_dtype("add_", a, b)?;
    match (a, b) {
        (CpuStorage::F32(x), CpuStorage::F32(y)) => {
            let c = alpha as f32;
            update2(x, al, y, bl, move |p, d| p + c * d);
        }
        (CpuStorage::F64(x), CpuStorage::F64(y)) => {
            update2(x, al, y, bl, move |p, d| p + alpha * d);
        }
        _ => return Ok(false),
    }
    Ok(true)
}

fn cmp_typed<T: CpuElement>(a: &[T], al: &Layout, b: &[T], bl: &Layout, op: CmpOp) -> Vec<bool> {
    let nz = |x: T| x != T::zero();
    match op {
        CmpOp::Lt => map2(a, al, b, bl, |x, y| x < y),
        CmpOp::Le => map2(a, al, b, bl, |x, y| x <= y),
        CmpOp::Gt => map2(a, al, b, bl, |x, y| x > y),
        CmpOp::Ge => map2(a, al, b, bl, |x, y| x >= y),
        CmpOp::Eq => map2(a, al, b, bl, |x, y| x == y),
        CmpOp::Ne => map2(a, al, b, bl, |x, y| x != y),
        CmpOp::And => map2(a, al, b, bl, |x, y| nz(x) && nz(y)),
        CmpOp::Or => map2(a, al, b, bl, |x, y| nz(x) || nz(y)),
        CmpOp::Xor => map2(a, al, b, bl, |x, y| nz(x) != nz(y)),
    }
}

/// Elementwise predicate with bool output.
pub fn cmp(
    a: &CpuStorage,
    al: &Layout,
    b: &CpuStorage,
    bl: &Layout,
    op: CmpOp,
) -> Result<CpuStorage> {
    same_dtype("compare", a, b)?;
    let out = match (a, b) {
        (CpuStorage::F32(x), CpuStorage::F32(y)) => cmp_typed(x, al, y, bl, op),
        (CpuStorage::F64(x), CpuStorage::F64(y)) => cmp_typed(x, al, y, bl, op),
        (CpuStorage::F16(x), CpuStorage::F16(y)) => cmp_typed(x, al, y, bl, op),
        (CpuStorage::BF16(x), CpuStorage::BF16(y)) => cmp_typed(x, al, y, bl, op),
        (CpuStorage::I64(x), CpuStorage::I64(y)) => cmp_typed(x, al, y, bl, op),
        (CpuStorage::I32(x), CpuStorage::I32(y)) => cmp_typed(x, al, y, bl, op),
        (CpuStorage::U8(x), CpuStorage::U8(y)) => cmp_typed(x, al, y, bl, op),
        (CpuStorage::Bool(x), CpuStorage::Bool(y)) => cmp_typed(x, al, y, bl, op),
        _ => unreachable!("dtypes checked equal"),
    };
    Ok(CpuStorage::Bool(out.into()))
}

/// `cond ? t : f` elementwise; `cond` is bool, `t` and `f` share a dtype.
pub fn where_cond(
    cond: &CpuStorage,
    cl: &Layout,
    t: &CpuStorage,
    tl: &Layout,
    f: &CpuStorage,
    fl: &Layout,
) -> Result<CpuStorage> {
    let CpuStorage::Bool(c) = cond else {
        return Err(Error::dtype(
            "where",
            format!("condition must be bool, got {}", cond.dtype()),
        ));
    };
    same_dtype("where", t, f)?;
    fn go<T: CpuElement>(
        c: &[bool],
        cl: &Layout,
        t: &[T],
        tl: &Layout,
        f: &[T],
        fl: &Layout,
    ) -> CpuStorage {
        CpuStorage::from_vec(map3(
            (c, cl),
            (t, tl),
            (f, fl),
            |c, x, y| if c { x } else { y },
        ))
    }
    Ok(match (t, f) {
        (CpuStorage::F32(x), CpuStorage::F32(y)) => go(c, cl, x, tl, y, fl),
        (CpuStorage::F64(x), CpuStorage::F64(y)) => go(c, cl, x, tl, y, fl),
        (CpuStorage::F16(x), CpuStorage::F16(y)) => go(c, cl, x, tl, y, fl),
        (CpuStorage::BF16(x), CpuStorage::BF16(y)) => go(c, cl, x, tl, y, fl),
        (CpuStorage::I64(x), CpuStorage::I64(y)) => go(c, cl, x, tl, y, fl),
        (CpuStorage::I32(x), CpuStorage::I32(y)) => go(c, cl, x, tl, y, fl),
        (CpuStorage::U8(x), CpuStorage::U8(y)) => go(c, cl, x, tl, y, fl),
        (CpuStorage::Bool(x), CpuStorage::Bool(y)) => go(c, cl, x, tl, y, fl),
        _ => unreachable!("dtypes checked equal"),
    })
}
