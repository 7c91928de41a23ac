//! The constructor options shared by `nn.RNN`, `LSTM` and `GRU`.

use super::Nonlinearity;
use crate::tensor::{DType, Device};

/// The constructor options of `nn.RNN`/`LSTM`/`GRU`, with PyTorch's defaults
/// (`num_layers=1, nonlinearity='tanh', bias=True, batch_first=False, dropout=0,
/// bidirectional=False`, f32 on the CPU). Set fields directly or chain the setters:
/// `RNNOptions::default().num_layers(2).batch_first(true)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RNNOptions {
    /// Number of stacked layers.
    pub num_layers: usize,
    /// Activation (RNN only; LSTM and GRU reject `Relu`).
    pub nonlinearity: Nonlinearity,
    /// Whether the layers have `bias_ih`/`bias_hh`.
    pub bias: bool,
    /// Input and output are `(N, L, features)` instead of `(L, N, features)`.
    pub batch_first: bool,
    /// Dropout probability on the outputs of every layer but the last, in training mode.
    pub dropout: f64,
    /// Run a second, reversed direction per layer and concatenate the features.
    pub bidirectional: bool,
    /// Parameter dtype.
    pub dtype: DType,
    /// Parameter device.
    pub device: Device,
}

impl Default for RNNOptions {
    fn default() -> RNNOptions {
        RNNOptions {
            num_layers: 1,
            nonlinearity: Nonlinearity::Tanh,
            bias: true,
            batch_first: false,
            dropout: 0.0,
            bidirectional: false,
            dtype: DType::F32,
            device: Device::Cpu,
        }
    }
}

impl RNNOptions {
    /// Set `num_layers`.
    pub fn num_layers(mut self, n: usize) -> RNNOptions {
        self.num_layers = n;
        self
    }
    /// Set `nonlinearity`.
    pub fn nonlinearity(mut self, nl: Nonlinearity) -> RNNOptions {
        self.nonlinearity = nl;
        self
    }
    /// Set `bias`.
    pub fn bias(mut self, bias: bool) -> RNNOptions {
        self.bias = bias;
        self
    }
    /// Set `batch_first`.
    pub fn batch_first(mut self, batch_first: bool) -> RNNOptions {
        self.batch_first = batch_first;
        self
    }
    /// Set `dropout`.
    pub fn dropout(mut self, p: f64) -> RNNOptions {
        self.dropout = p;
        self
    }
    /// Set `bidirectional`.
    pub fn bidirectional(mut self, bidirectional: bool) -> RNNOptions {
        self.bidirectional = bidirectional;
        self
    }
    /// Set the parameter dtype.
    pub fn dtype(mut self, dtype: DType) -> RNNOptions {
        self.dtype = dtype;
        self
    }
    /// Set the parameter device.
    pub fn device(mut self, device: Device) -> RNNOptions {
        self.device = device;
        self
    }
}
