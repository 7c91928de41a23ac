//! One time step of each recurrence, and the single-step layers `nn.RNNCell`, `nn.LSTMCell`,
//! `nn.GRUCell` built on them. The multi-layer modules in `super` reuse the same steps, with
//! the input projection `x W_ih^T + b_ih` computed for the whole sequence up front.

use super::{check_float_input, uniform_weights, Nonlinearity, RecurrentWeights};
use crate::error::{Error, Result};
use crate::nn::functional::linear;
use crate::nn::Module;
use crate::tensor::{DType, Device, Tensor};

/// `h W_hh^T + b_hh`.
fn hidden_projection(h: &Tensor, w: &RecurrentWeights) -> Result<Tensor> {
    linear(h, &w.weight_hh, w.bias_hh.as_ref())
}

/// Elman step: `h' = act(gi + h W_hh^T + b_hh)`, where `gi = x W_ih^T + b_ih`.
pub(super) fn rnn_step(
    gi: &Tensor,
    h: &Tensor,
    w: &RecurrentWeights,
    nonlinearity: Nonlinearity,
) -> Result<Tensor> {
    let pre = gi.add(&hidden_projection(h, w)?)?;
    match nonlinearity {
        Nonlinearity::Tanh => pre.tanh(),
        Nonlinearity::Relu => pre.relu(),
    }
}

/// LSTM step with PyTorch's gate order (i, f, g, o): `c' = f c + i g`, `h' = o tanh(c')`.
pub(super) fn lstm_step(
    gi: &Tensor,
    h: &Tensor,
    c: &Tensor,
    w: &RecurrentWeights,
) -> Result<(Tensor, Tensor)> {
    let gates = gi.add(&hidden_projection(h, w)?)?.chunk(4, -1)?;
    let i = gates[0].sigmoid()?;
    let f = gates[1].sigmoid()?;
    let g = gates[2].tanh()?;
    let o = gates[3].sigmoid()?;
    let c_next = f.mul(c)?.add(&i.mul(&g)?)?;
    let h_next = o.mul(&c_next.tanh()?)?;
    Ok((h_next, c_next))
}

/// GRU step with PyTorch's gate order (r, z, n); the reset gate multiplies `W_hn h + b_hn`
/// (not `h`), and `h' = (1 - z) n + z h`, computed as `n + z (h - n)`.
pub(super) fn gru_step(gi: &Tensor, h: &Tensor, w: &RecurrentWeights) -> Result<Tensor> {
    let gi = gi.chunk(3, -1)?;
    let gh = hidden_projection(h, w)?.chunk(3, -1)?;
    let r = gi[0].add(&gh[0])?.sigmoid()?;
    let z = gi[1].add(&gh[1])?.sigmoid()?;
    let n = gi[2].add(&r.mul(&gh[2])?)?.tanh()?;
    n.add(&z.mul(&h.sub(&n)?)?)
}

/// The input to a cell, batched to `(N, input_size)`, and whether it was unbatched.
fn cell_input(op: &'static str, x: &Tensor, w: &RecurrentWeights) -> Result<(Tensor, bool)> {
    check_float_input(op, x, w)?;
    let input_size = w.weight_ih.shape()[1];
    if x.ndim() != 1 && x.ndim() != 2 {
        return Err(Error::shape(
            op,
            format!(
                "Expected input to be 1D or 2D, got {}D instead (shape {:?})",
                x.ndim(),
                x.shape()
            ),
        ));
    }
    if x.shape()[x.ndim() - 1] != input_size {
        return Err(Error::shape(
            op,
            format!(
                "input has inconsistent input_size: got {} expected {input_size} (input shape {:?})",
                x.shape()[x.ndim() - 1],
                x.shape()
            ),
        ));
    }
    if x.ndim() == 1 {
        Ok((x.unsqueeze(0)?, true))
    } else {
        Ok((x.clone(), false))
    }
}

/// A cell's state tensor, batched to `(N, hidden_size)`; zeros when `None`.
fn cell_state(
    op: &'static str,
    what: &str,
    h: Option<&Tensor>,
    x: &Tensor,
    unbatched: bool,
    w: &RecurrentWeights,
) -> Result<Tensor> {
    let hidden = w.weight_hh.shape()[1];
    let n = x.shape()[0];
    let Some(h) = h else {
        return Tensor::zeros(&[n, hidden], x.dtype(), x.device());
    };
    let want: Vec<usize> = if unbatched {
        vec![hidden]
    } else {
        vec![n, hidden]
    };
    if h.shape() != want.as_slice() {
        return Err(Error::shape(
            op,
            format!(
                "{what} must have shape {want:?} for input of shape {:?}, got {:?}",
                if unbatched {
                    &x.shape()[1..]
                } else {
                    x.shape()
                },
                h.shape()
            ),
        ));
    }
    if h.dtype() != x.dtype() {
        return Err(Error::dtype(
            op,
            format!(
                "{what} has dtype {} but the input has dtype {}",
                h.dtype(),
                x.dtype()
            ),
        ));
    }
    if unbatched {
        h.unsqueeze(0)
    } else {
        Ok(h.clone())
    }
}

fn unbatch(t: Tensor, unbatched: bool) -> Result<Tensor> {
    if unbatched {
        t.squeeze_dim(0)
    } else {
        Ok(t)
    }
}

/// Weights of a cell: `(gates*hidden, input)`, `(gates*hidden, hidden)` and biases.
fn cell_weights(
    input_size: usize,
    hidden_size: usize,
    gates: usize,
    bias: bool,
    dtype: DType,
    device: Device,
) -> Result<RecurrentWeights> {
    if hidden_size == 0 {
        return Err(Error::invalid(
            "RNNCellBase",
            "hidden_size must be greater than zero",
        ));
    }
    uniform_weights(input_size, hidden_size, gates, bias, dtype, device)
}

/// `torch.nn.RNNCell(input_size, hidden_size, bias, nonlinearity)`: one Elman step
/// `h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)`. Parameters `weight_ih`, `weight_hh`,
/// `bias_ih`, `bias_hh`, all U(-1/sqrt(hidden), 1/sqrt(hidden)).
pub struct RNNCell {
    /// The parameters (public so they can be replaced, e.g. for a gradient check).
    pub weights: RecurrentWeights,
    /// `tanh` (PyTorch's default) or `relu`.
    pub nonlinearity: Nonlinearity,
}

impl RNNCell {
    /// `nn.RNNCell(input_size, hidden_size, bias, nonlinearity)`, f32 on the CPU.
    pub fn new(
        input_size: usize,
        hidden_size: usize,
        bias: bool,
        nonlinearity: Nonlinearity,
    ) -> Result<RNNCell> {
        RNNCell::new_with(
            input_size,
            hidden_size,
            bias,
            nonlinearity,
            DType::F32,
            Device::Cpu,
        )
    }

    /// [`RNNCell::new`] with a dtype and device (`factory_kwargs`).
    pub fn new_with(
        input_size: usize,
        hidden_size: usize,
        bias: bool,
        nonlinearity: Nonlinearity,
        dtype: DType,
        device: Device,
    ) -> Result<RNNCell> {
        Ok(RNNCell {
            weights: cell_weights(input_size, hidden_size, 1, bias, dtype, device)?,
            nonlinearity,
        })
    }

    /// `cell(x, h)`: `x` is `(N, input_size)` or unbatched `(input_size,)`; `h` matches it
    /// with `hidden_size` features (zeros when `None`). Returns `h'`.
    pub fn forward(&self, x: &Tensor, h: Option<&Tensor>) -> Result<Tensor> {
        const OP: &str = "RNNCell";
        let (xb, unbatched) = cell_input(OP, x, &self.weights)?;
        let h = cell_state(OP, "hx", h, &xb, unbatched, &self.weights)?;
        let gi = linear(&xb, &self.weights.weight_ih, self.weights.bias_ih.as_ref())?;
        unbatch(
            rnn_step(&gi, &h, &self.weights, self.nonlinearity)?,
            unbatched,
        )
    }
}

impl Module for RNNCell {
    /// One step from a zero state; returns `h'`.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        RNNCell::forward(self, x, None)
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        self.weights.named("")
    }
}

/// `torch.nn.LSTMCell(input_size, hidden_size, bias)`: one LSTM step with gates (i, f, g, o).
pub struct LSTMCell {
    /// The parameters: `weight_ih` `(4*hidden, input)`, `weight_hh` `(4*hidden, hidden)`,
    /// biases `(4*hidden,)`.
    pub weights: RecurrentWeights,
}

impl LSTMCell {
    /// `nn.LSTMCell(input_size, hidden_size, bias)`, f32 on the CPU.
    pub fn new(input_size: usize, hidden_size: usize, bias: bool) -> Result<LSTMCell> {
        LSTMCell::new_with(input_size, hidden_size, bias, DType::F32, Device::Cpu)
    }

    /// [`LSTMCell::new`] with a dtype and device.
    pub fn new_with(
        input_size: usize,
        hidden_size: usize,
        bias: bool,
        dtype: DType,
        device: Device,
    ) -> Result<LSTMCell> {
        Ok(LSTMCell {
            weights: cell_weights(input_size, hidden_size, 4, bias, dtype, device)?,
        })
    }

    /// `cell(x, (h, c))`: `x` is `(N, input_size)` or `(input_size,)`; the state tensors
    /// match it with `hidden_size` features (zeros when `None`). Returns `(h', c')`.
    pub fn forward(&self, x: &Tensor, hc: Option<(&Tensor, &Tensor)>) -> Result<(Tensor, Tensor)> {
        const OP: &str = "LSTMCell";
        let (xb, unbatched) = cell_input(OP, x, &self.weights)?;
        let h = cell_state(OP, "hx[0]", hc.map(|s| s.0), &xb, unbatched, &self.weights)?;
        let c = cell_state(OP, "hx[1]", hc.map(|s| s.1), &xb, unbatched, &self.weights)?;
        let gi = linear(&xb, &self.weights.weight_ih, self.weights.bias_ih.as_ref())?;
        let (h, c) = lstm_step(&gi, &h, &c, &self.weights)?;
        Ok((unbatch(h, unbatched)?, unbatch(c, unbatched)?))
    }
}

impl Module for LSTMCell {
    /// One step from a zero state; returns `h'`.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(LSTMCell::forward(self, x, None)?.0)
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        self.weights.named("")
    }
}

/// `torch.nn.GRUCell(input_size, hidden_size, bias)`: one GRU step with gates (r, z, n).
pub struct GRUCell {
    /// The parameters: `weight_ih` `(3*hidden, input)`, `weight_hh` `(3*hidden, hidden)`,
    /// biases `(3*hidden,)`.
    pub weights: RecurrentWeights,
}

impl GRUCell {
    /// `nn.GRUCell(input_size, hidden_size, bias)`, f32 on the CPU.
    pub fn new(input_size: usize, hidden_size: usize, bias: bool) -> Result<GRUCell> {
        GRUCell::new_with(input_size, hidden_size, bias, DType::F32, Device::Cpu)
    }

    /// [`GRUCell::new`] with a dtype and device.
    pub fn new_with(
        input_size: usize,
        hidden_size: usize,
        bias: bool,
        dtype: DType,
        device: Device,
    ) -> Result<GRUCell> {
        Ok(GRUCell {
            weights: cell_weights(input_size, hidden_size, 3, bias, dtype, device)?,
        })
    }

    /// `cell(x, h)`: as [`RNNCell::forward`], with the GRU update. Returns `h'`.
    pub fn forward(&self, x: &Tensor, h: Option<&Tensor>) -> Result<Tensor> {
        const OP: &str = "GRUCell";
        let (xb, unbatched) = cell_input(OP, x, &self.weights)?;
        let h = cell_state(OP, "hx", h, &xb, unbatched, &self.weights)?;
        let gi = linear(&xb, &self.weights.weight_ih, self.weights.bias_ih.as_ref())?;
        unbatch(gru_step(&gi, &h, &self.weights)?, unbatched)
    }
}

impl Module for GRUCell {
    /// One step from a zero state; returns `h'`.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        GRUCell::forward(self, x, None)
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        self.weights.named("")
    }
}
