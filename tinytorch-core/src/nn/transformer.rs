//! `nn.TransformerEncoderLayer` and `nn.TransformerDecoderLayer`: PyTorch's parameter names
//! (`self_attn.*`, `multihead_attn.*`, `linear1`, `linear2`, `norm1`..`norm3`), post-norm by
//! default and pre-norm with `norm_first`.

use super::attention::{AttentionArgs, MultiheadAttention};
use super::functional::dropout;
use super::module::Module;
use super::{LayerNorm, Linear};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// The feed-forward activation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    /// `relu` (PyTorch's default).
    Relu,
    /// Exact `gelu`.
    Gelu,
}

impl Activation {
    fn apply(self, x: &Tensor) -> Result<Tensor> {
        match self {
            Activation::Relu => x.relu(),
            Activation::Gelu => x.gelu(),
        }
    }
}

/// Sizes and switches of a transformer layer, with PyTorch's defaults.
#[derive(Clone, Copy, Debug)]
pub struct TransformerOptions {
    /// Hidden size of the feed-forward block (2048).
    pub dim_feedforward: usize,
    /// Dropout probability (0.1).
    pub dropout: f64,
    /// Feed-forward activation (relu).
    pub activation: Activation,
    /// LayerNorm epsilon (1e-5).
    pub layer_norm_eps: f64,
    /// Inputs are `(N, T, E)` instead of `(T, N, E)` (false).
    pub batch_first: bool,
    /// Pre-norm: normalise before each block instead of after the residual (false).
    pub norm_first: bool,
    /// Biases in the linear layers and norms (true).
    pub bias: bool,
}

impl Default for TransformerOptions {
    fn default() -> Self {
        TransformerOptions {
            dim_feedforward: 2048,
            dropout: 0.1,
            activation: Activation::Relu,
            layer_norm_eps: 1e-5,
            batch_first: false,
            norm_first: false,
            bias: true,
        }
    }
}

/// The feed-forward block shared by both layers: `linear2(dropout(act(linear1(x))))`.
struct FeedForward {
    linear1: Linear,
    linear2: Linear,
}

impl FeedForward {
    fn new(d_model: usize, o: &TransformerOptions) -> Result<Self> {
        Ok(FeedForward {
            linear1: Linear::new(d_model, o.dim_feedforward, o.bias)?,
            linear2: Linear::new(o.dim_feedforward, d_model, o.bias)?,
        })
    }

    fn forward(&self, x: &Tensor, o: &TransformerOptions, training: bool) -> Result<Tensor> {
        let hidden = dropout(
            &o.activation.apply(&self.linear1.call(x)?)?,
            o.dropout,
            training,
        )?;
        self.linear2.call(&hidden)
    }
}

fn norm(d_model: usize, o: &TransformerOptions) -> Result<LayerNorm> {
    LayerNorm::new_with_bias(&[d_model], o.layer_norm_eps, true, o.bias)
}

fn check_heads(d_model: usize, nhead: usize) -> Result<()> {
    if nhead == 0 || !d_model.is_multiple_of(nhead) {
        return Err(Error::invalid(
            "Transformer layer",
            format!("d_model {d_model} must be divisible by nhead {nhead}"),
        ));
    }
    Ok(())
}

/// One encoder layer: self-attention and feed-forward, each with a residual and a LayerNorm.
pub struct TransformerEncoderLayer {
    /// Self-attention.
    pub self_attn: MultiheadAttention,
    ff: FeedForward,
    /// Norm of the attention block.
    pub norm1: LayerNorm,
    /// Norm of the feed-forward block.
    pub norm2: LayerNorm,
    opts: TransformerOptions,
    training: bool,
}

impl TransformerEncoderLayer {
    /// `nn.TransformerEncoderLayer(d_model, nhead, **opts)`.
    pub fn new(d_model: usize, nhead: usize, opts: TransformerOptions) -> Result<Self> {
        check_heads(d_model, nhead)?;
        Ok(TransformerEncoderLayer {
            self_attn: MultiheadAttention::new(
                d_model,
                nhead,
                opts.dropout,
                opts.bias,
                opts.batch_first,
            )?,
            ff: FeedForward::new(d_model, &opts)?,
            norm1: norm(d_model, &opts)?,
            norm2: norm(d_model, &opts)?,
            opts,
            training: true,
        })
    }

    /// `layer(src, src_mask, src_key_padding_mask, is_causal)`; masks as in
    /// [`MultiheadAttention`].
    pub fn forward_with(
        &self,
        src: &Tensor,
        src_mask: Option<&Tensor>,
        src_key_padding_mask: Option<&Tensor>,
        is_causal: bool,
    ) -> Result<Tensor> {
        let args = AttentionArgs {
            attn_mask: src_mask,
            key_padding_mask: src_key_padding_mask,
            is_causal,
            ..Default::default()
        };
        let (o, t) = (&self.opts, self.training);
        let sa = |x: &Tensor| -> Result<Tensor> {
            dropout(&self.self_attn.attend(x, x, x, args)?.0, o.dropout, t)
        };
        let ff = |x: &Tensor| dropout(&self.ff.forward(x, o, t)?, o.dropout, t);
        if o.norm_first {
            let x = src.add(&sa(&self.norm1.call(src)?)?)?;
            x.add(&ff(&self.norm2.call(&x)?)?)
        } else {
            let x = self.norm1.call(&src.add(&sa(src)?)?)?;
            self.norm2.call(&x.add(&ff(&x)?)?)
        }
    }
}

impl Module for TransformerEncoderLayer {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.forward_with(x, None, None, false)
    }

    fn named_children(&self) -> Vec<(String, &dyn Module)> {
        vec![
            ("self_attn".into(), &self.self_attn),
            ("linear1".into(), &self.ff.linear1),
            ("linear2".into(), &self.ff.linear2),
            ("norm1".into(), &self.norm1),
            ("norm2".into(), &self.norm2),
        ]
    }

    fn set_training(&mut self, training: bool) {
        self.training = training;
        self.self_attn.set_training(training);
    }

    fn is_training(&self) -> bool {
        self.training
    }
}

/// One decoder layer: masked self-attention, attention over the encoder's memory, and
/// feed-forward, each with a residual and a LayerNorm.
pub struct TransformerDecoderLayer {
    /// Self-attention over the target.
    pub self_attn: MultiheadAttention,
    /// Attention of the target over the memory.
    pub multihead_attn: MultiheadAttention,
    ff: FeedForward,
    /// Norms of the three blocks.
    pub norm1: LayerNorm,
    /// Norm of the cross-attention block.
    pub norm2: LayerNorm,
    /// Norm of the feed-forward block.
    pub norm3: LayerNorm,
    opts: TransformerOptions,
    training: bool,
}

/// The masks of a decoder call (PyTorch's keyword arguments).
#[derive(Clone, Copy, Default)]
pub struct DecoderMasks<'a> {
    /// Mask of the target's self-attention.
    pub tgt_mask: Option<&'a Tensor>,
    /// Mask of the attention over the memory.
    pub memory_mask: Option<&'a Tensor>,
    /// Padding of the target.
    pub tgt_key_padding_mask: Option<&'a Tensor>,
    /// Padding of the memory.
    pub memory_key_padding_mask: Option<&'a Tensor>,
    /// Causal self-attention (without a `tgt_mask`).
    pub tgt_is_causal: bool,
}

impl TransformerDecoderLayer {
    /// `nn.TransformerDecoderLayer(d_model, nhead, **opts)`.
    pub fn new(d_model: usize, nhead: usize, opts: TransformerOptions) -> Result<Self> {
        check_heads(d_model, nhead)?;
        let mha =
            || MultiheadAttention::new(d_model, nhead, opts.dropout, opts.bias, opts.batch_first);
        Ok(TransformerDecoderLayer {
            self_attn: mha()?,
            multihead_attn: mha()?,
            ff: FeedForward::new(d_model, &opts)?,
            norm1: norm(d_model, &opts)?,
            norm2: norm(d_model, &opts)?,
            norm3: norm(d_model, &opts)?,
            opts,
            training: true,
        })
    }

    /// `layer(tgt, memory, ...)`.
    pub fn forward_with(&self, tgt: &Tensor, memory: &Tensor, m: DecoderMasks) -> Result<Tensor> {
        let (o, t) = (&self.opts, self.training);
        let self_args = AttentionArgs {
            attn_mask: m.tgt_mask,
            key_padding_mask: m.tgt_key_padding_mask,
            is_causal: m.tgt_is_causal,
            ..Default::default()
        };
        let cross_args = AttentionArgs {
            attn_mask: m.memory_mask,
            key_padding_mask: m.memory_key_padding_mask,
            ..Default::default()
        };
        let sa = |x: &Tensor| dropout(&self.self_attn.attend(x, x, x, self_args)?.0, o.dropout, t);
        let ca = |x: &Tensor| {
            dropout(
                &self.multihead_attn.attend(x, memory, memory, cross_args)?.0,
                o.dropout,
                t,
            )
        };
        let ff = |x: &Tensor| dropout(&self.ff.forward(x, o, t)?, o.dropout, t);
        if o.norm_first {
            let x = tgt.add(&sa(&self.norm1.call(tgt)?)?)?;
            let x = x.add(&ca(&self.norm2.call(&x)?)?)?;
            x.add(&ff(&self.norm3.call(&x)?)?)
        } else {
            let x = self.norm1.call(&tgt.add(&sa(tgt)?)?)?;
            let x = self.norm2.call(&x.add(&ca(&x)?)?)?;
            self.norm3.call(&x.add(&ff(&x)?)?)
        }
    }
}

impl Module for TransformerDecoderLayer {
    /// Decoding `x` against itself as the memory.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.forward_with(x, x, DecoderMasks::default())
    }

    fn named_children(&self) -> Vec<(String, &dyn Module)> {
        vec![
            ("self_attn".into(), &self.self_attn),
            ("multihead_attn".into(), &self.multihead_attn),
            ("linear1".into(), &self.ff.linear1),
            ("linear2".into(), &self.ff.linear2),
            ("norm1".into(), &self.norm1),
            ("norm2".into(), &self.norm2),
            ("norm3".into(), &self.norm3),
        ]
    }

    fn set_training(&mut self, training: bool) {
        self.training = training;
        self.self_attn.set_training(training);
        self.multihead_attn.set_training(training);
    }

    fn is_training(&self) -> bool {
        self.training
    }
}
