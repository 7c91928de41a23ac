//! Elementwise primitives on CUDA: unary, binary, comparisons, where, casts, strided copies
//! and fills (kernels/elementwise.cu). Op codes here must match the `switch`es there.

use super::launch::{elementwise, grid, grid_sweeps, launch};
use super::op_codes::{binary, cmp, unary};
use super::{suffix, CudaStorage};
use crate::backend::{BackendStorage, BinaryOp, CmpOp, UnaryOp};
use crate::base::layout::merge_dims;
use crate::base::{DType, Layout};
use crate::error::{Error, Result};
use cudarc::driver::LaunchConfig;

const MODULE: &str = "elementwise";

/// True when `v` is a whole number (an integer tensor keeps its dtype under it).
fn is_integral(v: f64) -> bool {
    v.is_finite() && v.fract() == 0.0
}

/// Code and parameters of a float unary op.
fn float_code(op: UnaryOp) -> (i32, f64, f64) {
    use UnaryOp::*;
    match op {
        Neg => (unary::NEG, 0.0, 0.0),
        Abs => (unary::ABS, 0.0, 0.0),
        Sign => (unary::SIGN, 0.0, 0.0),
        Exp => (unary::EXP, 0.0, 0.0),
        Log => (unary::LOG, 0.0, 0.0),
        Log2 => (unary::LOG2, 0.0, 0.0),
        Log1p => (unary::LOG1P, 0.0, 0.0),
        Expm1 => (unary::EXPM1, 0.0, 0.0),
        Sqrt => (unary::SQRT, 0.0, 0.0),
        Rsqrt => (unary::RSQRT, 0.0, 0.0),
        Square => (unary::SQUARE, 0.0, 0.0),
        Reciprocal => (unary::RECIPROCAL, 0.0, 0.0),
        Sin => (unary::SIN, 0.0, 0.0),
        Cos => (unary::COS, 0.0, 0.0),
        Tan => (unary::TAN, 0.0, 0.0),
        Tanh => (unary::TANH, 0.0, 0.0),
        Sigmoid => (unary::SIGMOID, 0.0, 0.0),
        Relu => (unary::RELU, 0.0, 0.0),
        LeakyRelu(s) => (unary::LEAKY_RELU, s, 0.0),
        Elu(a) => (unary::ELU, a, 0.0),
        Gelu => (unary::GELU, 0.0, 0.0),
        GeluTanh => (unary::GELU_TANH, 0.0, 0.0),
        Silu => (unary::SILU, 0.0, 0.0),
        Softplus { beta, threshold } => (unary::SOFTPLUS, beta, threshold),
        Erf => (unary::ERF, 0.0, 0.0),
        Erfc => (unary::ERFC, 0.0, 0.0),
        Erfinv => (unary::ERFINV, 0.0, 0.0),
        Lgamma => (unary::LGAMMA, 0.0, 0.0),
        Digamma => (unary::DIGAMMA, 0.0, 0.0),
        Trigamma => (unary::TRIGAMMA, 0.0, 0.0),
        I0 => (unary::I0, 0.0, 0.0),
        I0e => (unary::I0E, 0.0, 0.0),
        I1 => (unary::I1, 0.0, 0.0),
        I1e => (unary::I1E, 0.0, 0.0),
        Floor => (unary::FLOOR, 0.0, 0.0),
        Ceil => (unary::CEIL, 0.0, 0.0),
        Round => (unary::ROUND, 0.0, 0.0),
        AddScalar(s) => (unary::ADD_SCALAR, s, 0.0),
        MulScalar(s) => (unary::MUL_SCALAR, s, 0.0),
        PowScalar(e) => (unary::POW_SCALAR, e, 0.0),
        ScalarPow(b) => (unary::SCALAR_POW, b, 0.0),
        Clamp(lo, hi) if lo.is_some_and(f64::is_nan) || hi.is_some_and(f64::is_nan) => {
            (unary::CLAMP_NAN, f64::NAN, 0.0)
        }
        Clamp(lo, hi) => (
            unary::CLAMP,
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
        Neg => (unary::NEG, 0, 0),
        Abs => (unary::ABS, 0, 0),
        Sign => (unary::SIGN, 0, 0),
        Square => (unary::SQUARE, 0, 0),
        Relu => (unary::RELU, 0, 0),
        Floor | Ceil | Round => (unary::FLOOR, 0, 0),
        AddScalar(s) if is_integral(s) => (unary::ADD_SCALAR, s as i64, 0),
        MulScalar(s) if is_integral(s) => (unary::MUL_SCALAR, s as i64, 0),
        PowScalar(e) if is_integral(e) && (0.0..=u32::MAX as f64).contains(&e) => {
            (unary::POW_SCALAR, e as i64, 0)
        }
        ScalarPow(b) if is_integral(b) => (unary::SCALAR_POW, b as i64, 0),
        Clamp(lo, hi) if lo.is_none_or(is_integral) && hi.is_none_or(is_integral) => (
            unary::CLAMP,
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

/// Whether the packed kernels (16 bytes per access) can take these operands: each given as
/// the address of its first element and its layout, all contiguous and 16-byte aligned.
fn packable(operands: &[(u64, &Layout)]) -> bool {
    operands
        .iter()
        .all(|&(at, l)| l.is_contiguous() && at % 16 == 0)
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
    let size = x.dtype.size_in_bytes();
    let (in_at, out_at) = (
        x.ptr_at(in_l.offset()),
        out_ptr + (out_l.offset() * size) as u64,
    );
    if x.dtype.is_float() && packable(&[(in_at, in_l), (out_at, out_l)]) {
        let (code, p0, p1) = float_code(op);
        let name = format!("unary_packed_{}", suffix(x.dtype));
        launch!(
            &x.dev,
            MODULE,
            name,
            grid(n.div_ceil(16 / size)),
            n as i64,
            code,
            p0,
            p1,
            in_at,
            out_at
        );
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
        Add => binary::ADD,
        Sub => binary::SUB,
        Mul => binary::MUL,
        Div => binary::DIV,
        Pow => binary::POW,
        Maximum => binary::MAXIMUM,
        Minimum => binary::MINIMUM,
    };
    if dtype == DType::Bool && !matches!(op, Add | Mul | Maximum | Minimum) {
        return Err(Error::unsupported_dtype("binary", dtype));
    }
    // Bool add/maximum are `or`, mul/minimum `and`: the integer kernel's max/min on {0, 1}.
    Ok(match (dtype, op) {
        (DType::Bool, Add) => binary::MAXIMUM,
        (DType::Bool, Mul) => binary::MINIMUM,
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
    let size = a.dtype.size_in_bytes();
    let (a_at, b_at) = (a.ptr_at(al.offset()), b.ptr_at(bl.offset()));
    let out_at = out_ptr + (out_l.offset() * size) as u64;
    if a.dtype.is_float()
        && al.shape() == bl.shape()
        && packable(&[(a_at, al), (b_at, bl), (out_at, out_l)])
    {
        let name = format!("binary_packed_{}", suffix(a.dtype));
        launch!(
            &a.dev,
            MODULE,
            name,
            grid(n.div_ceil(16 / size)),
            n as i64,
            code,
            a_at,
            b_at,
            out_at
        );
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
        Lt => cmp::LT,
        Le => cmp::LE,
        Gt => cmp::GT,
        Ge => cmp::GE,
        Eq => cmp::EQ,
        Ne => cmp::NE,
        And => cmp::AND,
        Or => cmp::OR,
        Xor => cmp::XOR,
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

/// The side of copy_transposed's square tiles (kernels/elementwise.cu's TILE).
const TILE: usize = 32;

/// A copy that is a batch of transposes (`x.t().contiguous()`, `permute(0, 2, 1)`, heads
/// split or merged): the contiguous destination `(batch, rows, cols)` takes source element
/// `(b, r, c)` from `b * batch_stride + r + c * col_stride`.
struct Transposed {
    batch: usize,
    rows: usize,
    cols: usize,
    batch_stride: usize,
    col_stride: usize,
}

impl Transposed {
    /// The transposes `src_l -> dst_l` amount to, if they do: after merging, two or three
    /// dims with the destination contiguous and the source's second-to-last dim unit-stride
    /// (its last not), within the grid's limits, and enough elements to fill tiles.
    fn of(src_l: &Layout, dst_l: &Layout) -> Option<Transposed> {
        if !dst_l.is_contiguous() || dst_l.numel() < TILE * TILE {
            return None;
        }
        let (shape, [s]) = merge_dims(src_l.shape(), [src_l.strides()])?;
        let (batch, batch_stride, rows, cols, r_stride, col_stride) = match (&shape[..], &s[..]) {
            (&[r, c], &[rs, cs]) => (1, 0, r, c, rs, cs),
            (&[b, r, c], &[bs, rs, cs]) => (b, bs, r, c, rs, cs),
            _ => return None,
        };
        let fits = batch <= 65_535 && rows.div_ceil(TILE) <= 65_535;
        (r_stride == 1 && col_stride != 1 && fits).then_some(Transposed {
            batch,
            rows,
            cols,
            batch_stride,
            col_stride,
        })
    }
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
    if let Some(t) = Transposed::of(src_l, dst_l) {
        let name = format!("copy_transposed_{}", suffix(dst.dtype()));
        let cfg = LaunchConfig {
            grid_dim: (
                t.cols.div_ceil(TILE) as u32,
                t.rows.div_ceil(TILE) as u32,
                t.batch as u32,
            ),
            block_dim: (TILE as u32, 8, 1),
            shared_mem_bytes: 0,
        };
        launch!(
            &dst.dev,
            MODULE,
            name,
            cfg,
            t.rows as i64,
            t.cols as i64,
            t.batch_stride as i64,
            t.col_stride as i64,
            src.ptr_at(src_l.offset()),
            dst.ptr_at(dst_l.offset())
        );
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

/// Write `start + i * step` (in f64, then converted) to each of `dst`'s elements.
pub fn arange(dst: &CudaStorage, start: f64, step: f64) -> Result<()> {
    let n = dst.len;
    if n == 0 {
        return Ok(());
    }
    let name = format!("arange_{}", suffix(dst.dtype));
    launch!(
        &dst.dev,
        MODULE,
        name,
        grid(n),
        n as i64,
        start,
        step,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn transposed(
        shape: &[usize],
        strides: &[usize],
    ) -> Option<(usize, usize, usize, usize, usize)> {
        let src = Layout::from_parts(shape.to_vec(), strides.to_vec(), 0);
        Transposed::of(&src, &Layout::contiguous(shape))
            .map(|t| (t.batch, t.rows, t.cols, t.batch_stride, t.col_stride))
    }

    /// The tiled copy takes the transposes and batches of transposes it is for, with the
    /// strides the kernel indexes by, and nothing else.
    #[test]
    fn copies_that_are_batches_of_transposes_are_recognised() {
        // x.t() of a (200, 300) matrix: (300, 200) with strides (1, 300).
        assert_eq!(
            transposed(&[300, 200], &[1, 300]),
            Some((1, 300, 200, 0, 300))
        );
        // (B, T, H, D) -> permute(0, 2, 1, 3): heads split; D merges with nothing, so no.
        assert_eq!(transposed(&[4, 8, 64, 16], &[8192, 16, 128, 1]), None);
        // (B, R, C) with the last two swapped: batch stride kept.
        assert_eq!(
            transposed(&[6, 64, 48], &[3072, 1, 64]),
            Some((6, 64, 48, 3072, 64))
        );
        // Size-1 dims are dropped before deciding.
        assert_eq!(
            transposed(&[1, 300, 1, 200], &[1, 1, 1, 300]),
            Some((1, 300, 200, 0, 300))
        );
        // Already contiguous, too small, or more than three dims after merging: the generic copy.
        assert_eq!(transposed(&[300, 200], &[200, 1]), None);
        assert_eq!(transposed(&[8, 8], &[1, 8]), None);
        assert_eq!(transposed(&[2, 3, 64, 64], &[1, 2, 6 * 64, 6]), None);
    }
}
