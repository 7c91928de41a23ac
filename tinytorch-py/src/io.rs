//! safetensors files: what `torch.save`/`torch.load` (tinytorch/_serialization.py) are built
//! on. No pickle: loading a file never runs code. Writes are atomic (a crash while saving
//! leaves the previous file whole).

use crate::error::IntoPyResult;
use crate::tensor::PyTensor;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::BTreeMap;
use tinytorch::io as st;

/// Write `tensors` (name to tensor) and string `metadata` to `path`.
#[pyfunction]
pub fn _save_safetensors(
    py: Python<'_>,
    path: std::path::PathBuf,
    tensors: &Bound<'_, PyDict>,
    metadata: BTreeMap<String, String>,
) -> PyResult<()> {
    let mut map = BTreeMap::new();
    for (k, v) in tensors.iter() {
        map.insert(
            k.extract::<String>()?,
            v.cast::<PyTensor>()?.borrow().t.clone(),
        );
    }
    py.detach(|| st::save_safetensors_with_metadata(&path, &map, &metadata))
        .py()
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
    let d = PyDict::new(py);
    for (k, t) in tensors {
        d.set_item(k, PyTensor::from(t))?;
    }
    Ok((d, metadata))
}
