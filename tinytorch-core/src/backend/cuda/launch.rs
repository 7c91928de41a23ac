//! Kernel arguments and launch geometry: the `Shape`/`Strides` structs of prelude.cuh, built
//! from layouts, and the grid for a grid-stride loop.

use crate::base::layout::merge_dims;
use crate::base::Layout;
use crate::error::{Error, Result};
use cudarc::driver::{DeviceRepr, LaunchConfig};

/// Most dimensions a kernel indexes (after merging contiguous runs); prelude.cuh's MAX_DIMS.
pub const MAX_DIMS: usize = 8;
/// Threads per block of every kernel (the reductions assume it).
pub const BLOCK: u32 = 256;
/// Most blocks of the row kernels (norms, cross-entropy: each block loops over its share of
/// rows).
const MAX_ROW_BLOCKS: usize = 65_535;

/// One block of [`BLOCK`] threads per row, up to [`MAX_ROW_BLOCKS`] blocks.
pub fn row_grid(rows: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (rows.clamp(1, MAX_ROW_BLOCKS) as u32, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// `struct Shape` of prelude.cuh.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct KShape {
    ndim: i64,
    size: [i64; MAX_DIMS],
}

/// `struct Strides` of prelude.cuh.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct KStrides {
    offset: i64,
    s: [i64; MAX_DIMS],
}

// SAFETY: plain `repr(C)` structs of integers, laid out as their C twins.
unsafe impl DeviceRepr for KShape {}
unsafe impl DeviceRepr for KStrides {}

fn too_many_dims(op: &'static str, shape: &[usize]) -> Error {
    Error::NotImplemented {
        op,
        what: format!("CUDA tensors whose layout has more than {MAX_DIMS} non-mergeable dims (shape {shape:?})"),
    }
}

impl KShape {
    /// A shape of at most MAX_DIMS dims (a 0-d shape indexes one element).
    pub fn new(op: &'static str, shape: &[usize]) -> Result<KShape> {
        if shape.len() > MAX_DIMS {
            return Err(too_many_dims(op, shape));
        }
        let mut k = KShape {
            ndim: shape.len().max(1) as i64,
            size: [1; MAX_DIMS],
        };
        for (d, &n) in shape.iter().enumerate() {
            k.size[d] = n as i64;
        }
        Ok(k)
    }
}

impl KStrides {
    /// Strides (in elements) and offset, padded to MAX_DIMS.
    pub fn new(op: &'static str, strides: &[usize], offset: usize) -> Result<KStrides> {
        if strides.len() > MAX_DIMS {
            return Err(too_many_dims(op, strides));
        }
        let mut k = KStrides {
            offset: offset as i64,
            s: [0; MAX_DIMS],
        };
        for (d, &s) in strides.iter().enumerate() {
            k.s[d] = s as i64;
        }
        Ok(k)
    }
}

/// The common shape and per-operand strides of an elementwise kernel over operands of the
/// same shape: dims contiguous in every operand are merged, so a contiguous tensor is one
/// dim and the kernel does no division.
pub fn elementwise<const K: usize>(
    op: &'static str,
    layouts: &[&Layout; K],
) -> Result<(KShape, Vec<KStrides>)> {
    let shape = layouts[0].shape();
    let strides: [&[usize]; K] = std::array::from_fn(|k| layouts[k].strides());
    let (mshape, mstrides) = merge_dims(shape, strides).unwrap_or_else(|| {
        (
            smallvec::smallvec![0],
            std::array::from_fn(|_| smallvec::smallvec![1]),
        )
    });
    let kshape = KShape::new(op, &mshape)?;
    let ks = mstrides
        .iter()
        .zip(layouts)
        .map(|(s, l)| KStrides::new(op, s, l.offset()))
        .collect::<Result<Vec<_>>>()?;
    Ok((kshape, ks))
}

/// Grid for a grid-stride loop over `n` items (at least one block).
pub fn grid(n: usize) -> LaunchConfig {
    let blocks = n.div_ceil(BLOCK as usize).clamp(1, 65_535 * 4);
    LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Items per thread per sweep of the kernels that use prelude.cuh's `FOR_EACH_SWEEP`
/// (its `UNROLL`).
const UNROLL: usize = 4;

/// Grid for a `FOR_EACH_SWEEP` kernel over `n` items: a thread per [`UNROLL`] items.
pub fn grid_sweeps(n: usize) -> LaunchConfig {
    grid(n.div_ceil(UNROLL))
}

/// Grid for kernels where a group of `group` threads handles one of `items` items.
pub fn grid_groups(items: usize, group: u32) -> LaunchConfig {
    grid(items * group as usize)
}

/// Launch kernel `$name` of source `$module` on `$dev`'s stream with `$cfg` and the listed
/// arguments (each bound to a local first, so that the launch borrows live values).
macro_rules! launch {
    ($dev:expr, $module:expr, $name:expr, $cfg:expr, $($arg:expr),* $(,)?) => {{
        use cudarc::driver::PushKernelArg as _;
        let dev: &$crate::backend::cuda::CudaDevice = $dev;
        let func = dev.function($module, &$name)?;
        let mut builder = dev.stream.launch_builder(&func);
        $(
            let arg = $arg;
            builder.arg(&arg);
        )*
        // SAFETY: the arguments match the kernel's signature in kernels/*.cu (same order and
        // C types), and every pointer is a live buffer of this device, large enough for the
        // layout passed beside it.
        unsafe { builder.launch($cfg) }
            .map_err(|e| $crate::backend::cuda::device::cuda_err($module, format!("{}: {e:?}", $name)))?;
    }};
}
pub(crate) use launch;
