//! `torch.backends.cudnn`'s native half: whether cuDNN loads, its version, and the four
//! flags of the CUDA backend (`enabled`, `benchmark`, `deterministic`, `allow_tf32`) that
//! the Python module's attributes set (python/tinytorch/backends/cudnn.py). Without CUDA
//! compiled in there is no cuDNN: not available, no version, and no backend for the flags.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Whether cuDNN loads in this process (`torch.backends.cudnn.is_available()`); opens the
/// library on the first call. False without CUDA compiled in.
#[pyfunction]
fn _cudnn_is_available() -> bool {
    #[cfg(feature = "cuda")]
    {
        tinytorch::backend::cuda::cudnn::is_available()
    }
    #[cfg(not(feature = "cuda"))]
    {
        false
    }
}

/// cuDNN's version number (90100 for 9.1.0; `torch.backends.cudnn.version()`), `None`
/// where it does not load.
#[pyfunction]
fn _cudnn_version() -> Option<usize> {
    #[cfg(feature = "cuda")]
    {
        tinytorch::backend::cuda::cudnn::version()
    }
    #[cfg(not(feature = "cuda"))]
    {
        None
    }
}

/// Why cuDNN does not load (the loader's message), `None` where it does.
#[pyfunction]
fn _cudnn_unavailable_reason() -> Option<String> {
    #[cfg(feature = "cuda")]
    {
        tinytorch::backend::cuda::cudnn::check()
            .err()
            .map(|e| e.to_string())
    }
    #[cfg(not(feature = "cuda"))]
    {
        Some("TinyTorch was built without CUDA".into())
    }
}

/// The four flag names, in the order `_cudnn_flags` returns them.
const FLAGS: [&str; 4] = ["enabled", "benchmark", "deterministic", "allow_tf32"];

/// Set the backend's flag `name` (one of [`FLAGS`]); without CUDA compiled in there is no
/// backend to set, and only the name is checked.
#[pyfunction]
fn _cudnn_set_flag(name: &str, on: bool) -> PyResult<()> {
    if !FLAGS.contains(&name) {
        return Err(PyValueError::new_err(format!(
            "unknown cuDNN flag {name:?}; the flags are {FLAGS:?}"
        )));
    }
    #[cfg(feature = "cuda")]
    {
        use tinytorch::backend::cuda::cudnn;
        match name {
            "enabled" => cudnn::set_enabled(on),
            "benchmark" => cudnn::set_benchmark(on),
            "deterministic" => cudnn::set_deterministic(on),
            _ => cudnn::set_allow_tf32(on),
        }
    }
    #[cfg(not(feature = "cuda"))]
    let _ = on;
    Ok(())
}

/// The backend's flags as it reads them, `(enabled, benchmark, deterministic, allow_tf32)`;
/// `None` without CUDA compiled in.
#[pyfunction]
fn _cudnn_flags() -> Option<(bool, bool, bool, bool)> {
    #[cfg(feature = "cuda")]
    {
        use tinytorch::backend::cuda::cudnn;
        Some((
            cudnn::enabled(),
            cudnn::benchmark(),
            cudnn::deterministic(),
            cudnn::allow_tf32(),
        ))
    }
    #[cfg(not(feature = "cuda"))]
    {
        None
    }
}

/// Add this file's functions to the native module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_cudnn_is_available, m)?)?;
    m.add_function(wrap_pyfunction!(_cudnn_version, m)?)?;
    m.add_function(wrap_pyfunction!(_cudnn_unavailable_reason, m)?)?;
    m.add_function(wrap_pyfunction!(_cudnn_set_flag, m)?)?;
    m.add_function(wrap_pyfunction!(_cudnn_flags, m)?)?;
    Ok(())
}
