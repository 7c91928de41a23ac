//! The int8 layer behind `tinytorch.ao.nn.quantized.dynamic.Linear`
//! (`tinytorch::quant::DynamicQuantLinear`): built once from a float Linear's weight and bias,
//! then called on f32 CPU tensors without gradients.

use crate::error::IntoPyResult;
use crate::tensor::PyTensor;
use pyo3::prelude::*;
use tinytorch::nn::{Linear, Module};
use tinytorch::quant::DynamicQuantLinear;

/// A dynamically quantized Linear layer's int8 weights.
#[pyclass(module = "tinytorch._tinytorch", name = "_DynamicQuantLinear", frozen)]
pub struct PyDynamicQuantLinear {
    inner: DynamicQuantLinear,
}

#[pymethods]
impl PyDynamicQuantLinear {
    /// Quantize `weight` (`(out_features, in_features)`) per output channel; keep `bias` in f32.
    #[new]
    #[pyo3(signature = (weight, bias=None))]
    fn new(weight: PyRef<'_, PyTensor>, bias: Option<PyRef<'_, PyTensor>>) -> PyResult<Self> {
        let w = &weight.t;
        if w.ndim() != 2 {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "quantize_dynamic: a Linear weight has 2 dims, got shape {:?}",
                w.shape()
            )));
        }
        let mut linear = Linear::new(w.shape()[1], w.shape()[0], false).py()?;
        linear.weight = w.detach();
        linear.bias = bias.map(|b| b.t.detach());
        Ok(PyDynamicQuantLinear {
            inner: DynamicQuantLinear::from_linear(&linear).py()?,
        })
    }

    /// The layer applied to `x` (`(..., in_features)`, f32 on the CPU).
    fn forward(&self, x: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let _guard = tinytorch::no_grad();
        Ok(self.inner.forward(&x.t).py()?.into())
    }

    /// Bytes of the int8 weights, their scales and the bias.
    #[getter]
    fn weight_bytes(&self) -> usize {
        self.inner.weight_bytes()
    }
}
