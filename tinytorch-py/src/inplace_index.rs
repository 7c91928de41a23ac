//! The in-place forms of the indexing ops (`masked_fill_`, `scatter_`, `scatter_add_`,
//! `index_add_`) and of `tril_`/`triu_`: each computes the out-of-place op of ops.rs and
//! writes the result into the tensor with `copy_`, whose rules for in-place writes (on
//! leaves that require grad, on saved tensors) apply. The result must keep the tensor's
//! shape: an in-place op cannot broadcast its target.

use crate::convert::PyScalar;
use crate::error::IntoPyResult;
use crate::tensor::{Operand, PyTensor};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use tinytorch::Tensor;

/// Write `result` into `target` (same shape) and return `target`.
fn write_back<'py>(
    op: &str,
    target: PyRef<'py, PyTensor>,
    result: &Tensor,
) -> PyResult<PyRef<'py, PyTensor>> {
    if result.shape() != target.t.shape() {
        return Err(PyRuntimeError::new_err(format!(
            "{op}: the result has shape {:?} but the tensor written in place has shape {:?} \
             (the other arguments must broadcast to its shape)",
            result.shape(),
            target.t.shape()
        )));
    }
    target.t.copy_(result).py()?;
    Ok(target)
}

#[pymethods]
impl PyTensor {
    /// `masked_fill_(mask, value)`: `masked_fill` written into this tensor.
    fn masked_fill_<'py>(
        slf: PyRef<'py, Self>,
        mask: PyRef<'_, PyTensor>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<PyRef<'py, Self>> {
        if let Ok(v) = value.extract::<PyScalar>() {
            slf.t.masked_fill_(&mask.t, v.0).py()?;
            return Ok(slf);
        }
        let filled = slf.masked_fill(mask, value)?.t;
        write_back("masked_fill_", slf, &filled)
    }

    /// `scatter_(dim, index, src)`, `scatter_(dim, index, value=v)` or with `reduce="add"`
    /// (`scatter_add_`); PyTorch's other reductions are not supported.
    #[pyo3(signature = (dim, index, src=None, *, value=None, reduce=None))]
    fn scatter_<'py>(
        slf: PyRef<'py, Self>,
        dim: isize,
        index: PyRef<'_, PyTensor>,
        src: Option<Operand>,
        value: Option<PyScalar>,
        reduce: Option<&str>,
    ) -> PyResult<PyRef<'py, Self>> {
        let result = match (reduce, src, value) {
            (None, src, value) => slf.scatter(dim, index, src, value)?.t,
            (Some("add"), Some(Operand::Tensor(s)), None) => {
                slf.t.scatter_add(dim, &index.t, &s).py()?
            }
            (Some(r), _, _) => {
                return Err(PyValueError::new_err(format!(
                    "scatter_: reduce={r:?} is not supported (TinyTorch has reduce=\"add\" \
                     with a src tensor)"
                )))
            }
        };
        write_back("scatter_", slf, &result)
    }

    /// `scatter_add_(dim, index, src)`.
    fn scatter_add_<'py>(
        slf: PyRef<'py, Self>,
        dim: isize,
        index: PyRef<'_, PyTensor>,
        src: PyRef<'_, PyTensor>,
    ) -> PyResult<PyRef<'py, Self>> {
        let result = slf.t.scatter_add(dim, &index.t, &src.t).py()?;
        write_back("scatter_add_", slf, &result)
    }

    /// `index_add_(dim, index, source, *, alpha=1)`.
    #[pyo3(signature = (dim, index, source, *, alpha=None))]
    fn index_add_<'py>(
        slf: PyRef<'py, Self>,
        dim: isize,
        index: PyRef<'_, PyTensor>,
        source: PyRef<'_, PyTensor>,
        alpha: Option<PyScalar>,
    ) -> PyResult<PyRef<'py, Self>> {
        let result = slf.index_add(dim, index, source, alpha)?.t;
        write_back("index_add_", slf, &result)
    }

    /// `tril_(diagonal=0)`: zero the elements above the `diagonal`-th diagonal.
    #[pyo3(signature = (diagonal=0))]
    fn tril_(slf: PyRef<'_, Self>, diagonal: i64) -> PyResult<PyRef<'_, Self>> {
        let result = slf.t.tril(diagonal).py()?;
        write_back("tril_", slf, &result)
    }

    /// `triu_(diagonal=0)`: zero the elements below the `diagonal`-th diagonal.
    #[pyo3(signature = (diagonal=0))]
    fn triu_(slf: PyRef<'_, Self>, diagonal: i64) -> PyResult<PyRef<'_, Self>> {
        let result = slf.t.triu(diagonal).py()?;
        write_back("triu_", slf, &result)
    }
}
