//! Elementwise kernels of one operand (transcendental functions, activations, scalar ops).
//! TODO(helper): implement.

use super::CpuStorage;
use crate::backend::{BackendStorage, UnaryOp};
use crate::error::{Error, Result};
use crate::tensor::Layout;

/// `op(x)` elementwise.
pub fn unary(s: &CpuStorage, _layout: &Layout, op: UnaryOp) -> Result<CpuStorage> {
    Err(Error::NotImplemented {
        op: "unary",
        what: format!("{op:?} on {}", s.dtype()),
    })
}

/// `x = op(x)` elementwise, in place.
pub fn unary_inplace(s: &mut CpuStorage, _layout: &Layout, op: UnaryOp) -> Result<()> {
    Err(Error::NotImplemented {
        op: "unary_",
        what: format!("{op:?} on {}", s.dtype()),
    })
}
