//! The checkpoint of `tinytorch train-lm`: the GPT's configuration and the tokenizer, stored
//! as JSON metadata beside the weights, and loading both back for `tinytorch generate`.

use tinytorch::io::{load_checkpoint, Checkpoint};
use tinytorch::models::gpt::{Gpt, GptConfig};
use tinytorch::nn::Module;
use tinytorch::text::{tokenizer_from_json, Tokenizer};
use tinytorch::{Error, Result};

/// `GptConfig` as the JSON stored in checkpoints.
pub(super) fn config_json(c: &GptConfig) -> String {
    serde_json::json!({
        "vocab_size": c.vocab_size, "block_size": c.block_size, "n_layer": c.n_layer,
        "n_head": c.n_head, "n_embd": c.n_embd, "dropout": c.dropout, "bias": c.bias,
    })
    .to_string()
}

/// The `GptConfig` of [`config_json`]'s JSON.
fn config_from_json(s: &str) -> Result<GptConfig> {
    let v: serde_json::Value = serde_json::from_str(s)
        .map_err(|e| Error::invalid("checkpoint", format!("bad GPT config: {e}")))?;
    let n = |k: &str| -> Result<usize> {
        v[k].as_u64()
            .map(|x| x as usize)
            .ok_or_else(|| Error::invalid("checkpoint", format!("GPT config lacks {k}")))
    };
    Ok(GptConfig {
        vocab_size: n("vocab_size")?,
        block_size: n("block_size")?,
        n_layer: n("n_layer")?,
        n_head: n("n_head")?,
        n_embd: n("n_embd")?,
        dropout: v["dropout"].as_f64().unwrap_or(0.0),
        bias: v["bias"].as_bool().unwrap_or(true),
    })
}

/// The model and tokenizer of a `train-lm` checkpoint.
pub(super) fn load_lm(path: &std::path::Path) -> Result<(Checkpoint, Gpt, Box<dyn Tokenizer>)> {
    let ckpt = load_checkpoint(path)?;
    let get = |k: &str| {
        ckpt.extra.get(k).ok_or_else(|| {
            Error::invalid(
                "checkpoint",
                format!("{} is not a train-lm checkpoint (no {k})", path.display()),
            )
        })
    };
    let config = config_from_json(get("gpt_config")?)?;
    let tokenizer = tokenizer_from_json(get("tokenizer")?)?;
    let model = Gpt::new(config)?;
    model.load_state_dict(&ckpt.model.clone().into_iter().collect(), true)?;
    Ok((ckpt, model, tokenizer))
}
