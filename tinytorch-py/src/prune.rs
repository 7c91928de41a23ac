//! The masks of `tinytorch.nn.utils.prune` (`tinytorch::prune::magnitude`): an int amount is
//! a count, a float a fraction of what the current mask still keeps.

use crate::error::IntoPyResult;
use crate::tensor::PyTensor;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use tinytorch::prune::{self, Amount};
use tinytorch::Tensor;

fn amount_of(obj: &Bound<'_, PyAny>) -> PyResult<Amount> {
    if obj.is_instance_of::<pyo3::types::PyBool>() {
        return Err(PyTypeError::new_err(
            "amount must be an int or a float, not bool",
        ));
    }
    if let Ok(n) = obj.extract::<i64>() {
        if n < 0 {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "amount={n} should either be a float in the range [0, 1] or a non-negative integer"
            )));
        }
        return Ok(Amount::Count(n as usize));
    }
    Ok(Amount::Fraction(obj.extract::<f64>()?))
}

fn opt(mask: &Option<PyRef<'_, PyTensor>>) -> Option<Tensor> {
    mask.as_ref().map(|m| m.t.clone())
}

/// `l1_unstructured`'s mask for `weight`, given the current `mask`.
#[pyfunction]
#[pyo3(signature = (weight, amount, mask=None))]
pub fn _prune_l1_unstructured(
    weight: PyRef<'_, PyTensor>,
    amount: &Bound<'_, PyAny>,
    mask: Option<PyRef<'_, PyTensor>>,
) -> PyResult<PyTensor> {
    let m = opt(&mask);
    Ok(
        prune::l1_unstructured(&weight.t, amount_of(amount)?, m.as_ref())
            .py()?
            .into(),
    )
}

/// `global_unstructured`'s masks for `weights`, given their current masks.
#[pyfunction]
pub fn _prune_global_unstructured(
    weights: Vec<PyRef<'_, PyTensor>>,
    amount: &Bound<'_, PyAny>,
    masks: Vec<Option<PyRef<'_, PyTensor>>>,
) -> PyResult<Vec<PyTensor>> {
    let ws: Vec<Tensor> = weights.iter().map(|w| w.t.clone()).collect();
    let ms: Vec<Option<Tensor>> = masks.iter().map(opt).collect();
    let w_refs: Vec<&Tensor> = ws.iter().collect();
    let m_refs: Vec<Option<&Tensor>> = ms.iter().map(Option::as_ref).collect();
    let out = prune::global_unstructured(&w_refs, amount_of(amount)?, &m_refs).py()?;
    Ok(out.into_iter().map(PyTensor::from).collect())
}

/// `ln_structured`'s mask for `weight` (norm order `n`, slices along `dim`).
#[pyfunction]
#[pyo3(signature = (weight, amount, n, dim, mask=None))]
pub fn _prune_ln_structured(
    weight: PyRef<'_, PyTensor>,
    amount: &Bound<'_, PyAny>,
    n: f64,
    dim: isize,
    mask: Option<PyRef<'_, PyTensor>>,
) -> PyResult<PyTensor> {
    let ndim = weight.t.ndim() as isize;
    // A dim below -ndim stays out of range (usize::MAX), which ln_structured reports.
    let dim = usize::try_from(if dim < 0 { dim + ndim } else { dim }).unwrap_or(usize::MAX);
    let m = opt(&mask);
    Ok(
        prune::ln_structured(&weight.t, amount_of(amount)?, n, dim, m.as_ref())
            .py()?
            .into(),
    )
}
