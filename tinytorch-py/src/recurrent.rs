//! `nn.RNN`, `nn.LSTM`, `nn.GRU`: the Rust layers (multi-layer, bidirectional, batch_first,
//! dropout between layers), whose parameter tensors the Python Modules register as their own
//! `Parameter`s, sharing the handles (so gradients, optimizers and state dicts see the same
//! tensors the layer computes with).

use crate::convert::opt_dtype;
use crate::error::IntoPyResult;
use crate::tensor::{nogil, PyTensor};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::sync::Mutex;
use tinytorch::nn::{Module, Nonlinearity, RNNOptions, RecurrentWeights, GRU, LSTM, RNN};
use tinytorch::Tensor;

enum Layer {
    Rnn(RNN),
    Lstm(LSTM),
    Gru(GRU),
}

impl Layer {
    fn module(&mut self) -> &mut dyn Module {
        match self {
            Layer::Rnn(m) => m,
            Layer::Lstm(m) => m,
            Layer::Gru(m) => m,
        }
    }

    fn weights_mut(&mut self) -> &mut [RecurrentWeights] {
        match self {
            Layer::Rnn(m) => m.weights_mut(),
            Layer::Lstm(m) => m.weights_mut(),
            Layer::Gru(m) => m.weights_mut(),
        }
    }
}

/// The engine of a recurrent Module.
#[pyclass(module = "tinytorch._tinytorch", name = "_Recurrent")]
pub struct PyRecurrent(Mutex<Layer>);

#[pymethods]
impl PyRecurrent {
    #[new]
    #[pyo3(signature = (kind, input_size, hidden_size, num_layers, nonlinearity, bias, batch_first, dropout, bidirectional, dtype=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        kind: &str,
        input_size: usize,
        hidden_size: usize,
        num_layers: usize,
        nonlinearity: &str,
        bias: bool,
        batch_first: bool,
        dropout: f64,
        bidirectional: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let nl = match nonlinearity {
            "tanh" => Nonlinearity::Tanh,
            "relu" => Nonlinearity::Relu,
            other => {
                return Err(PyValueError::new_err(format!(
                    "Unknown nonlinearity '{other}'"
                )))
            }
        };
        let opts = RNNOptions {
            num_layers,
            nonlinearity: nl,
            bias,
            batch_first,
            dropout,
            bidirectional,
            dtype: opt_dtype(dtype)?.unwrap_or(tinytorch::DType::F32),
            ..Default::default()
        };
        let layer = match kind {
            "RNN" => Layer::Rnn(RNN::new(input_size, hidden_size, opts).py()?),
            "LSTM" => Layer::Lstm(LSTM::new(input_size, hidden_size, opts).py()?),
            "GRU" => Layer::Gru(GRU::new(input_size, hidden_size, opts).py()?),
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown recurrent layer {other}"
                )))
            }
        };
        Ok(PyRecurrent(Mutex::new(layer)))
    }

    /// `(name, tensor)` of every parameter, PyTorch's names (`weight_ih_l0`, ...): the very
    /// handles the layer computes with.
    fn named_parameters(&self) -> Vec<(String, PyTensor)> {
        let mut layer = self.0.lock().expect("layer lock");
        layer
            .module()
            .named_parameters()
            .into_iter()
            .map(|(n, t)| (n, t.into()))
            .collect()
    }

    /// Compute with `params` from now on: one tensor per parameter, in `named_parameters`'
    /// order and of the shapes they replace (after `Module.to()`/`.double()` gave the Python
    /// `Parameter`s new tensors, so that gradients keep landing on those objects).
    fn adopt_parameters(&self, params: Vec<PyRef<'_, PyTensor>>) -> PyResult<()> {
        let mut layer = self.0.lock().expect("layer lock");
        let old = layer.module().named_parameters();
        let shapes_match = params.len() == old.len()
            && old
                .iter()
                .zip(&params)
                .all(|((_, o), p)| o.shape() == p.t.shape());
        if !shapes_match {
            return Err(PyValueError::new_err(format!(
                "expected {} parameters of the shapes {:?}",
                old.len(),
                old.iter()
                    .map(|(n, t)| (n.clone(), t.shape().to_vec()))
                    .collect::<Vec<_>>()
            )));
        }
        let mut new = params.iter().map(|p| p.t.clone());
        let mut next = || new.next().expect("counted above");
        for w in layer.weights_mut() {
            w.weight_ih = next();
            w.weight_hh = next();
            if let Some(b) = &mut w.bias_ih {
                *b = next();
            }
            if let Some(b) = &mut w.bias_hh {
                *b = next();
            }
        }
        Ok(())
    }

    fn set_training(&self, training: bool) {
        self.0
            .lock()
            .expect("layer lock")
            .module()
            .set_training(training);
    }

    /// `(output, h_n, c_n)`; `c_n` is None but for the LSTM.
    #[pyo3(signature = (input, h0=None, c0=None))]
    fn forward(
        &self,
        py: Python<'_>,
        input: PyRef<'_, PyTensor>,
        h0: Option<PyRef<'_, PyTensor>>,
        c0: Option<PyRef<'_, PyTensor>>,
    ) -> PyResult<(PyTensor, PyTensor, Option<PyTensor>)> {
        let x = input.t.clone();
        let (h0, c0) = (h0.map(|t| t.t.clone()), c0.map(|t| t.t.clone()));
        let layer = self.0.lock().expect("layer lock");
        let (out, h, c): (Tensor, Tensor, Option<Tensor>) = nogil(py, usize::MAX, || {
            Ok(match &*layer {
                Layer::Rnn(m) => {
                    let (o, h) = m.forward(&x, h0.as_ref())?;
                    (o, h, None)
                }
                Layer::Gru(m) => {
                    let (o, h) = m.forward(&x, h0.as_ref())?;
                    (o, h, None)
                }
                Layer::Lstm(m) => {
                    let hc = match (&h0, &c0) {
                        (Some(h), Some(c)) => Some((h, c)),
                        (None, None) => None,
                        _ => {
                            return Err(tinytorch::Error::invalid(
                                "LSTM",
                                "give both h_0 and c_0 or neither",
                            ))
                        }
                    };
                    let (o, (h, c)) = m.forward(&x, hc)?;
                    (o, h, Some(c))
                }
            })
        })?;
        Ok((out.into(), h.into(), c.map(Into::into)))
    }
}
