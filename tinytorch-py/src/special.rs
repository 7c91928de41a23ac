//! `torch.special`'s native half (the `_special` submodule): the special functions that are
//! not also `Tensor` methods in PyTorch (`i0e`, `i1`, `i1e`, `polygamma`'s kernel).
//! `python/tinytorch/special.py` holds the module and composes the rest.

use crate::tensor::{nogil, PyTensor};
use pyo3::prelude::*;

macro_rules! special_fns {
    ($($name:ident),* $(,)?) => {
        $(
            #[doc = concat!("`torch.special.", stringify!($name), "`.")]
            #[pyfunction]
            fn $name(py: Python<'_>, x: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
                let x = x.t.clone();
                nogil(py, x.numel(), || x.$name()).map(Into::into)
            }
        )*
    };
}
special_fns!(i0e, i1, i1e);

/// `torch.polygamma(n, x)` for `n` 0 and 1.
#[pyfunction]
fn polygamma(py: Python<'_>, n: u32, x: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
    let x = x.t.clone();
    nogil(py, x.numel(), || x.polygamma(n)).map(Into::into)
}

/// Add the functions to the `_special` submodule.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(i0e, m)?)?;
    m.add_function(wrap_pyfunction!(i1, m)?)?;
    m.add_function(wrap_pyfunction!(i1e, m)?)?;
    m.add_function(wrap_pyfunction!(polygamma, m)?)?;
    Ok(())
}
