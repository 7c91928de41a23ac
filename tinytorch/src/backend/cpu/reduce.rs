//! Reductions, scans and softmax. TODO(helper): implement.

use super::CpuStorage;
use crate::backend::{ArgReduceOp, ReduceOp, ScanOp};
use crate::error::{Error, Result};
use crate::tensor::Layout;

fn todo(op: &'static str) -> Error {
    Error::NotImplemented { op, what: "the CPU backend (not written yet)".into() }
}

/// Reduce over `dims`, keeping them as size 1.
pub fn reduce(_s: &CpuStorage, _l: &Layout, _op: ReduceOp, _dims: &[usize]) -> Result<CpuStorage> {
    Err(todo("reduce"))
}

/// Index of the max/min along `dim`.
pub fn arg_reduce(_s: &CpuStorage, _l: &Layout, _op: ArgReduceOp, _dim: usize) -> Result<CpuStorage> {
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
