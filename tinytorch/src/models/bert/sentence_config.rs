//! The sentence-transformers files around a Hugging Face model: `modules.json` (the
//! pipeline: Transformer, Pooling, optional Normalize), `sentence_bert_config.json`
//! (`max_seq_length`) and the pooling module's `config.json`. A directory without
//! `modules.json` is read as sentence-transformers reads a plain Hugging Face model: the
//! transformer in the directory itself followed by mean pooling, no normalisation.

use crate::error::{Error, Result};
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

const OP: &str = "SentenceConfig::from_dir";

/// What sentence-transformers does around the transformer of a model directory.
#[derive(Debug, Clone, PartialEq)]
pub struct SentenceConfig {
    /// Where the transformer's `config.json`, `model.safetensors` and `tokenizer.json` are.
    pub transformer_dir: PathBuf,
    /// `max_seq_length` of `sentence_bert_config.json`: texts are truncated to this many
    /// tokens, special tokens included. `None` when the file does not say.
    pub max_seq_length: Option<usize>,
    /// True when the pipeline ends in a `Normalize` module (unit-length embeddings).
    pub normalize: bool,
    /// `word_embedding_dimension` of the pooling config, when there is one.
    pub embedding_dim: Option<usize>,
}

/// One entry of `modules.json`.
#[derive(Deserialize)]
struct ModuleEntry {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    path: String,
}

impl SentenceConfig {
    /// Read the sentence-transformers files of `dir`. Only mean pooling is supported; a
    /// module other than Transformer, Pooling and Normalize is an error naming it.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<SentenceConfig> {
        let dir = dir.as_ref();
        let modules_path = dir.join("modules.json");
        if !modules_path.exists() {
            return Ok(SentenceConfig {
                transformer_dir: dir.to_path_buf(),
                max_seq_length: read_max_seq_length(dir)?,
                normalize: false,
                embedding_dim: None,
            });
        }
        let modules: Vec<ModuleEntry> = parse(&modules_path)?;
        let mut transformer_dir = None;
        let mut normalize = false;
        let mut embedding_dim = None;
        for m in &modules {
            // Older releases write `sentence_transformers.models.Pooling`, newer ones other
            // module paths; the class name is what matters.
            match m.kind.rsplit('.').next().unwrap_or_default() {
                "Transformer" if transformer_dir.is_none() => {
                    transformer_dir = Some(dir.join(&m.path))
                }
                "Pooling" => embedding_dim = check_pooling(&dir.join(&m.path))?,
                "Normalize" => normalize = true,
                _ => {
                    return Err(Error::invalid(
                        OP,
                        format!(
                            "'{}': module '{}' is not supported (only one Transformer, \
                             mean Pooling and Normalize)",
                            modules_path.display(),
                            m.kind
                        ),
                    ))
                }
            }
        }
        let transformer_dir = transformer_dir.ok_or_else(|| {
            Error::invalid(
                OP,
                format!("'{}' lists no Transformer module", modules_path.display()),
            )
        })?;
        Ok(SentenceConfig {
            max_seq_length: read_max_seq_length(&transformer_dir)?,
            transformer_dir,
            normalize,
            embedding_dim,
        })
    }
}

/// `max_seq_length` of `dir/sentence_bert_config.json`; `None` when the file or the field
/// is absent (or null).
fn read_max_seq_length(dir: &Path) -> Result<Option<usize>> {
    let path = dir.join("sentence_bert_config.json");
    if !path.exists() {
        return Ok(None);
    }
    let config: Value = parse(&path)?;
    match config.get("max_seq_length") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) if n > 0 => Ok(Some(n as usize)),
            _ => Err(Error::invalid(
                OP,
                format!(
                    "'{}': max_seq_length must be a positive integer, got {v}",
                    path.display()
                ),
            )),
        },
    }
}

/// Check that the pooling module in `dir` pools by mean and nothing else; returns its
/// `word_embedding_dimension`.
fn check_pooling(dir: &Path) -> Result<Option<usize>> {
    let path = dir.join("config.json");
    let config: Value = parse(&path)?;
    let modes: Vec<&String> = config
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, v)| k.starts_with("pooling_mode_") && v.as_bool() == Some(true))
        .map(|(k, _)| k)
        .collect();
    if modes.len() != 1 || modes[0] != "pooling_mode_mean_tokens" {
        return Err(Error::invalid(
            OP,
            format!(
                "'{}': pooling modes {modes:?} are not supported (only \
                 pooling_mode_mean_tokens alone)",
                path.display()
            ),
        ));
    }
    Ok(config
        .get("word_embedding_dimension")
        .and_then(Value::as_u64)
        .map(|d| d as usize))
}

/// Read and parse a JSON file, naming it in errors.
fn parse<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::invalid(OP, format!("cannot read '{}': {e}", path.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| Error::invalid(OP, format!("'{}': {e}", path.display())))
}
