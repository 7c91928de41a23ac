//! `nn.RNNCell`, `nn.LSTMCell`, `nn.GRUCell`: one step of the Rust cells
//! (`tinytorch::nn::{RNNCell, LSTMCell, GRUCell}`). The Python Modules
//! (python/tinytorch/nn/rnn_cell.py) own their `Parameter`s and pass them in at every call,
//! so `.to()`, optimizers and state dicts need nothing from this side; `_cell_init` gives the
//! Rust layers' default initialisation, U(-1/sqrt(hidden), 1/sqrt(hidden)), as PyTorch's.

use crate::convert::opt_dtype;
use crate::error::IntoPyResult;
use crate::tensor::{nogil, PyTensor};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tinytorch::nn::{GRUCell, LSTMCell, Module, Nonlinearity, RNNCell, RecurrentWeights};
use tinytorch::{DType, Device};

fn nonlinearity_of(name: &str) -> PyResult<Nonlinearity> {
    match name {
        "tanh" => Ok(Nonlinearity::Tanh),
        "relu" => Ok(Nonlinearity::Relu),
        other => Err(PyValueError::new_err(format!(
            "RNNCell: Unknown nonlinearity: {other} (expected 'tanh' or 'relu')"
        ))),
    }
}

/// `(name, tensor)` of a new cell's parameters (`weight_ih`, `weight_hh`, `bias_ih`,
/// `bias_hh`), initialised as PyTorch initialises them; `kind` is "RNN", "LSTM" or "GRU".
#[pyfunction]
#[pyo3(signature = (kind, input_size, hidden_size, bias, nonlinearity="tanh", dtype=None))]
pub fn _cell_init(
    kind: &str,
    input_size: usize,
    hidden_size: usize,
    bias: bool,
    nonlinearity: &str,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<(String, PyTensor)>> {
    let dtype = opt_dtype(dtype)?.unwrap_or(DType::F32);
    let (i, h, dev) = (input_size, hidden_size, Device::Cpu);
    let params = match kind {
        "RNN" => RNNCell::new_with(i, h, bias, nonlinearity_of(nonlinearity)?, dtype, dev)
            .py()?
            .named_parameters(),
        "LSTM" => LSTMCell::new_with(i, h, bias, dtype, dev)
            .py()?
            .named_parameters(),
        "GRU" => GRUCell::new_with(i, h, bias, dtype, dev)
            .py()?
            .named_parameters(),
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown recurrent cell {other}"
            )))
        }
    };
    Ok(params.into_iter().map(|(n, t)| (n, t.into())).collect())
}

/// One step of the `kind` cell with these parameters: `(h', None)`, or `(h', c')` for the
/// LSTM (whose state is `hx` and `cx`). `input` is `(N, input_size)` or unbatched; a state
/// left out is zeros.
#[pyfunction]
#[pyo3(signature = (kind, input, hx, cx, weight_ih, weight_hh, bias_ih=None, bias_hh=None, nonlinearity="tanh"))]
#[allow(clippy::too_many_arguments)]
pub fn _cell_forward(
    py: Python<'_>,
    kind: &str,
    input: PyRef<'_, PyTensor>,
    hx: Option<PyRef<'_, PyTensor>>,
    cx: Option<PyRef<'_, PyTensor>>,
    weight_ih: PyRef<'_, PyTensor>,
    weight_hh: PyRef<'_, PyTensor>,
    bias_ih: Option<PyRef<'_, PyTensor>>,
    bias_hh: Option<PyRef<'_, PyTensor>>,
    nonlinearity: &str,
) -> PyResult<(PyTensor, Option<PyTensor>)> {
    let weights = RecurrentWeights {
        weight_ih: weight_ih.t.clone(),
        weight_hh: weight_hh.t.clone(),
        bias_ih: bias_ih.map(|b| b.t.clone()),
        bias_hh: bias_hh.map(|b| b.t.clone()),
    };
    let x = input.t.clone();
    let h = hx.map(|t| t.t.clone());
    let c = cx.map(|t| t.t.clone());
    let work = x.numel().saturating_mul(weights.weight_ih.shape()[0]);
    let (h, c) = match kind {
        "RNN" => {
            let cell = RNNCell {
                weights,
                nonlinearity: nonlinearity_of(nonlinearity)?,
            };
            (nogil(py, work, || cell.forward(&x, h.as_ref()))?, None)
        }
        "GRU" => {
            let cell = GRUCell { weights };
            (nogil(py, work, || cell.forward(&x, h.as_ref()))?, None)
        }
        "LSTM" => {
            let cell = LSTMCell { weights };
            let state = match (&h, &c) {
                (Some(h), Some(c)) => Some((h, c)),
                (None, None) => None,
                _ => {
                    return Err(PyValueError::new_err(
                        "LSTMCell: give both h_0 and c_0 or neither",
                    ))
                }
            };
            let (h, c) = nogil(py, work, || cell.forward(&x, state))?;
            (h, Some(c))
        }
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown recurrent cell {other}"
            )))
        }
    };
    Ok((h.into(), c.map(Into::into)))
}
