//! Training checkpoints: model weights, optimizer and scheduler state, random generator
//! states and counters in ONE safetensors file, so a run resumes bit-identically.
//!
//! Layout: tensors `model.<state-dict key>` and `optim.state.<param index>.<state name>`; the
//! rest is JSON in the `__metadata__` entry `checkpoint`, next to `format` =
//! `tinytorch.checkpoint` and `version`. Floats are JSON numbers written with the shortest
//! representation that parses back to the same bits (infinities and NaN as the strings
//! `"inf"`, `"-inf"`, `"nan"`); 128-bit generator positions are decimal strings.

use super::safetensors::{deserialize_safetensors, load_safetensors_with_metadata, write_file};
use crate::error::{Error, Result};
use crate::optim::lr_scheduler::SchedulerState;
use crate::optim::{GroupState, OptimizerState, ParamState, StateValue};
use crate::tensor::{GeneratorState, Tensor};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// The value of the `format` metadata entry that marks a TinyTorch checkpoint.
pub const CHECKPOINT_FORMAT: &str = "tinytorch.checkpoint";
/// The layout version written by [`save_checkpoint`].
pub const CHECKPOINT_VERSION: u64 = 1;

const MODEL_PREFIX: &str = "model.";
const OPTIM_PREFIX: &str = "optim.state.";
const EMA_PREFIX: &str = "ema.";

/// Everything needed to resume training (the dict people pass to `torch.save` in a
/// PyTorch training script: `model`, `optimizer`, `scheduler`, rng states, epoch, step).
#[derive(Clone, Debug, Default)]
pub struct Checkpoint {
    /// The model's state dict (`model.state_dict()`).
    pub model: BTreeMap<String, Tensor>,
    /// The optimizer's state (`optimizer.state_dict()`).
    pub optimizer: Option<OptimizerState>,
    /// A moving average of the model's state dict (`train::Ema::state_dict`), empty for
    /// none; stored under the `ema.` prefix.
    pub ema: BTreeMap<String, Tensor>,
    /// An epoch-based scheduler's bookkeeping (`LrScheduler::sched().clone()`).
    pub scheduler: Option<SchedulerState>,
    /// Extra scalars a scheduler needs beyond [`SchedulerState`] (e.g. a plateau scheduler's
    /// best metric); stored as given.
    pub scheduler_extra: BTreeMap<String, f64>,
    /// Named generator states: `"global"` for `tensor::get_rng_state()`, `"loader"` for a
    /// data loader's shuffle generator, ...
    pub rng: BTreeMap<String, GeneratorState>,
    /// Completed epochs.
    pub epoch: u64,
    /// Completed optimizer steps.
    pub step: u64,
    /// Free-form strings (model name, config, ...).
    pub extra: BTreeMap<String, String>,
}

/// Write `ckpt` to `path` as one safetensors file, atomically (a crash mid-save leaves the
/// previous checkpoint whole). The model tensors load in PyTorch with
/// `safetensors.torch.load_file`, under the `model.` prefix.
pub fn save_checkpoint(path: impl AsRef<Path>, ckpt: &Checkpoint) -> Result<()> {
    let (tensors, metadata) = checkpoint_parts(ckpt);
    write_file("save_checkpoint", path.as_ref(), &tensors, &metadata)
}

/// Tensors and string metadata of the safetensors file [`save_checkpoint`] writes.
fn checkpoint_parts(ckpt: &Checkpoint) -> (BTreeMap<String, Tensor>, BTreeMap<String, String>) {
    let mut tensors = BTreeMap::new();
    for (k, t) in &ckpt.model {
        tensors.insert(format!("{MODEL_PREFIX}{k}"), t.clone());
    }
    for (k, t) in &ckpt.ema {
        tensors.insert(format!("{EMA_PREFIX}{k}"), t.clone());
    }
    if let Some(opt) = &ckpt.optimizer {
        for (index, state) in &opt.state {
            for (name, value) in state {
                if let StateValue::Tensor(t) = value {
                    tensors.insert(format!("{OPTIM_PREFIX}{index}.{name}"), t.clone());
                }
            }
        }
    }
    let body = json!({
        "epoch": ckpt.epoch,
        "step": ckpt.step,
        "extra": ckpt.extra,
        "optimizer": ckpt.optimizer.as_ref().map(optimizer_to_json),
        "scheduler": ckpt.scheduler.as_ref().map(scheduler_to_json),
        "scheduler_extra": f64_map_to_json(&ckpt.scheduler_extra),
        "rng": ckpt.rng.iter().map(|(k, g)| (k.clone(), rng_to_json(g))).collect::<Map<_, _>>(),
    });
    let metadata = BTreeMap::from([
        ("format".to_string(), CHECKPOINT_FORMAT.to_string()),
        ("version".to_string(), CHECKPOINT_VERSION.to_string()),
        ("checkpoint".to_string(), body.to_string()),
    ]);
    (tensors, metadata)
}

/// Read a checkpoint written by [`save_checkpoint`]. A file that is not a safetensors file,
/// not a TinyTorch checkpoint, or lacks a field is an `Err` naming the file and the problem.
pub fn load_checkpoint(path: impl AsRef<Path>) -> Result<Checkpoint> {
    let path = path.as_ref();
    let (tensors, metadata) = load_safetensors_with_metadata(path)?;
    decode(tensors, &metadata).map_err(|problem| {
        Error::invalid(
            "load_checkpoint",
            format!("'{}': {problem}", path.display()),
        )
    })
}

/// Parse the bytes of a checkpoint file (the in-memory form of [`load_checkpoint`]).
pub fn deserialize_checkpoint(bytes: &[u8]) -> Result<Checkpoint> {
    let (tensors, metadata) = deserialize_safetensors(bytes)?;
    decode(tensors, &metadata).map_err(|problem| Error::invalid("load_checkpoint", problem))
}

type Problem = String;

fn decode(
    tensors: BTreeMap<String, Tensor>,
    metadata: &BTreeMap<String, String>,
) -> std::result::Result<Checkpoint, Problem> {
    if metadata.get("format").map(String::as_str) != Some(CHECKPOINT_FORMAT) {
        return Err(format!(
            "not a TinyTorch checkpoint (no metadata entry format = {CHECKPOINT_FORMAT}; \
             a plain state dict loads with load_safetensors)"
        ));
    }
    let version = metadata.get("version").map(String::as_str).unwrap_or("?");
    if version != CHECKPOINT_VERSION.to_string() {
        return Err(format!(
            "checkpoint version {version} is not supported (expected {CHECKPOINT_VERSION})"
        ));
    }
    let body = metadata
        .get("checkpoint")
        .ok_or("missing the 'checkpoint' metadata entry")?;
    let body: Value =
        serde_json::from_str(body).map_err(|e| format!("corrupt checkpoint metadata: {e}"))?;

    let mut model = BTreeMap::new();
    let mut ema = BTreeMap::new();
    let mut optim_tensors: BTreeMap<usize, BTreeMap<String, Tensor>> = BTreeMap::new();
    for (key, t) in tensors {
        if let Some(k) = key.strip_prefix(MODEL_PREFIX) {
            model.insert(k.to_string(), t);
        } else if let Some(k) = key.strip_prefix(EMA_PREFIX) {
            ema.insert(k.to_string(), t);
        } else if let Some(rest) = key.strip_prefix(OPTIM_PREFIX) {
            let (index, name) = rest
                .split_once('.')
                .and_then(|(i, n)| Some((i.parse::<usize>().ok()?, n)))
                .ok_or_else(|| format!("bad optimizer tensor name '{key}'"))?;
            optim_tensors
                .entry(index)
                .or_default()
                .insert(name.to_string(), t);
        } else {
            return Err(format!(
                "unexpected tensor '{key}' (expected model.*, ema.* or optim.state.*)"
            ));
        }
    }

    let optimizer = match field(&body, "optimizer")? {
        Value::Null => {
            if !optim_tensors.is_empty() {
                return Err("optimizer tensors without optimizer state".into());
            }
            None
        }
        v => Some(optimizer_from_json(v, optim_tensors)?),
    };
    let scheduler = match field(&body, "scheduler")? {
        Value::Null => None,
        v => Some(scheduler_from_json(v)?),
    };
    let rng = object(field(&body, "rng")?, "rng")?
        .iter()
        .map(|(k, v)| Ok((k.clone(), rng_from_json(v, k)?)))
        .collect::<std::result::Result<_, Problem>>()?;
    let extra = object(field(&body, "extra")?, "extra")?
        .iter()
        .map(|(k, v)| {
            let s = v
                .as_str()
                .ok_or_else(|| format!("extra '{k}' is not a string"))?;
            Ok((k.clone(), s.to_string()))
        })
        .collect::<std::result::Result<_, Problem>>()?;
    Ok(Checkpoint {
        model,
        optimizer,
        ema,
        scheduler,
        scheduler_extra: f64_map_from_json(field(&body, "scheduler_extra")?, "scheduler_extra")?,
        rng,
        epoch: u64_field(&body, "epoch")?,
        step: u64_field(&body, "step")?,
        extra,
    })
}

// ---- JSON pieces ---------------------------------------------------------------------------

/// A float as JSON: a number when finite (JSON has no infinities or NaN), else a string.
fn f64_to_json(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else if x.is_nan() {
        json!("nan")
    } else if x > 0.0 {
        json!("inf")
    } else {
        json!("-inf")
    }
}

fn f64_from_json(v: &Value, what: &str) -> std::result::Result<f64, Problem> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.as_str() {
            "nan" => Some(f64::NAN),
            "inf" => Some(f64::INFINITY),
            "-inf" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
    .ok_or_else(|| format!("'{what}' is not a number: {v}"))
}

fn f64_map_to_json(m: &BTreeMap<String, f64>) -> Value {
    Value::Object(
        m.iter()
            .map(|(k, v)| (k.clone(), f64_to_json(*v)))
            .collect(),
    )
}

fn f64_map_from_json(v: &Value, what: &str) -> std::result::Result<BTreeMap<String, f64>, Problem> {
    object(v, what)?
        .iter()
        .map(|(k, x)| Ok((k.clone(), f64_from_json(x, &format!("{what}.{k}"))?)))
        .collect()
}

fn f64_list(v: &Value, what: &str) -> std::result::Result<Vec<f64>, Problem> {
    v.as_array()
        .ok_or_else(|| format!("'{what}' is not a list"))?
        .iter()
        .map(|x| f64_from_json(x, what))
        .collect()
}

fn field<'a>(v: &'a Value, name: &str) -> std::result::Result<&'a Value, Problem> {
    v.get(name)
        .ok_or_else(|| format!("missing field '{name}' in the checkpoint metadata"))
}

fn object<'a>(v: &'a Value, what: &str) -> std::result::Result<&'a Map<String, Value>, Problem> {
    v.as_object()
        .ok_or_else(|| format!("'{what}' is not an object"))
}

fn u64_field(v: &Value, name: &str) -> std::result::Result<u64, Problem> {
    field(v, name)?
        .as_u64()
        .ok_or_else(|| format!("'{name}' is not a non-negative integer"))
}

fn optimizer_to_json(opt: &OptimizerState) -> Value {
    let groups: Vec<Value> = opt
        .param_groups
        .iter()
        .map(|g| {
            json!({
                "lr": f64_to_json(g.lr),
                "options": f64_map_to_json(&g.options),
                "params": g.params,
            })
        })
        .collect();
    // Scalars only: buffers travel as tensors. Every parameter with state gets an entry, so
    // the set of indices survives even for state made only of tensors.
    let state: Map<String, Value> = opt
        .state
        .iter()
        .map(|(i, s)| {
            let scalars: Map<String, Value> = s
                .iter()
                .filter_map(|(k, v)| match v {
                    StateValue::Scalar(x) => Some((k.clone(), f64_to_json(*x))),
                    StateValue::Tensor(_) => None,
                })
                .collect();
            (i.to_string(), Value::Object(scalars))
        })
        .collect();
    json!({ "param_groups": groups, "state": state })
}

fn optimizer_from_json(
    v: &Value,
    mut tensors: BTreeMap<usize, BTreeMap<String, Tensor>>,
) -> std::result::Result<OptimizerState, Problem> {
    let groups = field(v, "param_groups")?
        .as_array()
        .ok_or("'optimizer.param_groups' is not a list")?;
    let param_groups = groups
        .iter()
        .map(|g| {
            let params = field(g, "params")?
                .as_array()
                .ok_or("'params' is not a list")?
                .iter()
                .map(|p| {
                    p.as_u64()
                        .map(|p| p as usize)
                        .ok_or_else(|| format!("bad parameter index {p}"))
                })
                .collect::<std::result::Result<_, Problem>>()?;
            Ok(GroupState {
                lr: f64_from_json(field(g, "lr")?, "lr")?,
                options: f64_map_from_json(field(g, "options")?, "options")?,
                params,
            })
        })
        .collect::<std::result::Result<_, Problem>>()?;

    let mut state = BTreeMap::new();
    for (index, scalars) in object(field(v, "state")?, "optimizer.state")? {
        let i: usize = index
            .parse()
            .map_err(|_| format!("bad parameter index '{index}' in optimizer.state"))?;
        let mut s = ParamState::new();
        for (k, x) in object(scalars, "optimizer.state entry")? {
            s.insert(k.clone(), StateValue::Scalar(f64_from_json(x, k)?));
        }
        for (k, t) in tensors.remove(&i).unwrap_or_default() {
            s.insert(k, StateValue::Tensor(t));
        }
        state.insert(i, s);
    }
    if let Some(i) = tensors.keys().next() {
        return Err(format!(
            "optimizer tensors for parameter {i}, which has no optimizer.state entry"
        ));
    }
    Ok(OptimizerState {
        state,
        param_groups,
    })
}

fn scheduler_to_json(s: &SchedulerState) -> Value {
    json!({
        "base_lrs": s.base_lrs.iter().map(|x| f64_to_json(*x)).collect::<Vec<_>>(),
        "last_epoch": s.last_epoch,
        "last_lr": s.last_lr.iter().map(|x| f64_to_json(*x)).collect::<Vec<_>>(),
    })
}

fn scheduler_from_json(v: &Value) -> std::result::Result<SchedulerState, Problem> {
    Ok(SchedulerState {
        base_lrs: f64_list(field(v, "base_lrs")?, "base_lrs")?,
        last_epoch: field(v, "last_epoch")?
            .as_i64()
            .ok_or("'last_epoch' is not an integer")?,
        last_lr: f64_list(field(v, "last_lr")?, "last_lr")?,
    })
}

fn rng_to_json(g: &GeneratorState) -> Value {
    json!({
        "seed": g.seed.to_string(),
        "stream": g.stream.to_string(),
        "word_pos": g.word_pos.to_string(),
    })
}

fn rng_from_json(v: &Value, name: &str) -> std::result::Result<GeneratorState, Problem> {
    let text = |f: &str| -> std::result::Result<&str, Problem> {
        field(v, f)?
            .as_str()
            .ok_or_else(|| format!("rng '{name}': '{f}' is not a string"))
    };
    let bad = |f: &str| format!("rng '{name}': '{f}' is not an unsigned integer");
    Ok(GeneratorState {
        seed: text("seed")?.parse().map_err(|_| bad("seed"))?,
        stream: text("stream")?.parse().map_err(|_| bad("stream"))?,
        word_pos: text("word_pos")?.parse().map_err(|_| bad("word_pos"))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::atomic::write_atomic;
    use crate::io::safetensors::serialize_safetensors;

    #[test]
    fn crash_during_save_leaves_the_previous_checkpoint_loadable() {
        let dir = std::env::temp_dir().join(format!("tinytorch-ckpt-crash-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ckpt.safetensors");
        let mut old = Checkpoint {
            epoch: 1,
            ..Default::default()
        };
        old.model
            .insert("w".into(), Tensor::from_slice(&[1.0f32, 2.0]));
        save_checkpoint(&path, &old).unwrap();

        let mut new = old.clone();
        new.epoch = 2;
        new.model
            .insert("w".into(), Tensor::from_slice(&[3.0f32, 4.0]));
        let (tensors, metadata) = checkpoint_parts(&new);
        let bytes = serialize_safetensors(&tensors, &metadata).unwrap();
        let half = &bytes[..bytes.len() / 2];
        // Fail cleanly halfway (disk full) ...
        let failed = write_atomic("save_checkpoint", &path, |w| {
            w.write_all(half)?;
            Err(std::io::Error::other("disk full").into())
        });
        assert!(failed.is_err());
        // ... and crash halfway (no cleanup runs).
        let crashed = std::panic::catch_unwind(|| {
            let _ = write_atomic("save_checkpoint", &path, |w| {
                w.write_all(half)?;
                w.flush()?;
                panic!("simulated crash");
            });
        });
        assert!(crashed.is_err());

        let back = load_checkpoint(&path).unwrap();
        assert_eq!(back.epoch, 1);
        assert_eq!(back.model["w"].to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
        save_checkpoint(&path, &new).unwrap();
        assert_eq!(load_checkpoint(&path).unwrap().epoch, 2);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn floats_round_trip_exactly_through_json() {
        let mut x = 0.1f64;
        let mut values = vec![
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            -0.0,
            f64::MIN_POSITIVE,
        ];
        for _ in 0..200 {
            x = x * 1.37 + 1e-3 / x;
            values.push(x);
            values.push(1.0 / x);
        }
        values.push(0.1 * 0.1 * 0.1);
        for v in values {
            let text = f64_to_json(v).to_string();
            let back: Value = serde_json::from_str(&text).unwrap();
            let y = f64_from_json(&back, "v").unwrap();
            assert_eq!(y.to_bits(), v.to_bits(), "{v} -> {text}");
        }
        let nan: Value = serde_json::from_str(&f64_to_json(f64::NAN).to_string()).unwrap();
        assert!(f64_from_json(&nan, "v").unwrap().is_nan());
    }
}
