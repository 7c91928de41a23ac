//! safetensors files: what `torch.save`/`torch.load` (tinytorch/_serialization.py) are built
//! on. No pickle: loading a file never runs code. Writes are atomic (a crash while saving
//! leaves the previous file whole).

use crate::error::IntoPyResult;
use crate::tensor::PyTensor;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::collections::BTreeMap;
use tinytorch::io as st;
use tinytorch::Tensor;

/// Write `tensors` (name to tensor) and string `metadata` to `path`.
#[pyfunction]
pub fn _save_safetensors(
    py: Python<'_>,
    path: std::path::PathBuf,
    tensors: &Bound<'_, PyDict>,
    metadata: BTreeMap<String, String>,
) -> PyResult<()> {
    let map = tensor_map(tensors)?;
    py.detach(|| st::save_safetensors_with_metadata(&path, &map, &metadata))
        .py()
}

/// The bytes of a safetensors file holding `tensors` and `metadata` (for file objects).
#[pyfunction]
pub fn _serialize_safetensors<'py>(
    py: Python<'py>,
    tensors: &Bound<'py, PyDict>,
    metadata: BTreeMap<String, String>,
) -> PyResult<Bound<'py, PyBytes>> {
    let map = tensor_map(tensors)?;
    let bytes = py
        .detach(|| st::serialize_safetensors(&map, &metadata))
        .py()?;
    Ok(PyBytes::new(py, &bytes))
}

/// Parse the bytes of a safetensors file: (name to tensor, metadata).
#[pyfunction]
pub fn _deserialize_safetensors<'py>(
    py: Python<'py>,
    data: &[u8],
) -> PyResult<(Bound<'py, PyDict>, BTreeMap<String, String>)> {
    let (tensors, metadata) = py.detach(|| st::deserialize_safetensors(data)).py()?;
    Ok((tensor_dict(py, tensors)?, metadata))
}

/// Read `path`: (name to tensor, metadata).
#[pyfunction]
pub fn _load_safetensors<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
) -> PyResult<(Bound<'py, PyDict>, BTreeMap<String, String>)> {
    let (tensors, metadata) = py
        .detach(|| st::load_safetensors_with_metadata(&path))
        .py()?;
    Ok((tensor_dict(py, tensors)?, metadata))
}

/// The tensors of a Python dict of name to tensor.
fn tensor_map(tensors: &Bound<'_, PyDict>) -> PyResult<BTreeMap<String, Tensor>> {
    tensors
        .iter()
        .map(|(k, v)| {
            Ok((
                k.extract::<String>()?,
                v.cast::<PyTensor>()?.borrow().t.clone(),
            ))
        })
        .collect()
}

/// A Python dict of name to tensor.
fn tensor_dict<'py>(
    py: Python<'py>,
    tensors: BTreeMap<String, Tensor>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, t) in tensors {
        d.set_item(k, PyTensor::from(t))?;
    }
    Ok(d)
}
