//! TinyTorch's errors as the Python exceptions PyTorch raises for the same mistakes: an index
//! out of range is an `IndexError`, a file problem an `OSError`, a singular or
//! not positive-definite matrix a `torch.linalg.LinAlgError` (a `RuntimeError`), everything else (shapes,
//! dtypes, devices, autograd misuse) a `RuntimeError`, each with TinyTorch's message, which
//! names the operation and the values at fault.

use pyo3::exceptions::{PyIndexError, PyNotImplementedError, PyOSError, PyRuntimeError};
use pyo3::PyErr;
use tinytorch::Error;

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
        Error::Index { .. } => PyIndexError::new_err(msg),
        Error::Io(_) => PyOSError::new_err(msg),
        Error::NotImplemented { .. } => PyNotImplementedError::new_err(msg),
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
