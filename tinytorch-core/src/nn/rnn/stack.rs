//! The multi-layer, optionally bidirectional recurrence behind `RNN`, `LSTM` and `GRU`:
//! argument checks, the layer/direction loop, dropout between layers.

use super::cell::{gru_step, lstm_step, rnn_step};
use super::{check_float_input, uniform_weights, Nonlinearity, RNNOptions, RecurrentWeights};
use crate::error::{Error, Result};
use crate::nn::functional::linear;
use crate::ops::dropout;
use crate::tensor::Tensor;

/// Which recurrence a multi-layer module runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
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
pub(super) struct Stack {
    pub(super) kind: Kind,
    pub(super) input_size: usize,
    pub(super) hidden_size: usize,
    pub(super) opts: RNNOptions,
    pub(super) weights: Vec<RecurrentWeights>,
    pub(super) training: bool,
}

impl Stack {
    pub(super) fn new(
        kind: Kind,
        input_size: usize,
        hidden_size: usize,
        opts: RNNOptions,
    ) -> Result<Stack> {
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

    pub(super) fn named_parameters(&self) -> Vec<(String, Tensor)> {
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
    pub(super) fn run(
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
