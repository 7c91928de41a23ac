//! Reading the tensors of a Hugging Face model directory: `model.safetensors`, or the shards
//! that `model.safetensors.index.json` lists in its `weight_map` (what `save_pretrained`
//! writes past `max_shard_size`).

use crate::error::{Error, Result};
use crate::io::load_safetensors;
use crate::tensor::Tensor;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Component, Path};

const OP: &str = "read_state_dict";
const SINGLE: &str = "model.safetensors";
const INDEX: &str = "model.safetensors.index.json";

/// `model.safetensors.index.json`: which shard holds each tensor.
#[derive(Deserialize)]
struct ShardIndex {
    weight_map: BTreeMap<String, String>,
}

/// Every tensor of the model directory `dir`, by name, as stored (any dtype): from
/// `model.safetensors` when present, otherwise from the shards of
/// `model.safetensors.index.json`. Errors name the file at fault: a directory with neither
/// file, an unreadable index, a missing or corrupt shard, a tensor the index places in a
/// shard that lacks it, a tensor stored twice.
pub fn read_state_dict(dir: impl AsRef<Path>) -> Result<HashMap<String, Tensor>> {
    let dir = dir.as_ref();
    if !dir.is_dir() {
        return Err(Error::invalid(
            OP,
            format!("'{}' is not a model directory", dir.display()),
        ));
    }
    if dir.join(SINGLE).exists() {
        return Ok(load_safetensors(dir.join(SINGLE))?.into_iter().collect());
    }
    let index_path = dir.join(INDEX);
    if !index_path.exists() {
        return Err(Error::invalid(
            OP,
            format!("'{}' has neither {SINGLE} nor {INDEX}", dir.display()),
        ));
    }
    let text = std::fs::read_to_string(&index_path)
        .map_err(|e| Error::invalid(OP, format!("cannot read '{}': {e}", index_path.display())))?;
    let index: ShardIndex = serde_json::from_str(&text)
        .map_err(|e| Error::invalid(OP, format!("'{}': {e}", index_path.display())))?;
    let shards: BTreeSet<&String> = index.weight_map.values().collect();
    let mut out = HashMap::new();
    for shard in shards {
        let plain = Path::new(shard)
            .components()
            .all(|c| matches!(c, Component::Normal(_)));
        if !plain {
            return Err(Error::invalid(
                OP,
                format!(
                    "'{}' names the shard '{shard}', which is not a file inside the directory",
                    index_path.display()
                ),
            ));
        }
        let path = dir.join(shard);
        let tensors = load_safetensors(&path)?;
        for (name, _) in index.weight_map.iter().filter(|(_, s)| *s == shard) {
            if !tensors.contains_key(name) {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "'{}' has no tensor '{name}', which {INDEX} places there",
                        path.display()
                    ),
                ));
            }
        }
        for (name, t) in tensors {
            if out.insert(name.clone(), t).is_some() {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "tensor '{name}' is stored in more than one shard of '{}'",
                        dir.display()
                    ),
                ));
            }
        }
    }
    Ok(out)
}
