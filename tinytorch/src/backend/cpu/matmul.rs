//! Batched matrix multiplication through the `gemm` crate. TODO(helper): implement.

use super::CpuStorage;
use crate::error::{Error, Result};
use crate::tensor::Layout;

/// `(b, m, k) x (b, k, n) -> (b, m, n)`.
pub fn matmul(_a: &CpuStorage, _al: &Layout, _b: &CpuStorage, _bl: &Layout) -> Result<CpuStorage> {
    Err(Error::NotImplemented {
        op: "matmul",
        what: "the CPU backend (not written yet)".into(),
    })
}
