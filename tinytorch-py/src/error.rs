//! TinyTorch's errors as the Python exceptions PyTorch raises for the same mistakes: an index
//! or dimension out of range is an `IndexError`, a file problem an `OSError`, a missing kernel
//! `NotImplementedError`, a GPU out of memory `torch.OutOfMemoryError` (a `RuntimeError`), a
//! singular or not positive-definite matrix a `torch.linalg.LinAlgError` (a `RuntimeError`),
//! everything else (shapes, dtypes, devices, autograd misuse, CPU out of memory) a
//! `RuntimeError`, each with TinyTorch's message, which names the operation and the values at
//! fault.
//!
//! Panics do not kill the interpreter either: pyo3 raises a panic inside a binding as its
//! `PanicException`, which [`panics_are_runtime_errors`] makes a `RuntimeError` at import.

use pyo3::exceptions::{PyIndexError, PyNotImplementedError, PyOSError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::PyErr;
use tinytorch::{Device, Error};

pyo3::create_exception!(
    tinytorch,
    OutOfMemoryError,
    PyRuntimeError,
    "A device ran out of memory (`torch.OutOfMemoryError`, also `torch.cuda.OutOfMemoryError`)."
);

/// Operations whose out-of-range index *values* PyTorch reports as `RuntimeError` (an index
/// inside `gather`/`scatter`'s index tensor, `topk`'s k, a `narrow` range), where TinyTorch
/// has `Error::Index`. Their dimension arguments out of range stay `IndexError`, as
/// everywhere in PyTorch ("Dimension out of range").
const RUNTIME_ERROR_INDEX_OPS: &[&str] = &[
    "gather",
    "scatter",
    "scatter_add",
    "scatter_reduce",
    "topk",
    "kthvalue",
    "narrow",
];

pyo3::create_exception!(
    tinytorch,
    LinAlgError,
    PyRuntimeError,
    "A matrix that a linear-algebra routine cannot handle: singular for an inverse or a \
     solve, not positive-definite for Cholesky (`torch.linalg.LinAlgError`)."
);

/// The Python exception for a TinyTorch error.
pub fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    match e {
        Error::Index { op, msg: detail }
            if RUNTIME_ERROR_INDEX_OPS.contains(&op) && !detail.starts_with("dimension") =>
        {
            PyRuntimeError::new_err(msg)
        }
        Error::Index { .. } => PyIndexError::new_err(msg),
        Error::Io(_) => PyOSError::new_err(msg),
        Error::NotImplemented { .. } => PyNotImplementedError::new_err(msg),
        // PyTorch raises its OutOfMemoryError for the GPU only; the CPU allocator's failure
        // is a plain RuntimeError there.
        Error::OutOfMemory {
            device: Device::Cuda(_),
            ..
        } => OutOfMemoryError::new_err(msg),
        Error::LinAlg { .. } => LinAlgError::new_err(msg),
        _ => PyRuntimeError::new_err(msg),
    }
}

/// `?` on a TinyTorch result inside a binding: `t.add(&u).py()?`.
pub trait IntoPyResult<T> {
    /// The result with its error turned into a Python exception.
    fn py(self) -> pyo3::PyResult<T>;
}

impl<T> IntoPyResult<T> for tinytorch::Result<T> {
    fn py(self) -> pyo3::PyResult<T> {
        self.map_err(to_py)
    }
}

/// Make pyo3's `PanicException` a subclass of `RuntimeError`, so that a panic anywhere under
/// a binding (a bug, or an allocation a kernel could not get) reaches Python as an exception
/// that `except RuntimeError` and `except Exception` catch, as PyTorch's internal errors are,
/// instead of a `BaseException` that ends the script or the notebook kernel.
///
/// pyo3 catches every panic at the boundary of each `#[pyfunction]` and `#[pymethods]` call
/// and raises it as `pyo3_runtime.PanicException` (a `BaseException`, so that it propagates
/// like `SystemExit`). There is no hook to choose another type, and wrapping each of the
/// hundreds of bindings in `catch_unwind` would be a copy of that machinery; re-basing the one
/// type object is one line in one place. The exception class is a heap type created by this
/// extension's copy of pyo3, so no other extension sees the change, and its instance layout
/// is `BaseException`'s, which `RuntimeError` shares, so CPython accepts the new base.
/// pyo3 still recognises the type by identity when a panic crosses a Python frame back into
/// Rust (it resumes the unwind), so nothing else changes.
pub fn panics_are_runtime_errors(py: Python<'_>) -> PyResult<()> {
    let panic = py.get_type::<pyo3::panic::PanicException>();
    let runtime_error = py.get_type::<PyRuntimeError>();
    panic.setattr("__bases__", (runtime_error,))
}

/// `tinytorch._C._test_panic(released_gil=False)`: panic inside a binding, for the test that
/// checks a panic reaches Python as a `RuntimeError` and the interpreter lives on. With
/// `released_gil`, the panic happens in code running without the GIL, as kernels do.
#[pyfunction]
#[pyo3(signature = (released_gil=false))]
pub fn _test_panic(py: Python<'_>, released_gil: bool) {
    if released_gil {
        py.detach(|| panic!("_test_panic: a deliberate panic without the GIL"));
    } else {
        panic!("_test_panic: a deliberate panic");
    }
}
