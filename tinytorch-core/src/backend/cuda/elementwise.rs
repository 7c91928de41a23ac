//! Elementwise primitives on CUDA: unary, binary, comparisons, where, casts, strided copies
//! and fills (kernels/elementwise.cu). Op codes here must match the `switch`es there.

use super::launch::{elementwise, grid, grid_sweeps, launch};
use super::{suffix, CudaStorage};
use crate::backend::{BackendStorage, BinaryOp, CmpOp, UnaryOp};
use crate::base::{DType, Layout};
use crate::error::{Error, Result};

const MODULE: &str = "elementwise";

/// True when `v` is a whole number (an integer tensor keeps its dtype under it).
fn is_integral(v: f64) -> bool {
    v.is_finite() && v.fract() == 0.0
}

/// Code and parameters of a float unary op.
fn float_code(op: UnaryOp) -> (i32, f64, f64) {
    use UnaryOp::*;
    match op {
        Neg => (0, 0.0, 0.0),
        Abs => (1, 0.0, 0.0),
        Sign => (2, 0.0, 0.0),
        Exp => (3, 0.0, 0.0),
        Log => (4, 0.0, 0.0),
        Log2 => (5, 0.0, 0.0),
        Log1p => (6, 0.0, 0.0),
        Expm1 => (7, 0.0, 0.0),
        Sqrt => (8, 0.0, 0.0),
        Rsqrt => (9, 0.0, 0.0),
        Square => (10, 0.0, 0.0),
        Reciprocal => (11, 0.0, 0.0),
        Sin => (12, 0.0, 0.0),
        Cos => (13, 0.0, 0.0),
        Tan => (14, 0.0, 0.0),
        Tanh => (15, 0.0, 0.0),
        Sigmoid => (16, 0.0, 0.0),
        Relu => (17, 0.0, 0.0),
        LeakyRelu(s) => (18, s, 0.0),
        Elu(a) => (19, a, 0.0),
        Gelu => (20, 0.0, 0.0),
        GeluTanh => (21, 0.0, 0.0),
        Silu => (22, 0.0, 0.0),
        Softplus { beta, threshold } => (23, beta, threshold),
        Erf => (24, 0.0, 0.0),
        Erfc => (34, 0.0, 0.0),
        Erfinv => (35, 0.0, 0.0),
        Lgamma => (36, 0.0, 0.0),
        Digamma => (37, 0.0, 0.0),
        Trigamma => (38, 0.0, 0.0),
        I0 => (39, 0.0, 0.0),
        I0e => (40, 0.0, 0.0),
        I1 => (41, 0.0, 0.0),
        I1e => (42, 0.0, 0.0),
        Floor => (25, 0.0, 0.0),
        Ceil => (26, 0.0, 0.0),
        Round => (27, 0.0, 0.0),
        AddScalar(s) => (28, s, 0.0),
        MulScalar(s) => (29, s, 0.0),
        PowScalar(e) => (30, e, 0.0),
        ScalarPow(b) => (31, b, 0.0),
        Clamp(lo, hi) if lo.is_some_and(f64::is_nan) || hi.is_some_and(f64::is_nan) => {
            (33, f64::NAN, 0.0)
        }
        Clamp(lo, hi) => (
            32,
            lo.unwrap_or(f64::NEG_INFINITY),
            hi.unwrap_or(f64::INFINITY),
        ),
    }
}

/// Code and parameters of an integer unary op, or why it has none (the CPU backend's rules).
fn int_code(op: UnaryOp, dtype: DType) -> Result<(i32, i64, i64)> {
    use UnaryOp::*;
    // Bounds saturate to the type's range, which clamps exactly as a wider compare would.
    let sat = |v: f64| {
        if dtype == DType::U8 {
            v.clamp(0.0, 255.0) as i64
        } else if dtype == DType::I32 {
            v.clamp(i32::MIN as f64, i32::MAX as f64) as i64
        } else {
            v as i64
        }
    };
    Ok(match op {
        Neg => (0, 0, 0),
        Abs => (1, 0, 0),
        Sign => (2, 0, 0),
        Square => (10, 0, 0),
        Relu => (17, 0, 0),
        Floor | Ceil | Round => (25, 0, 0),
        AddScalar(s) if is_integral(s) => (28, s as i64, 0),
        MulScalar(s) if is_integral(s) => (29, s as i64, 0),
        PowScalar(e) if is_integral(e) && (0.0..=u32::MAX as f64).contains(&e) => (30, e as i64, 0),
        ScalarPow(b) if is_integral(b) => (31, b as i64, 0),
        Clamp(lo, hi) if lo.is_none_or(is_integral) && hi.is_none_or(is_integral) => (
            32,
            sat(lo.unwrap_or(f64::NEG_INFINITY)),
            sat(hi.unwrap_or(f64::INFINITY)),
        ),
        _ => {
            return Err(Error::dtype(
                "unary",
                format!("{op:?} is not defined for {dtype} tensors"),
            ))
        }
    })
}

/// Bool tensors accept only the ops that are the identity on {0, 1}.
fn bool_identity(op: UnaryOp) -> Result<()> {
    use UnaryOp::*;
    match op {
        Sign | Abs | Relu | Floor | Ceil | Round => Ok(()),
        _ => Err(Error::dtype(
            "unary",
            format!("{op:?} is not defined for bool tensors"),
        )),
    }
}

/// `out[out_l] = op(x[in_l])`; `out` may be `x` itself (same layout) for in-place ops.
fn launch_unary(
    x: &CudaStorage,
    in_l: &Layout,
    out_ptr: u64,
    out_l: &Layout,
    op: UnaryOp,
) -> Result<()> {
    let n = in_l.numel();
    if n == 0 {
        return Ok(());
    }
    let (sh, st) = elementwise("unary", &[in_l, out_l])?;
    let name = format!("unary_{}", suffix(x.dtype));
    if x.dtype.is_float() {
        let (code, p0, p1) = float_code(op);
        launch!(
            &x.dev,
            MODULE,
            name,
            grid_sweeps(n),
            n as i64,
            code,
            p0,
            p1,
            sh,
            st[0],
            x.ptr(),
            st[1],
            out_ptr
        );
    } else {
        let (code, p0, p1) = int_code(op, x.dtype)?;
        launch!(
            &x.dev,
            MODULE,
            name,
            grid(n),
            n as i64,
            code,
            p0,
            p1,
            sh,
            st[0],
            x.ptr(),
            st[1],
            out_ptr
        );
    }
    Ok(())
}

pub fn unary(x: &CudaStorage, l: &Layout, op: UnaryOp) -> Result<CudaStorage> {
    if x.dtype == DType::Bool {
        bool_identity(op)?;
        return to_contiguous(x, l);
    }
    let out = x.alloc_like(x.dtype, l.numel())?;
    launch_unary(x, l, out.ptr(), &Layout::contiguous(l.shape()), op)?;
    Ok(out)
}

pub fn unary_inplace(x: &mut CudaStorage, l: &Layout, op: UnaryOp) -> Result<()> {
    if x.dtype == DType::Bool {
        return bool_identity(op);
    }
    let p = x.ptr();
    launch_unary(x, l, p, l, op)
}

fn binary_code(op: BinaryOp, dtype: DType) -> Result<i32> {
    use BinaryOp::*;
    let code = match op {
        Add => 0,
        Sub => 1,
        Mul => 2,
        Div => 3,
        Pow => 4,
        Maximum => 5,
        Minimum => 6,
    };
    if dtype == DType::Bool && !matches!(op, Add | Mul | Maximum | Minimum) {
        return Err(Error::unsupported_dtype("binary", dtype));
    }
    // Bool add/maximum are `or`, mul/minimum `and`: the integer kernel's max/min on {0, 1}.
    Ok(match (dtype, op) {
        (DType::Bool, Add) => 5,
        (DType::Bool, Mul) => 6,
        _ => code,
    })
}

fn same_dtype(op: &'static str, a: &CudaStorage, b: &CudaStorage) -> Result<()> {
    if a.dtype != b.dtype {
        return Err(Error::dtype(
            op,
            format!("expected equal dtypes, got {} and {}", a.dtype, b.dtype),
        ));
    }
    Ok(())
}

fn launch_binary(
    a: &CudaStorage,
    al: &Layout,
    b: &CudaStorage,
    bl: &Layout,
    out_ptr: u64,
    out_l: &Layout,
    op: BinaryOp,
) -> Result<()> {
    same_dtype("binary", a, b)?;
    let code = binary_code(op, a.dtype)?;
    let n = al.numel();
    if n == 0 {
        return Ok(());
    }
    let (sh, st) = elementwise("binary", &[al, bl, out_l])?;
    let name = format!("binary_{}", suffix(a.dtype));
    launch!(
        &a.dev,
        MODULE,
        name,
        if a.dtype.is_float() {
            grid_sweeps(n)
        } else {
            grid(n)
        },
        n as i64,
        code,
        sh,
        st[0],
        a.ptr(),
        st[1],
        b.ptr(),
        st[2],
        out_ptr
    );
    Ok(())
}

pub fn binary(
    a: &CudaStorage,
    al: &Layout,
    b: &CudaStorage,
    bl: &Layout,
    op: BinaryOp,
) -> Result<CudaStorage> {
    let out = a.alloc_like(a.dtype, al.numel())?;
    launch_binary(a, al, b, bl, out.ptr(), &Layout::contiguous(al.shape()), op)?;
    Ok(out)
}

pub fn binary_inplace(
    a: &mut CudaStorage,
    al: &Layout,
    b: &CudaStorage,
    bl: &Layout,
    op: BinaryOp,
) -> Result<()> {
    let p = a.ptr();
    launch_binary(a, al, b, bl, p, al, op)
}

pub fn cmp(
    a: &CudaStorage,
    al: &Layout,
    b: &CudaStorage,
    bl: &Layout,
    op: CmpOp,
) -> Result<CudaStorage> {
    same_dtype("compare", a, b)?;
    use CmpOp::*;
    let code: i32 = match op {
        Lt => 0,
        Le => 1,
        Gt => 2,
        Ge => 3,
        Eq => 4,
        Ne => 5,
        And => 6,
        Or => 7,
        Xor => 8,
    };
    let n = al.numel();
    let out = a.alloc_like(DType::Bool, n)?;
    if n > 0 {
        let (sh, st) = elementwise("compare", &[al, bl])?;
        let name = format!("cmp_{}", suffix(a.dtype));
        launch!(
            &a.dev,
            MODULE,
            name,
            grid(n),
            n as i64,
            code,
            sh,
            st[0],
            a.ptr(),
            st[1],
            b.ptr(),
            out.ptr()
        );
    }
    Ok(out)
}

pub fn where_cond(
    c: &CudaStorage,
    cl: &Layout,
    t: &CudaStorage,
    tl: &Layout,
    f: &CudaStorage,
    fl: &Layout,
) -> Result<CudaStorage> {
    if c.dtype != DType::Bool {
        return Err(Error::dtype(
            "where",
            format!("condition must be bool, got {}", c.dtype),
        ));
    }
    same_dtype("where", t, f)?;
    let n = cl.numel();
    let out = t.alloc_like(t.dtype, n)?;
    if n > 0 {
        let (sh, st) = elementwise("where", &[cl, tl, fl])?;
        let name = format!("where_{}", suffix(t.dtype));
        launch!(
            &c.dev,
            MODULE,
            name,
            grid(n),
            n as i64,
            sh,
            st[0],
            c.ptr(),
            st[1],
            t.ptr(),
            st[2],
            f.ptr(),
            out.ptr()
        );
    }
    Ok(out)
}

pub fn to_contiguous(x: &CudaStorage, l: &Layout) -> Result<CudaStorage> {
    let mut out = x.alloc_like(x.dtype, l.numel())?;
    copy_strided(&mut out, &Layout::contiguous(l.shape()), x, l)?;
    Ok(out)
}

pub fn cast(x: &CudaStorage, l: &Layout, dtype: DType) -> Result<CudaStorage> {
    if dtype == x.dtype {
        return to_contiguous(x, l);
    }
    let n = l.numel();
    let out = x.alloc_like(dtype, n)?;
    if n > 0 {
        let (sh, st) = elementwise("to_dtype", &[l])?;
        let name = format!("cast_{}_{}", suffix(x.dtype), suffix(dtype));
        launch!(
            &x.dev,
            MODULE,
            name,
            grid(n),
            n as i64,
            sh,
            st[0],
            x.ptr(),
            out.ptr()
        );
    }
    Ok(out)
}

pub fn copy_strided(
    dst: &mut CudaStorage,
    dst_l: &Layout,
    src: &CudaStorage,
    src_l: &Layout,
) -> Result<()> {
    same_dtype("copy_", dst, src)?;
    if dst_l.shape() != src_l.shape() {
        return Err(Error::shape(
            "copy_",
            format!(
                "destination {:?} and source {:?} differ",
                dst_l.shape(),
                src_l.shape()
            ),
        ));
    }
    let n = dst_l.numel();
    if n == 0 {
        return Ok(());
    }
    let (sh, st) = elementwise("copy_", &[src_l, dst_l])?;
    let name = format!("copy_{}", suffix(dst.dtype()));
    launch!(
        &dst.dev,
        MODULE,
        name,
        grid(n),
        n as i64,
        sh,
        st[0],
        src.ptr(),
        st[1],
        dst.ptr()
    );
    Ok(())
}

pub fn fill(dst: &mut CudaStorage, l: &Layout, value: f64) -> Result<()> {
    let n = l.numel();
    if n == 0 {
        return Ok(());
    }
    let (sh, st) = elementwise("fill_", &[l])?;
    let name = format!("fill_{}", suffix(dst.dtype));
    launch!(
        &dst.dev,
        MODULE,
        name,
        grid(n),
        n as i64,
        sh,
        st[0],
        dst.ptr(),
        value
    );
    Ok(())
}
