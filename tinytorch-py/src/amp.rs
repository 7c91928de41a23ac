//! `torch.autocast`'s scope: the Python context manager (python/tinytorch/amp/autocast_mode.py)
//! sets and restores the thread's autocast dtype through these two functions; the casting
//! itself is the Rust library's (`tinytorch::amp`).

use crate::convert::PyDType;
use pyo3::prelude::*;

/// The dtype of the enclosing autocast scope on this thread, None outside one.
#[pyfunction]
pub fn _autocast_dtype() -> Option<PyDType> {
    tinytorch::amp::autocast_dtype().map(PyDType)
}

/// Set this thread's autocast dtype (float16 or bfloat16; None turns autocast off) and
/// return the previous one, which the scope's exit passes back here.
#[pyfunction]
pub fn _set_autocast_dtype(dtype: Option<PyRef<'_, PyDType>>) -> PyResult<Option<PyDType>> {
    let previous = tinytorch::amp::autocast_dtype();
    match dtype.map(|d| d.0) {
        Some(d) => std::mem::forget(tinytorch::amp::autocast(d).map_err(crate::error::to_py)?),
        None => std::mem::forget(tinytorch::amp::set_autocast_dtype(None)),
    }
    Ok(previous.map(PyDType))
}
