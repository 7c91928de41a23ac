//! Fused batch normalisation on CUDA (kernels/batch_norm.cu) over a contiguous `(N, C, S)`
//! input: the CPU kernel's maths (`backend/cpu/batch_norm.rs`) and door semantics
//! (`backend/fused/norm.rs`). Training forward: statistics (one read of `x`), then the
//! normalised output with an optional fused ReLU or residual + ReLU (a second read, one
//! write); backward: the two per-channel sums (one read of `x` and `g`), then `dx` (a second
//! read, one write); evaluation: the output from the running statistics (one read, one write);
//! and the running-statistics update in place. Each pass over the tensor is one kernel; the
//! per-channel work between them is one small kernel (a warp per channel).
//!
//! Data are f32, f64, f16 or bf16; statistics, parameters and their gradients are in the
//! compute type (f64 for f64 data, else f32), as on the CPU.
//!
//! The per-channel sums are split into `parts` blocks per channel (about [`TARGET_BLOCKS`]
//! blocks in all, at least [`MIN_UNITS_PER_BLOCK`] units each), whose partials one warp per
//! channel merges in a fixed order: no atomics, the same result every run for a shape.

use super::launch::{grid, grid_sweeps, launch, BLOCK};
use super::norm::Input;
use super::op_codes::bn_then;
use super::{suffix, CudaStorage};
use crate::base::DType;
use crate::error::{Error, Result};
use cudarc::driver::LaunchConfig;

const MODULE: &str = "batch_norm";
const OP: &str = "batch_norm";
/// Blocks of a statistics pass to aim for: a few waves of an H100/H200's 132 SMs.
const TARGET_BLOCKS: usize = 1024;
/// Fewest units a block of a statistics pass reduces: two sweeps of its threads (UNROLL = 4).
const MIN_UNITS_PER_BLOCK: usize = 2 * 4 * BLOCK as usize;
/// Most units a block reduces, so that a thread's f32 element count stays exact (< 2^24).
const MAX_UNITS_PER_BLOCK: usize = 1 << 28;

/// The problem: `n * c` rows of `s` contiguous elements, row `r` of channel `r % c`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dims {
    pub n: usize,
    pub c: usize,
    pub s: usize,
}

/// What the output pass applies after the affine map.
#[derive(Clone, Copy)]
pub(crate) enum Then<'a> {
    Nothing,
    Relu,
    /// Add the residual (laid out like `x`, of its dtype), then a ReLU.
    AddRelu(Input<'a>),
}

impl Then<'_> {
    fn code(&self) -> i32 {
        match self {
            Then::Nothing => bn_then::NOTHING,
            Then::Relu => bn_then::RELU,
            Then::AddRelu(_) => bn_then::ADD_RELU,
        }
    }

    /// The residual operand, if any.
    fn residual(&self) -> Option<Input<'_>> {
        match self {
            Then::AddRelu(r) => Some(*r),
            _ => None,
        }
    }
}

/// What the backward needs of a training forward.
pub(crate) struct Saved {
    /// `(4, C)` in the compute type: mean, rstd, scale (`w * rstd`), shift (the bias or 0).
    stats: CudaStorage,
    /// Whether the forward fused a ReLU (without a residual): the backward gates `g` by it.
    relu: bool,
}

/// A training forward's results.
pub(crate) struct Forward {
    /// Like `x`.
    pub y: CudaStorage,
    /// Batch mean and biased variance, `(C)` in the compute type.
    pub mean: CudaStorage,
    pub var: CudaStorage,
    pub saved: Saved,
}

/// The backward's results (`dx` only when asked for).
pub(crate) struct Grads {
    pub dx: Option<CudaStorage>,
    pub dweight: CudaStorage,
    pub dbias: CudaStorage,
}

/// The compute type of data of `dtype`, or an error for a dtype without kernels.
fn compute_dtype(dtype: DType) -> Result<DType> {
    match dtype {
        DType::F64 => Ok(DType::F64),
        DType::F32 | DType::F16 | DType::BF16 => Ok(DType::F32),
        other => Err(Error::unsupported_dtype(OP, other)),
    }
}

/// Every operand is on x's device, of its dtype and holds the elements it is read at.
fn check(x: Input, operands: &[(&str, Option<Input>, DType, usize)]) -> Result<()> {
    let dev = x.storage.dev.ordinal();
    for &(name, t, dtype, len) in operands {
        let Some(t) = t else { continue };
        if t.storage.dtype != dtype {
            return Err(Error::dtype(
                OP,
                format!("{name} must be {dtype}, got {}", t.storage.dtype),
            ));
        }
        if t.storage.dev.ordinal() != dev {
            return Err(Error::invalid(
                OP,
                format!("{name} is on another GPU than the input"),
            ));
        }
        if t.offset + len > t.storage.len {
            return Err(Error::shape(
                OP,
                format!(
                    "{name} needs {len} elements from offset {} but its buffer holds {}",
                    t.offset, t.storage.len
                ),
            ));
        }
    }
    Ok(())
}

/// Elements per access: 16 bytes' worth when rows are whole multiples of it and every data
/// buffer starts 16-byte aligned, else 1.
fn vector_width(dtype: DType, s: usize, ptrs: &[u64]) -> usize {
    let v = 16 / dtype.size_in_bytes();
    if s.is_multiple_of(v) && ptrs.iter().all(|p| p % 16 == 0) {
        v
    } else {
        1
    }
}

/// How the statistics passes split each channel's `units`: `(per_part, parts)`.
fn split(c: usize, units: usize) -> (usize, usize) {
    let wanted = TARGET_BLOCKS.div_ceil(c.max(1));
    let most = units.div_ceil(MIN_UNITS_PER_BLOCK).max(1);
    let least = units.div_ceil(MAX_UNITS_PER_BLOCK).max(1);
    let parts = wanted.min(most).max(least);
    let per_part = units.div_ceil(parts).max(1);
    (per_part, units.div_ceil(per_part).max(1))
}

/// Fewest rows a thread of the `(N, C)` statistics passes takes (`*_columns`).
const MIN_ROWS_PER_PART: usize = 32;

/// How the `(N, C)` statistics passes (a thread per channel, `bn_*_columns`) split the `n`
/// rows: `(per_part, parts)`, enough parts for about [`TARGET_BLOCKS`] blocks, each thread's
/// count exact in f32 (< 2^24 rows) and within the grid's y dimension.
fn split_rows(c: usize, n: usize) -> (usize, usize) {
    let wanted = TARGET_BLOCKS.div_ceil(c.div_ceil(BLOCK as usize).max(1));
    let most = n.div_ceil(MIN_ROWS_PER_PART).max(1);
    let least = n.div_ceil(1 << 24).max(1);
    let parts = wanted.min(most).max(least).min(65_535);
    let per_part = n.div_ceil(parts).max(1);
    (per_part, n.div_ceil(per_part).max(1))
}

/// How a statistics pass cuts its work, `(by_rows, per_part, parts)`: for `(N, C)` input a
/// thread per channel walks shares of the rows ([`split_rows`]; a block per channel would read
/// elements C apart), else blocks take shares of each channel's `units` ([`split`]).
fn statistics_split(d: Dims, units: usize) -> (bool, usize, usize) {
    if d.s == 1 {
        let (per_part, parts) = split_rows(d.c, d.n);
        (true, per_part, parts)
    } else {
        let (per_part, parts) = split(d.c, units);
        (false, per_part, parts)
    }
}

/// The grid of a `bn_*_columns` pass: a thread per channel, `parts` shares of the rows.
fn columns(c: usize, parts: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (c.div_ceil(BLOCK as usize) as u32, parts as u32, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// `blocks` blocks of [`BLOCK`] threads.
fn blocks(blocks: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// One warp per channel.
fn warp_per_channel(c: usize) -> LaunchConfig {
    blocks((c * 32).div_ceil(BLOCK as usize).max(1))
}

/// The f64 partials buffer of a statistics pass over `units` units a channel: zeros when
/// there are none (an empty batch: no block runs, each channel's total is zero).
fn partials(s: &CudaStorage, len: usize, units: usize) -> Result<CudaStorage> {
    match units {
        0 => CudaStorage::zeros(s.dev.ordinal(), DType::F64, len),
        _ => s.alloc_like(DType::F64, len),
    }
}

fn opt_ptr(x: Option<Input>) -> u64 {
    x.map_or(0, |x| x.storage.ptr_at(x.offset))
}

fn ptr(x: Input) -> u64 {
    x.storage.ptr_at(x.offset)
}

/// Training forward: `y` and the batch statistics. `weight`/`bias` are `(C)` of the compute
/// type.
pub(crate) fn forward(
    x: Input,
    d: Dims,
    weight: Option<Input>,
    bias: Option<Input>,
    eps: f64,
    then: Then,
) -> Result<Forward> {
    let dtype = x.storage.dtype;
    let acc = compute_dtype(dtype)?;
    let len = d.n * d.c * d.s;
    let residual = then.residual();
    check(
        x,
        &[
            ("input", Some(x), dtype, len),
            ("residual", residual, dtype, len),
            ("weight", weight, acc, d.c),
            ("bias", bias, acc, d.c),
        ],
    )?;
    let s = x.storage;
    let y = s.alloc_like(dtype, len)?;
    let mean = s.alloc_like(acc, d.c)?;
    let var = s.alloc_like(acc, d.c)?;
    let stats = s.alloc_like(acc, 4 * d.c)?;
    let saved = Saved {
        stats,
        relu: matches!(then, Then::Relu),
    };
    if d.c == 0 {
        return Ok(Forward {
            y,
            mean,
            var,
            saved,
        });
    }
    let v = vector_width(dtype, d.s, &[ptr(x), opt_ptr(residual), y.ptr()]);
    let sv = d.s / v;
    let units = d.n * sv;
    let (by_rows, per_part, parts) = statistics_split(d, units);
    let part = partials(s, d.c * parts * 3, units)?;
    if units > 0 && by_rows {
        launch!(
            &s.dev,
            MODULE,
            format!("bn_stats_columns_{}", suffix(dtype)),
            columns(d.c, parts),
            d.c as i64,
            d.n as i64,
            per_part as i64,
            parts as i64,
            ptr(x),
            part.ptr()
        );
    } else if units > 0 {
        launch!(
            &s.dev,
            MODULE,
            format!("bn_stats_{}_v{v}", suffix(dtype)),
            blocks(d.c * parts),
            d.c as i64,
            sv as i64,
            units as i64,
            per_part as i64,
            parts as i64,
            ptr(x),
            part.ptr()
        );
    }
    let st = saved.stats.ptr();
    let at = |k: usize| st + (k * d.c * acc.size_in_bytes()) as u64;
    launch!(
        &s.dev,
        MODULE,
        format!("bn_stats_finish_{}", suffix(acc)),
        warp_per_channel(d.c),
        d.c as i64,
        parts as i64,
        eps,
        part.ptr(),
        opt_ptr(weight),
        opt_ptr(bias),
        mean.ptr(),
        var.ptr(),
        st
    );
    if len > 0 {
        apply(x, d, v, then, [at(0), at(2), at(3)], &y)?;
    }
    Ok(Forward {
        y,
        mean,
        var,
        saved,
    })
}

/// `y = (x - m) * a + b` per channel (then what `then` says), `coef` the device addresses of
/// `m`, `a`, `b` (each `(C)` of the compute type), in units of `v` elements.
fn apply(x: Input, d: Dims, v: usize, then: Then, coef: [u64; 3], y: &CudaStorage) -> Result<()> {
    let total = d.n * d.c * d.s / v;
    launch!(
        &x.storage.dev,
        MODULE,
        format!("bn_apply_{}_v{v}", suffix(x.storage.dtype)),
        grid_sweeps(total),
        total as i64,
        d.c as i64,
        (d.s / v) as i64,
        then.code(),
        ptr(x),
        opt_ptr(then.residual()),
        coef[0],
        coef[1],
        coef[2],
        y.ptr()
    );
    Ok(())
}

/// The gradients of [`forward`] from the upstream gradient `g` (like `x`; through the fused
/// ReLU when the forward had one without a residual).
pub(crate) fn backward(
    x: Input,
    g: Input,
    d: Dims,
    weight: Option<Input>,
    saved: &Saved,
    want_dx: bool,
) -> Result<Grads> {
    let dtype = x.storage.dtype;
    let acc = compute_dtype(dtype)?;
    let len = d.n * d.c * d.s;
    let stats = Input {
        storage: &saved.stats,
        offset: 0,
    };
    check(
        x,
        &[
            ("input", Some(x), dtype, len),
            ("grad_output", Some(g), dtype, len),
            ("weight", weight, acc, d.c),
            ("statistics", Some(stats), acc, 4 * d.c),
        ],
    )?;
    let s = x.storage;
    let dweight = s.alloc_like(acc, d.c)?;
    let dbias = s.alloc_like(acc, d.c)?;
    let dx = want_dx.then(|| s.alloc_like(dtype, len)).transpose()?;
    if d.c == 0 {
        return Ok(Grads { dx, dweight, dbias });
    }
    let mut ptrs = vec![ptr(x), ptr(g)];
    ptrs.extend(dx.as_ref().map(CudaStorage::ptr));
    let v = vector_width(dtype, d.s, &ptrs);
    let sv = d.s / v;
    let units = d.n * sv;
    let (by_rows, per_part, parts) = statistics_split(d, units);
    let part = partials(s, d.c * parts * 2, units)?;
    let relu = saved.relu as i32;
    if units > 0 && by_rows {
        launch!(
            &s.dev,
            MODULE,
            format!("bn_grad_sums_columns_{}", suffix(dtype)),
            columns(d.c, parts),
            d.c as i64,
            d.n as i64,
            per_part as i64,
            parts as i64,
            relu,
            ptr(x),
            ptr(g),
            saved.stats.ptr(),
            part.ptr()
        );
    } else if units > 0 {
        launch!(
            &s.dev,
            MODULE,
            format!("bn_grad_sums_{}_v{v}", suffix(dtype)),
            blocks(d.c * parts),
            d.c as i64,
            sv as i64,
            units as i64,
            per_part as i64,
            parts as i64,
            relu,
            ptr(x),
            ptr(g),
            saved.stats.ptr(),
            part.ptr()
        );
    }
    let coef = s.alloc_like(acc, 3 * d.c)?;
    let count = d.n * d.s;
    launch!(
        &s.dev,
        MODULE,
        format!("bn_grad_finish_{}", suffix(acc)),
        warp_per_channel(d.c),
        d.c as i64,
        parts as i64,
        1.0 / count as f64,
        part.ptr(),
        opt_ptr(weight),
        saved.stats.ptr(),
        dweight.ptr(),
        dbias.ptr(),
        coef.ptr()
    );
    if let Some(dx) = &dx {
        if len > 0 {
            let total = len / v;
            launch!(
                &s.dev,
                MODULE,
                format!("bn_dx_{}_v{v}", suffix(dtype)),
                grid_sweeps(total),
                total as i64,
                d.c as i64,
                sv as i64,
                relu,
                ptr(x),
                ptr(g),
                saved.stats.ptr(),
                coef.ptr(),
                dx.ptr()
            );
        }
    }
    Ok(Grads { dx, dweight, dbias })
}

/// Evaluation: `y = (x - running_mean) * w / sqrt(running_var + eps) + b`, then what `then`
/// says. The running statistics and parameters are `(C)` of the compute type.
#[allow(clippy::too_many_arguments)]
pub(crate) fn eval(
    x: Input,
    d: Dims,
    running_mean: Input,
    running_var: Input,
    weight: Option<Input>,
    bias: Option<Input>,
    eps: f64,
    then: Then,
) -> Result<CudaStorage> {
    let dtype = x.storage.dtype;
    let acc = compute_dtype(dtype)?;
    let len = d.n * d.c * d.s;
    let residual = then.residual();
    check(
        x,
        &[
            ("input", Some(x), dtype, len),
            ("residual", residual, dtype, len),
            ("running_mean", Some(running_mean), acc, d.c),
            ("running_var", Some(running_var), acc, d.c),
            ("weight", weight, acc, d.c),
            ("bias", bias, acc, d.c),
        ],
    )?;
    let s = x.storage;
    let y = s.alloc_like(dtype, len)?;
    if len == 0 {
        return Ok(y);
    }
    let coef = s.alloc_like(acc, 3 * d.c)?;
    launch!(
        &s.dev,
        MODULE,
        format!("bn_eval_prep_{}", suffix(acc)),
        grid(d.c),
        d.c as i64,
        eps,
        ptr(running_mean),
        ptr(running_var),
        opt_ptr(weight),
        opt_ptr(bias),
        coef.ptr()
    );
    let v = vector_width(dtype, d.s, &[ptr(x), opt_ptr(residual), y.ptr()]);
    let at = |k: usize| coef.ptr() + (k * d.c * acc.size_in_bytes()) as u64;
    apply(x, d, v, then, [at(0), at(1), at(2)], &y)?;
    Ok(y)
}

/// The running statistics' update in place, each optional buffer `(C)` from its offset, of
/// the dtype of `mean` and `var` (`(C)`, f32 or f64): `running = running * (1 - momentum) + stat *
/// momentum`, the variance's stat unbiased (`* count / (count - 1)`); the products and the sum
/// rounded one by one in that dtype, as the tensor ops that compose it elsewhere.
pub(crate) fn update_running(
    running_mean: Option<(&mut CudaStorage, usize)>,
    running_var: Option<(&mut CudaStorage, usize)>,
    mean: Input,
    var: Input,
    c: usize,
    count: usize,
    momentum: f64,
) -> Result<()> {
    let dtype = mean.storage.dtype;
    if !matches!(dtype, DType::F32 | DType::F64) {
        return Err(Error::unsupported_dtype(OP, dtype));
    }
    let (rm, rv) = (written(&running_mean), written(&running_var));
    check(
        mean,
        &[
            ("mean", Some(mean), dtype, c),
            ("var", Some(var), dtype, c),
            ("running_mean", rm, dtype, c),
            ("running_var", rv, dtype, c),
        ],
    )?;
    if c == 0 || (rm.is_none() && rv.is_none()) {
        return Ok(());
    }
    let unbiased = count as f64 / (count as f64 - 1.0);
    let coefficients = [1.0 - momentum, momentum, momentum * unbiased];
    let (rm_ptr, rv_ptr) = (opt_ptr(rm), opt_ptr(rv));
    let name = format!("bn_running_{}", suffix(dtype));
    let cfg = grid(c);
    match dtype {
        DType::F32 => {
            let [keep, mom, mom_unbiased] = coefficients.map(|v| v as f32);
            launch!(
                &mean.storage.dev,
                MODULE,
                name,
                cfg,
                c as i64,
                keep,
                mom,
                mom_unbiased,
                ptr(mean),
                ptr(var),
                rm_ptr,
                rv_ptr
            );
        }
        _ => {
            let [keep, mom, mom_unbiased] = coefficients;
            launch!(
                &mean.storage.dev,
                MODULE,
                name,
                cfg,
                c as i64,
                keep,
                mom,
                mom_unbiased,
                ptr(mean),
                ptr(var),
                rm_ptr,
                rv_ptr
            );
        }
    }
    Ok(())
}

/// A buffer the kernel writes, as an operand to check and address.
fn written<'a>(t: &'a Option<(&mut CudaStorage, usize)>) -> Option<Input<'a>> {
    t.as_ref().map(|(s, at)| Input {
        storage: s,
        offset: *at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_statistics_split_covers_every_unit_in_bounded_blocks() {
        for (c, units) in [
            (1, 0),
            (1, 1),
            (3, 100),
            (64, 128 * 256),
            (2, 1 << 22),
            (4096, 256),
            (1, 1 << 30),
        ] {
            let (per_part, parts) = split(c, units);
            assert!(parts >= 1 && per_part >= 1, "{c} {units}");
            assert!(per_part * parts >= units, "{c} {units}: not covered");
            assert!(
                per_part * (parts - 1) < units.max(1),
                "{c} {units}: an empty part"
            );
            assert!(per_part <= MAX_UNITS_PER_BLOCK);
            // Many blocks per channel only where each gets real work.
            if parts > 1 {
                assert!(per_part >= MIN_UNITS_PER_BLOCK / 2, "{c} {units}");
            }
        }
        // A large channel count: one block per channel; a large channel: many.
        assert_eq!(split(4096, 256).1, 1);
        assert!(split(2, 1 << 22).1 >= 256);
    }

    #[test]
    fn the_row_split_covers_every_row_within_the_grid() {
        for (c, n) in [
            (1, 0),
            (1, 1),
            (8, 100),
            (512, 4096),
            (4096, 256),
            (3, 1 << 22),
            (1, 1 << 36),
        ] {
            let (per_part, parts) = split_rows(c, n);
            assert!(parts >= 1 && per_part >= 1, "{c} {n}");
            assert!(per_part * parts >= n, "{c} {n}: not covered");
            assert!(per_part * (parts - 1) < n.max(1), "{c} {n}: an empty part");
            assert!(per_part <= 1 << 24 && parts <= 65_535, "{c} {n}");
            if parts > 1 {
                assert!(per_part >= MIN_ROWS_PER_PART / 2, "{c} {n}");
            }
        }
        // Few channels, many rows: the rows are shared out; many channels: one part.
        assert!(split_rows(8, 1 << 20).1 >= 512);
        assert_eq!(split_rows(1 << 20, 256).1, 1);
    }

    #[test]
    fn vectors_only_for_whole_rows_and_aligned_buffers() {
        assert_eq!(vector_width(DType::F32, 1024, &[0x1000, 0x2000]), 4);
        assert_eq!(vector_width(DType::F32, 6, &[0x1000]), 1);
        assert_eq!(vector_width(DType::F32, 8, &[0x1004]), 1);
        assert_eq!(vector_width(DType::BF16, 16, &[0x1000]), 8);
        assert_eq!(vector_width(DType::F16, 4, &[0x1000]), 1);
        assert_eq!(vector_width(DType::F64, 2, &[0x1000, 0]), 2);
    }
}
