//! Reductions, scans and softmax. TODO(helper): implement.

use super::strided::map1;
use super::{CpuElement, CpuStorage};
use crate::backend::{ArgReduceOp, ReduceOp, ScanOp};
use crate::error::{Error, Result};
use crate::tensor::Layout;
use crate::with_cpu_storage;

fn todo(op: &'static str) -> Error {
    Error::NotImplemented {
        op,
        what: "the CPU backend (not written yet)".into(),
    }
}

/// Reduce over `dims`, keeping them as size 1.
/// Reference path (TODO(helper): fast paths): reduced dims are moved last, copied
/// contiguous, and each output element folds one contiguous block, accumulating in f64.
pub fn reduce(s: &CpuStorage, l: &Layout, op: ReduceOp, dims: &[usize]) -> Result<CpuStorage> {
    if op != ReduceOp::Sum {
        return Err(todo("reduce"));
    }
    let nd = l.ndim();
    let kept: Vec<usize> = (0..nd).filter(|d| !dims.contains(d)).collect();
    let perm: Vec<isize> = kept.iter().chain(dims).map(|&d| d as isize).collect();
    let pl = l.permute("reduce", &perm)?;
    let inner: usize = dims.iter().map(|&d| l.shape()[d]).product();
    let outer: usize = kept.iter().map(|&d| l.shape()[d]).product();
    fn go<T: CpuElement>(v: &[T], pl: &Layout, outer: usize, inner: usize) -> CpuStorage {
        let data = map1(v, pl, |x| x);
        let out: Vec<T> = (0..outer)
            .map(|o| {
                T::from_f64(
                    data[o * inner..(o + 1) * inner]
                        .iter()
                        .map(|x| x.to_f64())
                        .sum(),
                )
            })
            .collect();
        CpuStorage::from_vec(out)
    }
    Ok(with_cpu_storage!(s, v => go(v, &pl, outer, inner)))
}

/// Index of the max/min along `dim`.
pub fn arg_reduce(
    _s: &CpuStorage,
    _l: &Layout,
    _op: ArgReduceOp,
    _dim: usize,
) -> Result<CpuStorage> {
    Err(todo("arg_reduce"))
}

/// Inclusive scan along `dim`.
pub fn scan(_s: &CpuStorage, _l: &Layout, _op: ScanOp, _dim: usize) -> Result<CpuStorage> {
    Err(todo("scan"))
}

/// Softmax or log-softmax along `dim`.
pub fn softmax(_s: &CpuStorage, _l: &Layout, _dim: usize, _log: bool) -> Result<CpuStorage> {
    Err(todo("softmax"))
}
