//! Index kernels: index_select, gather, scatter, index_add and sort. TODO(helper): implement.

use super::CpuStorage;
use crate::error::{Error, Result};
use crate::tensor::Layout;

fn todo(op: &'static str) -> Error {
    Error::NotImplemented {
        op,
        what: "the CPU backend (not written yet)".into(),
    }
}

/// Slices along `dim` picked by `index`.
pub fn index_select(
    _s: &CpuStorage,
    _l: &Layout,
    _dim: usize,
    _i: &CpuStorage,
    _il: &Layout,
) -> Result<CpuStorage> {
    Err(todo("index_select"))
}

/// Gather along `dim`.
pub fn gather(
    _s: &CpuStorage,
    _l: &Layout,
    _dim: usize,
    _i: &CpuStorage,
    _il: &Layout,
) -> Result<CpuStorage> {
    Err(todo("gather"))
}

/// Scatter (or scatter-add) `src` into `dst` along `dim`.
#[allow(clippy::too_many_arguments)]
pub fn scatter_inplace(
    _dst: &mut CpuStorage,
    _l: &Layout,
    _dim: usize,
    _i: &CpuStorage,
    _il: &Layout,
    _src: &CpuStorage,
    _sl: &Layout,
    _accumulate: bool,
) -> Result<()> {
    Err(todo("scatter"))
}

/// `dst.index_add_(dim, index, src)`.
pub fn index_add_inplace(
    _dst: &mut CpuStorage,
    _l: &Layout,
    _dim: usize,
    _i: &CpuStorage,
    _il: &Layout,
    _src: &CpuStorage,
    _sl: &Layout,
) -> Result<()> {
    Err(todo("index_add"))
}

/// Stable sort along `dim`.
pub fn sort(
    _s: &CpuStorage,
    _l: &Layout,
    _dim: usize,
    _descending: bool,
) -> Result<(CpuStorage, CpuStorage)> {
    Err(todo("sort"))
}
