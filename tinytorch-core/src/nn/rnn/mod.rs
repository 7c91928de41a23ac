//! Recurrent layers: `torch.nn.RNN`, `LSTM`, `GRU` (multi-layer, optionally bidirectional,
//! dropout between layers) and the cells `RNNCell`, `LSTMCell`, `GRUCell`.
//!
//! Everything is composed from Tensor ops, so autograd comes for free: per layer and
//! direction, one matmul projects the whole input sequence (`x W_ih^T + b_ih`), then each
//! time step adds `h W_hh^T + b_hh` and applies the gates.

mod cell;
mod options;
mod stack;

pub use cell::{GRUCell, LSTMCell, RNNCell};
pub use options::RNNOptions;

use crate::error::{Error, Result};
use crate::nn::init::uniform_;
use crate::nn::Module;
use crate::tensor::{DType, Device, Tensor};
use stack::{Kind, Stack};

/// The activation of an Elman RNN (`nonlinearity='tanh'` or `'relu'`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Nonlinearity {
    /// `tanh` (PyTorch's default).
    #[default]
    Tanh,
    /// `relu`.
    Relu,
}

/// The parameters of one layer and direction (or of a cell): `weight_ih`
/// `(gates*hidden, input)`, `weight_hh` `(gates*hidden, hidden)`, and the biases
/// `(gates*hidden,)` when the module has them. Gates are stacked in PyTorch's order.
#[derive(Clone)]
pub struct RecurrentWeights {
    /// Input-to-hidden weight.
    pub weight_ih: Tensor,
    /// Hidden-to-hidden weight.
    pub weight_hh: Tensor,
    /// Input-to-hidden bias.
    pub bias_ih: Option<Tensor>,
    /// Hidden-to-hidden bias.
    pub bias_hh: Option<Tensor>,
}

impl RecurrentWeights {
    /// The parameters under PyTorch's names with `suffix` appended (`weight_ih_l0_reverse`),
    /// in PyTorch's order.
    fn named(&self, suffix: &str) -> Vec<(String, Tensor)> {
        let mut v = vec![
            (format!("weight_ih{suffix}"), self.weight_ih.clone()),
            (format!("weight_hh{suffix}"), self.weight_hh.clone()),
        ];
        if let Some(b) = &self.bias_ih {
            v.push((format!("bias_ih{suffix}"), b.clone()));
        }
        if let Some(b) = &self.bias_hh {
            v.push((format!("bias_hh{suffix}"), b.clone()));
        }
        v
    }
}

/// A leaf parameter drawn from U(-1/sqrt(hidden), 1/sqrt(hidden)) (PyTorch's
/// `reset_parameters` for every recurrent weight and bias).
fn uniform_param(shape: &[usize], hidden: usize, dtype: DType, device: Device) -> Result<Tensor> {
    let bound = 1.0 / (hidden as f64).sqrt();
    let t = Tensor::zeros(shape, dtype, device)?;
    uniform_(&t, -bound, bound)?;
    t.requires_grad_(true)
}

fn uniform_weights(
    input_size: usize,
    hidden: usize,
    gates: usize,
    bias: bool,
    dtype: DType,
    device: Device,
) -> Result<RecurrentWeights> {
    let rows = gates * hidden;
    let b = || uniform_param(&[rows], hidden, dtype, device);
    Ok(RecurrentWeights {
        weight_ih: uniform_param(&[rows, input_size], hidden, dtype, device)?,
        weight_hh: uniform_param(&[rows, hidden], hidden, dtype, device)?,
        bias_ih: bias.then(b).transpose()?,
        bias_hh: bias.then(b).transpose()?,
    })
}

/// PyTorch requires a floating input of the parameters' dtype (no implicit promotion).
fn check_float_input(op: &'static str, x: &Tensor, w: &RecurrentWeights) -> Result<()> {
    let want = w.weight_ih.dtype();
    if x.dtype() != want {
        return Err(Error::dtype(
            op,
            format!(
                "input must have the type {want} (the parameters' dtype), got type {}",
                x.dtype()
            ),
        ));
    }
    Ok(())
}

/// The accessors and `Module` impl shared by the three multi-layer modules.
macro_rules! recurrent_module {
    ($ty:ident) => {
        impl $ty {
            /// The parameters of each layer and direction, in PyTorch's order (`l0`,
            /// `l0_reverse`, `l1`, ...). Public so they can be replaced (a gradient check).
            pub fn weights(&self) -> &[RecurrentWeights] {
                &self.stack.weights
            }

            /// Mutable access to the parameters; shapes must stay as they are.
            pub fn weights_mut(&mut self) -> &mut [RecurrentWeights] {
                &mut self.stack.weights
            }

            /// `input_size`.
            pub fn input_size(&self) -> usize {
                self.stack.input_size
            }

            /// `hidden_size`.
            pub fn hidden_size(&self) -> usize {
                self.stack.hidden_size
            }

            /// The constructor options.
            pub fn options(&self) -> &RNNOptions {
                &self.stack.opts
            }
        }

        impl Module for $ty {
            /// Runs from a zero initial state and returns the output sequence.
            fn forward(&self, x: &Tensor) -> Result<Tensor> {
                Ok(self.stack.run(x, None, None)?.0)
            }

            fn named_parameters(&self) -> Vec<(String, Tensor)> {
                self.stack.named_parameters()
            }

            fn set_training(&mut self, training: bool) {
                self.stack.training = training;
            }

            fn is_training(&self) -> bool {
                self.stack.training
            }
        }
    };
}

/// `torch.nn.RNN`: a multi-layer Elman RNN, `h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T +
/// b_hh)`. Parameters `weight_ih_l{k}`, `weight_hh_l{k}`, `bias_ih_l{k}`, `bias_hh_l{k}`
/// (and `_reverse` when bidirectional). Note: the inherent `forward(x, h0)` shadows
/// `Module::forward(x)`; call the latter as `Module::forward(&rnn, &x)`.
pub struct RNN {
    stack: Stack,
}

impl RNN {
    /// `nn.RNN(input_size, hidden_size, num_layers, nonlinearity, bias, batch_first,
    /// dropout, bidirectional)`, the options in `opts`.
    pub fn new(input_size: usize, hidden_size: usize, opts: RNNOptions) -> Result<RNN> {
        let kind = Kind::Rnn(opts.nonlinearity);
        Ok(RNN {
            stack: Stack::new(kind, input_size, hidden_size, opts)?,
        })
    }

    /// `rnn(x, h0)`: `x` is `(L, N, input_size)` (`(N, L, input_size)` with `batch_first`)
    /// or unbatched `(L, input_size)`; `h0` is `(layers*dirs, N, hidden)` (`(layers*dirs,
    /// hidden)` unbatched), zeros when `None`. Returns `(output, h_n)`, output
    /// `(L, N, dirs*hidden)` in the input's layout.
    pub fn forward(&self, x: &Tensor, h0: Option<&Tensor>) -> Result<(Tensor, Tensor)> {
        let (out, h, _) = self.stack.run(x, h0, None)?;
        Ok((out, h))
    }
}

recurrent_module!(RNN);

/// `torch.nn.LSTM` (without `proj_size`): gates (i, f, g, o) stacked in that order in
/// `weight_ih_l{k}` `(4*hidden, in)` and `weight_hh_l{k}` `(4*hidden, hidden)`.
/// `c_t = f c_{t-1} + i g`, `h_t = o tanh(c_t)`.
pub struct LSTM {
    stack: Stack,
}

impl LSTM {
    /// `nn.LSTM(input_size, hidden_size, num_layers, bias, batch_first, dropout,
    /// bidirectional)`; `opts.nonlinearity` must stay `Tanh`.
    pub fn new(input_size: usize, hidden_size: usize, opts: RNNOptions) -> Result<LSTM> {
        if opts.nonlinearity != Nonlinearity::Tanh {
            return Err(Error::invalid(
                "LSTM",
                "LSTM has no nonlinearity option (only RNN does)",
            ));
        }
        Ok(LSTM {
            stack: Stack::new(Kind::Lstm, input_size, hidden_size, opts)?,
        })
    }

    /// `lstm(x, (h0, c0))`: shapes as in [`RNN::forward`]; both states are zeros when
    /// `None`. Returns `(output, (h_n, c_n))`.
    #[allow(clippy::type_complexity)]
    pub fn forward(
        &self,
        x: &Tensor,
        hc0: Option<(&Tensor, &Tensor)>,
    ) -> Result<(Tensor, (Tensor, Tensor))> {
        let (out, h, c) = self.stack.run(x, hc0.map(|s| s.0), hc0.map(|s| s.1))?;
        Ok((out, (h, c.expect("the LSTM returns a cell state"))))
    }
}

recurrent_module!(LSTM);

/// `torch.nn.GRU`: gates (r, z, n) stacked in that order; `n = tanh(x W_in^T + b_in + r
/// (h W_hn^T + b_hn))`, `h_t = (1 - z) n + z h_{t-1}`.
pub struct GRU {
    stack: Stack,
}

impl GRU {
    /// `nn.GRU(input_size, hidden_size, num_layers, bias, batch_first, dropout,
    /// bidirectional)`; `opts.nonlinearity` must stay `Tanh`.
    pub fn new(input_size: usize, hidden_size: usize, opts: RNNOptions) -> Result<GRU> {
        if opts.nonlinearity != Nonlinearity::Tanh {
            return Err(Error::invalid(
                "GRU",
                "GRU has no nonlinearity option (only RNN does)",
            ));
        }
        Ok(GRU {
            stack: Stack::new(Kind::Gru, input_size, hidden_size, opts)?,
        })
    }

    /// `gru(x, h0)`: as [`RNN::forward`].
    pub fn forward(&self, x: &Tensor, h0: Option<&Tensor>) -> Result<(Tensor, Tensor)> {
        let (out, h, _) = self.stack.run(x, h0, None)?;
        Ok((out, h))
    }
}

recurrent_module!(GRU);
