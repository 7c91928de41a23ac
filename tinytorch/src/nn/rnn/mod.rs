//! Recurrent layers: `torch.nn.RNN`, `LSTM`, `GRU` (multi-layer, optionally bidirectional,
//! dropout between layers) and the cells `RNNCell`, `LSTMCell`, `GRUCell`.
//!
//! Everything is composed from Tensor ops, so autograd comes for free: per layer and
//! direction, one matmul projects the whole input sequence (`x W_ih^T + b_ih`), then each
//! time step adds `h W_hh^T + b_hh` and applies the gates.

mod cell;

pub use cell::{GRUCell, LSTMCell, RNNCell};

use crate::error::{Error, Result};
use crate::nn::dropout::dropout;
use crate::nn::functional::linear;
use crate::nn::init::uniform_;
use crate::nn::Module;
use crate::tensor::{DType, Device, Tensor};
use cell::{gru_step, lstm_step, rnn_step};

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

/// Which recurrence a multi-layer module runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Rnn(Nonlinearity),
    Lstm,
    Gru,
}

impl Kind {
    fn gates(self) -> usize {
        match self {
            Kind::Rnn(_) => 1,
            Kind::Lstm => 4,
            Kind::Gru => 3,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Rnn(_) => "RNN",
            Kind::Lstm => "LSTM",
            Kind::Gru => "GRU",
        }
    }
}

/// What the three multi-layer modules share: configuration, parameters, mode.
struct Stack {
    kind: Kind,
    input_size: usize,
    hidden_size: usize,
    opts: RNNOptions,
    weights: Vec<RecurrentWeights>,
    training: bool,
}

impl Stack {
    fn new(kind: Kind, input_size: usize, hidden_size: usize, opts: RNNOptions) -> Result<Stack> {
        let op = kind.name();
        if hidden_size == 0 {
            return Err(Error::invalid(op, "hidden_size must be greater than zero"));
        }
        if opts.num_layers == 0 {
            return Err(Error::invalid(op, "num_layers must be greater than zero"));
        }
        if !(0.0..=1.0).contains(&opts.dropout) {
            return Err(Error::invalid(
                op,
                format!(
                    "dropout should be a number in range [0, 1] representing the probability of an element being zeroed, got {}",
                    opts.dropout
                ),
            ));
        }
        if !opts.dtype.is_float() {
            return Err(Error::dtype(
                op,
                format!("parameters must be floating point, got {}", opts.dtype),
            ));
        }
        let dirs = if opts.bidirectional { 2 } else { 1 };
        let mut weights = Vec::with_capacity(opts.num_layers * dirs);
        for layer in 0..opts.num_layers {
            let layer_in = if layer == 0 {
                input_size
            } else {
                hidden_size * dirs
            };
            for _ in 0..dirs {
                weights.push(uniform_weights(
                    layer_in,
                    hidden_size,
                    kind.gates(),
                    opts.bias,
                    opts.dtype,
                    opts.device,
                )?);
            }
        }
        Ok(Stack {
            kind,
            input_size,
            hidden_size,
            opts,
            weights,
            training: true,
        })
    }

    fn directions(&self) -> usize {
        if self.opts.bidirectional {
            2
        } else {
            1
        }
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let dirs = self.directions();
        self.weights
            .iter()
            .enumerate()
            .flat_map(|(i, w)| {
                let reverse = if i % dirs == 1 { "_reverse" } else { "" };
                w.named(&format!("_l{}{reverse}", i / dirs))
            })
            .collect()
    }

    /// The input as `(L, N, input_size)`, and whether it was unbatched.
    fn sequence_input(&self, x: &Tensor) -> Result<(Tensor, bool)> {
        let op = self.kind.name();
        check_float_input(op, x, &self.weights[0])?;
        if x.ndim() != 2 && x.ndim() != 3 {
            return Err(Error::shape(
                op,
                format!(
                    "Expected input to be 2D or 3D, got {}D tensor instead (shape {:?})",
                    x.ndim(),
                    x.shape()
                ),
            ));
        }
        let features = x.shape()[x.ndim() - 1];
        if features != self.input_size {
            return Err(Error::shape(
                op,
                format!(
                    "input.size(-1) must be equal to input_size. Expected {}, got {features} (input shape {:?})",
                    self.input_size,
                    x.shape()
                ),
            ));
        }
        if x.shape()[usize::from(x.ndim() == 3 && self.opts.batch_first)] == 0 {
            return Err(Error::shape(
                op,
                format!(
                    "Expected sequence length to be larger than 0 in RNN (input shape {:?})",
                    x.shape()
                ),
            ));
        }
        match (x.ndim(), self.opts.batch_first) {
            (2, _) => Ok((x.unsqueeze(1)?, true)),
            (_, true) => Ok((x.transpose(0, 1)?, false)),
            _ => Ok((x.clone(), false)),
        }
    }

    /// An initial state as `(layers*dirs, N, hidden)`; zeros when `None`.
    fn initial_state(
        &self,
        what: &str,
        h0: Option<&Tensor>,
        x: &Tensor,
        unbatched: bool,
    ) -> Result<Tensor> {
        let op = self.kind.name();
        let layers = self.opts.num_layers * self.directions();
        let n = x.shape()[1];
        let Some(h0) = h0 else {
            return Tensor::zeros(&[layers, n, self.hidden_size], x.dtype(), x.device());
        };
        let want: Vec<usize> = if unbatched {
            vec![layers, self.hidden_size]
        } else {
            vec![layers, n, self.hidden_size]
        };
        if h0.shape() != want.as_slice() {
            let kind = if unbatched {
                "unbatched 2-D"
            } else {
                "batched 3-D"
            };
            return Err(Error::shape(
                op,
                format!(
                    "Expected {what} size {want:?} for {kind} input, got {:?}",
                    h0.shape()
                ),
            ));
        }
        if h0.dtype() != x.dtype() {
            return Err(Error::dtype(
                op,
                format!(
                    "{what} has dtype {} but the input has dtype {}",
                    h0.dtype(),
                    x.dtype()
                ),
            ));
        }
        if unbatched {
            h0.unsqueeze(1)
        } else {
            Ok(h0.clone())
        }
    }

    /// Run every layer. Returns the output `(L, N, dirs*hidden)` (or the caller's layout),
    /// `h_n` and, for the LSTM, `c_n`, shaped like PyTorch's.
    fn run(
        &self,
        x: &Tensor,
        h0: Option<&Tensor>,
        c0: Option<&Tensor>,
    ) -> Result<(Tensor, Tensor, Option<Tensor>)> {
        let (mut layer_in, unbatched) = self.sequence_input(x)?;
        let h0 = self.initial_state("hidden", h0, &layer_in, unbatched)?;
        let c0 = match self.kind {
            Kind::Lstm => Some(self.initial_state("cell", c0, &layer_in, unbatched)?),
            _ => None,
        };
        let dirs = self.directions();
        let mut h_n = Vec::with_capacity(self.weights.len());
        let mut c_n = Vec::with_capacity(self.weights.len());
        for layer in 0..self.opts.num_layers {
            let mut outs = Vec::with_capacity(dirs);
            for dir in 0..dirs {
                let idx = (layer * dirs + dir) as isize;
                let c = c0.as_ref().map(|c| c.select(0, idx)).transpose()?;
                let (out, h, c) =
                    self.run_direction(&layer_in, idx as usize, h0.select(0, idx)?, c, dir == 1)?;
                outs.push(out);
                h_n.push(h);
                c_n.extend(c);
            }
            layer_in = if dirs == 1 {
                outs.pop().expect("one direction")
            } else {
                Tensor::cat(&[&outs[0], &outs[1]], 2)?
            };
            let last = layer + 1 == self.opts.num_layers;
            if !last && self.training && self.opts.dropout > 0.0 {
                layer_in = dropout(&layer_in, self.opts.dropout, true)?;
            }
        }
        let stack = |v: &[Tensor]| -> Result<Tensor> {
            let s = Tensor::stack(&v.iter().collect::<Vec<_>>(), 0)?;
            if unbatched {
                s.squeeze_dim(1)
            } else {
                Ok(s)
            }
        };
        let output = if unbatched {
            layer_in.squeeze_dim(1)?
        } else if self.opts.batch_first {
            layer_in.transpose(0, 1)?
        } else {
            layer_in
        };
        let c_n = if c_n.is_empty() {
            None
        } else {
            Some(stack(&c_n)?)
        };
        Ok((output, stack(&h_n)?, c_n))
    }

    /// One direction of one layer over the whole sequence `x` `(L, N, features)`: the output
    /// `(L, N, hidden)` in time order and the final state.
    fn run_direction(
        &self,
        x: &Tensor,
        idx: usize,
        mut h: Tensor,
        mut c: Option<Tensor>,
        reverse: bool,
    ) -> Result<(Tensor, Tensor, Option<Tensor>)> {
        let w = &self.weights[idx];
        let gi = linear(x, &w.weight_ih, w.bias_ih.as_ref())?;
        let len = x.shape()[0];
        let gi_steps = unbind_steps(&gi)?;
        let mut outs = Vec::with_capacity(len);
        for step in 0..len {
            let t = if reverse { len - 1 - step } else { step };
            let gi_t = &gi_steps[t];
            h = match (self.kind, c.as_ref()) {
                (Kind::Rnn(nl), _) => rnn_step(gi_t, &h, w, nl)?,
                (Kind::Gru, _) => gru_step(gi_t, &h, w)?,
                (Kind::Lstm, Some(c_prev)) => {
                    let (h_next, c_next) = lstm_step(gi_t, &h, c_prev, w)?;
                    c = Some(c_next);
                    h_next
                }
                (Kind::Lstm, None) => unreachable!("the LSTM always carries a cell state"),
            };
            outs.push(h.clone());
        }
        if reverse {
            outs.reverse();
        }
        let out = Tensor::stack(&outs.iter().collect::<Vec<_>>(), 0)?;
        Ok((out, h, c))
    }
}

/// Up to this many steps are selected directly from one block in [`unbind_steps`].
const UNBIND_LEAF: usize = 8;

/// The time steps `x[0], x[1], ...` of `x` `(L, ...)` as separate tensors.
///
/// The backward of a view writes its gradient into zeros the size of the viewed tensor, so
/// selecting all `L` steps straight from `x` would cost `O(L^2)` in the backward pass. Halving
/// the sequence recursively (each half a `narrow` view) keeps it at `O(L log L)`: the engine
/// sums the gradients of a block's children before passing them on.
fn unbind_steps(x: &Tensor) -> Result<Vec<Tensor>> {
    let len = x.shape()[0];
    if len <= UNBIND_LEAF {
        return (0..len).map(|t| x.select(0, t as isize)).collect();
    }
    let half = len / 2;
    let mut steps = unbind_steps(&x.narrow(0, 0, half)?)?;
    steps.extend(unbind_steps(&x.narrow(0, half as isize, len - half)?)?);
    Ok(steps)
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
