//! Llama-style decoder-only language models (`transformers.LlamaForCausalLM`): token
//! embedding, pre-norm decoder layers with RMSNorm, rotary position embeddings, grouped-query
//! attention and a SwiGLU MLP, a final RMSNorm and an LM head (tied to the embedding or not).
//! The same code runs Qwen2 (`model_type` "qwen2": q/k/v biases) and Mistral ("mistral":
//! sliding-window attention), as `config.json` says.
//! Parameter names equal Hugging Face's (`model.embed_tokens.weight`,
//! `model.layers.0.self_attn.q_proj.weight`, ..., `lm_head.weight`), so a model directory
//! written by `save_pretrained` loads directly, sharded or not, in f32, f16 or bf16.
//!
//! ```no_run
//! use tinytorch::models::gpt::Sampling;
//! use tinytorch::models::llama::LlamaForCausalLM;
//! use tinytorch::Tensor;
//!
//! # fn main() -> tinytorch::Result<()> {
//! // config.json + model.safetensors (or model.safetensors.index.json and its shards).
//! let model = LlamaForCausalLM::from_pretrained("TinyLlama-1.1B")?;
//! let ids = Tensor::from_vec(vec![1i64, 450, 4996], &[1, 3])?;
//! let logits = model.logits(&ids)?; // (1, 3, vocab)
//! let greedy = Sampling { temperature: 0.0, ..Default::default() };
//! let tokens = model.generate(&[1, 450, 4996], 20, &greedy)?; // prompt + 20 tokens
//! # Ok(())
//! # }
//! ```
//!
//! Files: `llama/config.rs` (config.json), `llama/rope.rs` (RoPE parameters and scaling),
//! `llama/weights.rs` (initialising or taking parameters from a checkpoint),
//! `llama/attention.rs` (grouped-query attention), `llama/layer.rs` (RMSNorm, decoder
//! layer), `llama/load.rs` (reading a model directory); this file holds the model and
//! names its key/value cache (GPT's, `gpt/cache.rs`).

mod attention;
mod config;
mod layer;
mod load;
mod rope;
mod weights;

pub use attention::grouped_query_attention;
/// Llama's key/value cache: the generation cache shared with GPT, holding the key/value
/// heads only.
pub type LlamaKvCache = crate::models::gpt::KvCache;
pub use config::{Family, LlamaConfig};
pub use layer::LlamaDecoderLayer;
pub use load::read_state_dict;
pub use rope::{Rope, RopeScaling};

use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::models::gpt::{sample_next, Sampling};
use crate::nn::functional::{embedding, linear};
use crate::nn::{prefixed, Linear, Module, RotaryEmbedding};
use crate::tensor::{DType, Tensor};
use layer::LlamaRmsNorm;
use std::collections::HashMap;
use std::path::Path;
use weights::{Kind, Weights};

/// Keys of Hugging Face Llama checkpoints that carry nothing to load: the rotary inverse
/// frequencies some older files store per layer (recomputed from the config here).
fn is_ignored_key(key: &str) -> bool {
    key.ends_with("rotary_emb.inv_freq")
}

/// A Llama language model: `LlamaModel` (embedding, layers, final norm) and the LM head.
pub struct LlamaForCausalLM {
    config: LlamaConfig,
    /// `(vocab, hidden)`.
    embed_tokens: Tensor,
    padding_idx: Option<usize>,
    layers: Vec<LlamaDecoderLayer>,
    norm: LlamaRmsNorm,
    /// `None` when tied to the embedding.
    lm_head: Option<Linear>,
    rope: RotaryEmbedding,
    training: bool,
}

impl LlamaForCausalLM {
    /// A model of `config` in `dtype` (a float dtype) with Hugging Face's initialisation:
    /// weights and embeddings N(0, initializer_range²) from the global generator, biases 0,
    /// norm weights 1.
    pub fn new(config: LlamaConfig, dtype: DType) -> Result<Self> {
        let std = config.initializer_range;
        Self::build(config, Weights::Init { std, dtype }, |_| false)
    }

    /// A model of `config` with the tensors of a Hugging Face state dict (any float dtype,
    /// converted to `dtype`). Every parameter must be present with its shape; other keys are
    /// errors too (they mean a different model), except per-layer `rotary_emb.inv_freq`
    /// buffers and, for a tied head, `lm_head.weight`. `origin` names the source in errors.
    pub fn from_state_dict(
        config: LlamaConfig,
        tensors: HashMap<String, Tensor>,
        dtype: DType,
        origin: &str,
    ) -> Result<Self> {
        let tied = config.tie_word_embeddings;
        let weights = Weights::Loaded {
            tensors,
            dtype,
            origin: origin.to_string(),
        };
        Self::build(config, weights, |k| {
            is_ignored_key(k) || (tied && k == "lm_head.weight")
        })
    }

    /// `LlamaForCausalLM.from_pretrained(dir)` in f32, in evaluation mode: `config.json`
    /// and `model.safetensors`, or the shards listed in `model.safetensors.index.json`.
    pub fn from_pretrained(dir: impl AsRef<Path>) -> Result<Self> {
        Self::from_pretrained_as(dir, DType::F32)
    }

    /// [`from_pretrained`](Self::from_pretrained) with the parameters converted to `dtype`
    /// (whatever dtype the files store: f32, f16, bf16).
    pub fn from_pretrained_as(dir: impl AsRef<Path>, dtype: DType) -> Result<Self> {
        let dir = dir.as_ref();
        let config = LlamaConfig::from_file(dir.join("config.json"))?;
        let tensors = read_state_dict(dir)?;
        let mut model = Self::from_state_dict(config, tensors, dtype, &dir.display().to_string())?;
        model.eval();
        Ok(model)
    }

    fn build(
        config: LlamaConfig,
        mut weights: Weights,
        ignored: impl Fn(&str) -> bool,
    ) -> Result<Self> {
        config.validate()?;
        let dtype = match &weights {
            Weights::Init { dtype, .. } | Weights::Loaded { dtype, .. } => *dtype,
        };
        if !dtype.is_float() {
            return Err(Error::dtype(
                "LlamaForCausalLM",
                format!("parameters must have a float dtype, got {dtype}"),
            ));
        }
        let c = &config;
        let embed_tokens = weights.take(
            "model.embed_tokens.weight",
            &[c.vocab_size, c.hidden_size],
            Kind::Matrix,
        )?;
        let padding_idx = c.padding_idx();
        if let (Some(p), Weights::Init { .. }) = (padding_idx, &weights) {
            // nn.Embedding(padding_idx) starts the padding row at zero.
            let _guard = no_grad();
            embed_tokens.select(0, p as isize)?.fill_(0.0)?;
        }
        let layers = (0..c.num_hidden_layers)
            .map(|i| LlamaDecoderLayer::new(c, i, &mut weights))
            .collect::<Result<Vec<_>>>()?;
        let norm = LlamaRmsNorm::new("model.norm", c.hidden_size, c.rms_norm_eps, &mut weights)?;
        let lm_head = if c.tie_word_embeddings {
            None
        } else {
            Some(weights.linear("lm_head", c.hidden_size, c.vocab_size, false)?)
        };
        weights.finish(ignored)?;
        let rope = RotaryEmbedding::from_inv_freq(
            c.rope()?.inv_freq(c.head_dim()),
            c.max_position_embeddings,
        )?;
        Ok(LlamaForCausalLM {
            config,
            embed_tokens,
            padding_idx,
            layers,
            norm,
            lm_head,
            rope,
            training: true,
        })
    }

    /// The hyperparameters.
    pub fn config(&self) -> &LlamaConfig {
        &self.config
    }

    /// The dtype of the parameters.
    pub fn dtype(&self) -> DType {
        self.embed_tokens.dtype()
    }

    /// The decoder layers.
    pub fn layers(&self) -> &[LlamaDecoderLayer] {
        &self.layers
    }

    /// The rotary embedding (inverse frequencies from the config's RoPE parameters).
    pub fn rotary_embedding(&self) -> &RotaryEmbedding {
        &self.rope
    }

    /// Logits `(B, T, vocab)` of token ids `(B, T)` (i64), positions `0..T`, causal.
    pub fn logits(&self, input_ids: &Tensor) -> Result<Tensor> {
        let x = self.embed(input_ids)?;
        self.head(&self.decode(x, None)?)
    }

    /// Logits of the new tokens `(B, T)` after the positions already in `cache` (positions
    /// `cache.len()..cache.len() + T`), appending their keys and values to it: generation.
    /// Keys and values enter the cache without gradient, so this is for inference.
    pub fn logits_cached(&self, input_ids: &Tensor, cache: &mut LlamaKvCache) -> Result<Tensor> {
        let x = self.embed(input_ids)?;
        self.head(&self.decode(x, Some(cache))?)
    }

    /// Logits of input embeddings `(B, T, hidden)` instead of token ids (`inputs_embeds`).
    pub fn logits_from_embeds(&self, inputs_embeds: &Tensor) -> Result<Tensor> {
        let s = inputs_embeds.shape();
        if s.len() != 3 || s[2] != self.config.hidden_size || s[0] == 0 || s[1] == 0 {
            return Err(Error::shape(
                "LlamaForCausalLM",
                format!(
                    "inputs_embeds must be (batch, seq, {}) with batch and seq positive, got {s:?}",
                    self.config.hidden_size
                ),
            ));
        }
        self.head(&self.decode(inputs_embeds.clone(), None)?)
    }

    /// The last hidden state `(B, T, hidden)` after the final norm (`LlamaModel`'s output).
    pub fn hidden_states(&self, input_ids: &Tensor) -> Result<Tensor> {
        self.decode(self.embed(input_ids)?, None)
    }

    /// Mean cross-entropy of predicting `targets` `(B, T)` from `input_ids` `(B, T)` position
    /// by position (targets are not shifted; `-100` is ignored), and the logits.
    pub fn loss(&self, input_ids: &Tensor, targets: &Tensor) -> Result<(Tensor, Tensor)> {
        let logits = self.logits(input_ids)?;
        Ok((super::token_cross_entropy(&logits, targets)?, logits))
    }

    /// An empty key/value cache for `batch` sequences of up to `capacity` positions (at most
    /// `max_position_embeddings`), in the parameters' dtype and device. With a sliding window
    /// (Mistral) it is a rolling cache holding the last window - 1 positions.
    pub fn new_cache(&self, batch: usize, capacity: usize) -> Result<LlamaKvCache> {
        let c = &self.config;
        if capacity > c.max_position_embeddings {
            return Err(Error::invalid(
                "LlamaForCausalLM::new_cache",
                format!(
                    "capacity {capacity} exceeds max_position_embeddings {}",
                    c.max_position_embeddings
                ),
            ));
        }
        let shape = [batch, c.kv_heads(), capacity, c.head_dim()];
        let (dtype, device) = (self.dtype(), self.embed_tokens.device());
        match c.attention_window() {
            // A query attends to itself and the window - 1 positions before it: no more need
            // to stay.
            Some(w) => LlamaKvCache::rolling(c.num_hidden_layers, shape, w - 1, dtype, device),
            None => LlamaKvCache::new(c.num_hidden_layers, shape, dtype, device),
        }
    }

    /// `prompt` followed by `max_new_tokens` tokens chosen by `sampling` (temperature 0:
    /// greedy), each from the logits of the last position, using a key/value cache. It does
    /// not stop at an end-of-sequence token.
    pub fn generate(
        &self,
        prompt: &[usize],
        max_new_tokens: usize,
        sampling: &Sampling,
    ) -> Result<Vec<usize>> {
        if prompt.is_empty() {
            return Err(Error::invalid(
                "LlamaForCausalLM::generate",
                "the prompt must hold at least one token",
            ));
        }
        let _guard = no_grad();
        let mut cache = self.new_cache(1, prompt.len() + max_new_tokens)?;
        let mut tokens = prompt.to_vec();
        let mut next: Vec<i64> = prompt.iter().map(|&t| t as i64).collect();
        for _ in 0..max_new_tokens {
            let n = next.len();
            let ids = Tensor::from_vec(std::mem::take(&mut next), &[1, n])?;
            let logits = self.logits_cached(&ids, &mut cache)?;
            let last = logits.select(1, n as isize - 1)?.select(0, 0)?;
            let token = sample_next(&last, sampling)?;
            tokens.push(token);
            next.push(token as i64);
        }
        Ok(tokens)
    }

    /// Token embeddings of `(B, T)` i64 ids.
    fn embed(&self, input_ids: &Tensor) -> Result<Tensor> {
        let s = input_ids.shape();
        if s.len() != 2 || s[0] == 0 || s[1] == 0 || input_ids.dtype() != DType::I64 {
            return Err(Error::shape(
                "LlamaForCausalLM",
                format!(
                    "expected (batch, seq) int64 token ids with both positive, got {} {s:?}",
                    input_ids.dtype()
                ),
            ));
        }
        embedding(input_ids, &self.embed_tokens, self.padding_idx)
    }

    /// Decoder layers and the final norm over embeddings `(B, T, hidden)`.
    fn decode(&self, x: Tensor, mut cache: Option<&mut LlamaKvCache>) -> Result<Tensor> {
        let (b, t) = (x.shape()[0], x.shape()[1]);
        // Where the new tokens stand (a rolling cache holds fewer positions than it saw).
        let past = cache.as_ref().map_or(0, |c| c.position());
        if let Some(c) = &cache {
            c.check(b, t, self.layers.len())?;
        }
        // Positions beyond the rotary table fail here, before any layer writes to the cache.
        let (cos, sin) = self.rope.cos_sin(past, t, x.dtype(), x.device())?;
        let mut x = x;
        for (i, layer) in self.layers.iter().enumerate() {
            x = layer.forward(
                &x,
                &cos,
                &sin,
                cache.as_deref_mut().map(|c| (c, i)),
                self.training,
            )?;
        }
        if let Some(c) = cache {
            c.advance(t);
        }
        self.norm.forward(&x)
    }

    /// The LM head over final hidden states.
    fn head(&self, h: &Tensor) -> Result<Tensor> {
        match &self.lm_head {
            Some(head) => head.forward(h),
            None => linear(h, &self.embed_tokens, None),
        }
    }
}

impl Module for LlamaForCausalLM {
    /// Logits of token ids `(B, T)`.
    fn forward(&self, input_ids: &Tensor) -> Result<Tensor> {
        self.logits(input_ids)
    }

    /// Hugging Face's names, in its order; no `lm_head.weight` when the head is tied (as in
    /// the files `save_pretrained` writes).
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let mut out = vec![(
            "model.embed_tokens.weight".to_string(),
            self.embed_tokens.clone(),
        )];
        for (i, layer) in self.layers.iter().enumerate() {
            out.extend(prefixed(
                &format!("model.layers.{i}"),
                layer.named_parameters(),
            ));
        }
        out.extend(prefixed("model.norm", self.norm.named_parameters()));
        if let Some(head) = &self.lm_head {
            out.extend(prefixed("lm_head", head.named_parameters()));
        }
        out
    }

    fn set_training(&mut self, training: bool) {
        self.training = training;
    }

    fn is_training(&self) -> bool {
        self.training
    }
}
