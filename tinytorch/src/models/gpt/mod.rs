//! A decoder-only transformer in nanoGPT's layout: token and position embeddings, `n_layer`
//! pre-norm blocks (causal self-attention, GELU MLP), a final LayerNorm and an LM head tied to
//! the token embedding. Parameter names equal nanoGPT's (`transformer.h.0.attn.c_attn.weight`,
//! ...), so state dicts exchange with it through safetensors. Generation keeps a key/value
//! cache (`cache.rs`) so each new token costs the same whatever the context length.

mod cache;
pub mod memory;
mod sample;

pub(crate) use cache::causal_mask;
pub use cache::KvCache;
pub use sample::{sample_next, Sampling};

use crate::autograd::{checkpoint, is_grad_enabled};
use crate::error::{Error, Result};
use crate::nn::functional::{dropout, layer_norm, linear};
use crate::nn::init::{normal_, zeros_};
use crate::nn::{prefixed, Embedding, LayerNorm, Linear, Module};
use crate::tensor::{DType, Tensor};
use std::sync::Arc;

/// Sizes of a GPT (nanoGPT's `GPTConfig`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GptConfig {
    /// Tokens in the vocabulary.
    pub vocab_size: usize,
    /// Longest context (positions in the position embedding).
    pub block_size: usize,
    /// Transformer blocks.
    pub n_layer: usize,
    /// Attention heads per block.
    pub n_head: usize,
    /// Embedding width.
    pub n_embd: usize,
    /// Dropout on embeddings, attention weights and residual branches.
    pub dropout: f64,
    /// Biases in linear layers and LayerNorms.
    pub bias: bool,
}

impl GptConfig {
    fn check(&self) -> Result<()> {
        let ok = self.vocab_size > 0
            && self.block_size > 0
            && self.n_layer > 0
            && self.n_head > 0
            && self.n_embd.is_multiple_of(self.n_head)
            && (0.0..1.0).contains(&self.dropout);
        if ok {
            Ok(())
        } else {
            Err(Error::invalid(
                "GPT",
                format!("invalid config {self:?} (n_embd must divide by n_head)"),
            ))
        }
    }
}

/// One pre-norm block: `x + attn(ln_1(x))`, then `x + mlp(ln_2(x))`.
struct Block {
    ln_1: LayerNorm,
    c_attn: Linear,
    attn_proj: Linear,
    ln_2: LayerNorm,
    c_fc: Linear,
    mlp_proj: Linear,
}

impl Block {
    fn new(c: &GptConfig) -> Result<Self> {
        let e = c.n_embd;
        Ok(Block {
            ln_1: LayerNorm::new_with_bias(&[e], 1e-5, true, c.bias)?,
            c_attn: Linear::new(e, 3 * e, c.bias)?,
            attn_proj: Linear::new(e, e, c.bias)?,
            ln_2: LayerNorm::new_with_bias(&[e], 1e-5, true, c.bias)?,
            c_fc: Linear::new(e, 4 * e, c.bias)?,
            mlp_proj: Linear::new(4 * e, e, c.bias)?,
        })
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let mut out = prefixed("ln_1", self.ln_1.named_parameters());
        out.extend(prefixed("attn.c_attn", self.c_attn.named_parameters()));
        out.extend(prefixed("attn.c_proj", self.attn_proj.named_parameters()));
        out.extend(prefixed("ln_2", self.ln_2.named_parameters()));
        out.extend(prefixed("mlp.c_fc", self.c_fc.named_parameters()));
        out.extend(prefixed("mlp.c_proj", self.mlp_proj.named_parameters()));
        out
    }

    /// `x` is `(B, T, E)`; `cache` holds this layer's keys and values of earlier positions
    /// (and receives these).
    fn forward(
        &self,
        x: &Tensor,
        c: &GptConfig,
        p: f64,
        cache: Option<(&mut KvCache, usize)>,
    ) -> Result<Tensor> {
        let (b, t, e) = (x.shape()[0], x.shape()[1], c.n_embd);
        let (h, hd) = (c.n_head, e / c.n_head);
        // qkv: 3 x (B, T, E), views of one (B, T, 3E) projection.
        let qkv = self.c_attn.call(&self.ln_1.call(x)?)?.chunk(3, -1)?;
        // (B, T, E) -> (B, T, H, hd) -> (B, H, T, hd), a view: the heads stay inside the rows.
        let heads = |z: &Tensor| -> Result<Tensor> { z.reshape(&[b, t, h, hd])?.transpose(1, 2) };
        let (q, k, v) = (heads(&qkv[0])?, heads(&qkv[1])?, heads(&qkv[2])?);
        // y: (B, H, T, hd); keys and values of the cache: (B, H, past + T, hd).
        let y = match cache {
            None => q.scaled_dot_product_attention(&k, &v, None, p, true, None)?,
            Some((cache, layer)) => {
                let past = cache.len();
                let (k_all, v_all) = cache.append(layer, &k, &v)?;
                if t == 1 {
                    // One new token sees every cached position: no mask at all.
                    q.scaled_dot_product_attention(&k_all, &v_all, None, 0.0, false, None)?
                } else {
                    // Query i (position past + i) sees keys j <= past + i.
                    let mask = causal_mask(t, past, x.device())?;
                    q.scaled_dot_product_attention(&k_all, &v_all, Some(&mask), 0.0, false, None)?
                }
            }
        };
        // (B, H, T, hd) -> (B, T, H, hd) -> (B, T, E); the CPU kernel wrote y with the heads
        // inside the rows, so both are views.
        let y = y.transpose(1, 2)?.reshape(&[b, t, e])?;
        // x: (B, T, E), with the attention's residual.
        let x = x.add(&dropout(&self.attn_proj.call(&y)?, p, p > 0.0)?)?;
        // m: (B, T, 4E).
        let m = self.c_fc.call(&self.ln_2.call(&x)?)?.gelu()?;
        // (B, T, E), with the MLP's residual.
        x.add(&dropout(&self.mlp_proj.call(&m)?, p, p > 0.0)?)
    }

    /// The block's layers with nanoGPT's names below `transformer.h.<i>`.
    fn named_children(&self) -> [(&'static str, &dyn Module); 6] {
        [
            ("ln_1", &self.ln_1),
            ("attn.c_attn", &self.c_attn),
            ("attn.c_proj", &self.attn_proj),
            ("ln_2", &self.ln_2),
            ("mlp.c_fc", &self.c_fc),
            ("mlp.c_proj", &self.mlp_proj),
        ]
    }
}

/// The GPT model.
pub struct Gpt {
    config: GptConfig,
    wte: Embedding,
    wpe: Embedding,
    /// Shared with the closures of checkpointed blocks, which run them again in backward.
    blocks: Vec<Arc<Block>>,
    ln_f: LayerNorm,
    training: bool,
    gradient_checkpointing: bool,
}

impl Gpt {
    /// A model with nanoGPT's initialisation: N(0, 0.02) weights and embeddings, zero
    /// biases, and N(0, 0.02 / sqrt(2 n_layer)) for the residual projections.
    pub fn new(config: GptConfig) -> Result<Self> {
        config.check()?;
        let c = &config;
        let model = Gpt {
            wte: Embedding::new(c.vocab_size, c.n_embd, None)?,
            wpe: Embedding::new(c.block_size, c.n_embd, None)?,
            blocks: (0..c.n_layer)
                .map(|_| Block::new(c).map(Arc::new))
                .collect::<Result<_>>()?,
            ln_f: LayerNorm::new_with_bias(&[c.n_embd], 1e-5, true, c.bias)?,
            config,
            training: true,
            gradient_checkpointing: false,
        };
        let residual_std = 0.02 / (2.0 * c.n_layer as f64).sqrt();
        for (name, p) in model.named_parameters() {
            if name.ends_with("c_proj.weight") {
                normal_(&p, 0.0, residual_std)?;
            } else if name.ends_with(".bias") && !name.contains("ln_") {
                zeros_(&p)?;
            } else if name.ends_with("weight") && !name.contains("ln_") {
                normal_(&p, 0.0, 0.02)?;
            }
        }
        Ok(model)
    }

    /// The configuration.
    pub fn config(&self) -> &GptConfig {
        &self.config
    }

    /// Checkpoint every block in training (Hugging Face's `gradient_checkpointing_enable`):
    /// a training forward keeps only each block's input for backward, which runs the block
    /// again ([`checkpoint`]). Peak memory of a step falls by about the activations of all
    /// blocks but one; the step costs one more forward of the blocks. Gradients are the same
    /// bit for bit (dropout draws the same masks). Off by default.
    pub fn set_gradient_checkpointing(&mut self, on: bool) {
        self.gradient_checkpointing = on;
    }

    /// Whether blocks are checkpointed in training.
    pub fn gradient_checkpointing(&self) -> bool {
        self.gradient_checkpointing
    }

    /// Logits `(B, T, vocab)` for token ids `idx` `(B, T)` (i64), T at most `block_size`.
    pub fn logits(&self, idx: &Tensor) -> Result<Tensor> {
        self.run(idx, None)
    }

    /// Logits of the new tokens `idx` `(B, T)` after the positions already in `cache`,
    /// appending their keys and values to it (generation).
    pub fn logits_cached(&self, idx: &Tensor, cache: &mut KvCache) -> Result<Tensor> {
        self.run(idx, Some(cache))
    }

    fn run(&self, idx: &Tensor, mut cache: Option<&mut KvCache>) -> Result<Tensor> {
        let c = &self.config;
        if idx.ndim() != 2 || idx.dtype() != DType::I64 {
            return Err(Error::shape(
                "GPT",
                format!(
                    "expected (batch, time) int64 token ids, got {} {:?}",
                    idx.dtype(),
                    idx.shape()
                ),
            ));
        }
        let t = idx.shape()[1];
        let past = cache.as_ref().map_or(0, |k| k.len());
        if past + t > c.block_size {
            return Err(Error::invalid(
                "GPT",
                format!("{} positions exceed block_size {}", past + t, c.block_size),
            ));
        }
        let p = if self.training { c.dropout } else { 0.0 };
        // pos: (T,), the positions past..past + T.
        let pos = Tensor::arange(
            past as f64,
            (past + t) as f64,
            1.0,
            DType::I64,
            idx.device(),
        )?;
        // x: (B, T, E), token embeddings (B, T, E) + position embeddings (T, E).
        let mut x = dropout(
            &self.wte.forward(idx)?.add(&self.wpe.forward(&pos)?)?,
            p,
            p > 0.0,
        )?;
        let checkpointed = self.gradient_checkpointing && self.training && cache.is_none();
        for (layer, block) in self.blocks.iter().enumerate() {
            x = if checkpointed && is_grad_enabled() {
                let (block, c) = (block.clone(), *c);
                checkpoint(move |xs| block.forward(&xs[0], &c, p, None), &[x])?
            } else {
                block.forward(&x, c, p, cache.as_deref_mut().map(|k| (k, layer)))?
            };
        }
        if let Some(k) = cache {
            k.advance(t);
        }
        let x = layer_norm(
            &x,
            &[c.n_embd],
            self.ln_f.weight.as_ref(),
            self.ln_f.bias.as_ref(),
            1e-5,
        )?;
        // Logits (B, T, V): the LM head is the token embedding (weight tying).
        linear(&x, &self.wte.weight, None)
    }

    /// Mean cross-entropy of predicting `targets` `(B, T)` from `idx` `(B, T)`, and the logits.
    pub fn loss(&self, idx: &Tensor, targets: &Tensor) -> Result<(Tensor, Tensor)> {
        let logits = self.logits(idx)?;
        Ok((super::token_cross_entropy(&logits, targets)?, logits))
    }

    /// An empty key/value cache for `batch` sequences on the model's device.
    pub fn new_cache(&self, batch: usize) -> Result<KvCache> {
        let c = &self.config;
        KvCache::new(
            c.n_layer,
            [batch, c.n_head, c.block_size, c.n_embd / c.n_head],
            self.wte.weight.dtype(),
            self.wte.weight.device(),
        )
    }
}

impl Module for Gpt {
    /// Logits of token ids `(B, T)`.
    fn forward(&self, idx: &Tensor) -> Result<Tensor> {
        self.logits(idx)
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let mut out = prefixed("transformer.wte", self.wte.named_parameters());
        out.extend(prefixed("transformer.wpe", self.wpe.named_parameters()));
        for (i, b) in self.blocks.iter().enumerate() {
            out.extend(prefixed(
                &format!("transformer.h.{i}"),
                b.named_parameters(),
            ));
        }
        out.extend(prefixed("transformer.ln_f", self.ln_f.named_parameters()));
        out
    }

    /// `lm_head.weight`, the tied token embedding: listed so that state dicts carry the key
    /// nanoGPT's has, while the optimizer sees the parameter once.
    fn named_buffers(&self) -> Vec<(String, Tensor)> {
        vec![("lm_head.weight".to_string(), self.wte.weight.clone())]
    }

    fn set_training(&mut self, training: bool) {
        self.training = training;
    }

    fn is_training(&self) -> bool {
        self.training
    }

    /// The embeddings, each block's layers (`transformer.h.<i>.attn.c_attn`, ...: nanoGPT's
    /// names, without its `ModuleDict`/`ModuleList` levels) and the final LayerNorm.
    fn named_children(&self) -> Vec<(String, &dyn Module)> {
        let mut out: Vec<(String, &dyn Module)> = vec![
            ("transformer.wte".into(), &self.wte),
            ("transformer.wpe".into(), &self.wpe),
        ];
        for (i, b) in self.blocks.iter().enumerate() {
            for (name, m) in b.named_children() {
                out.push((format!("transformer.h.{i}.{name}"), m));
            }
        }
        out.push(("transformer.ln_f".into(), &self.ln_f));
        out
    }
}
