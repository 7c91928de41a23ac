//! `tinytorch eval`: the test loss and accuracy of a checkpoint's model (float, or int8 from
//! `tinytorch quantize`), optionally its latency, and the model-size figures that `quantize`
//! and `prune` report too.

use super::args::EvalArgs;
use super::checkpoint::{config_of, load_int8_model, trained_model};
use super::config::RunConfig;
use super::data::{load_split, Split};
use super::latency::Latency;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use tinytorch::io::{load_checkpoint, serialize_safetensors};
use tinytorch::nn::Module;
use tinytorch::quant::{file_metadata, quantized_parameter_count, INT8_FORMAT};
use tinytorch::train::evaluate;
use tinytorch::Result;

/// A fraction as a percentage with two decimals, as every report of the CLI prints it.
pub(super) fn percent(v: f64) -> String {
    format!("{:.2}%", v * 100.0)
}

/// Parameters that are not zero (after unstructured pruning, fewer than all), int8 layers'
/// weights counted whole.
fn nonzero_parameters(model: &dyn Module) -> Result<usize> {
    let mut count = quantized_parameter_count(model);
    for p in model.parameters() {
        let values = p
            .detach()
            .to_dtype(tinytorch::DType::F32)?
            .to_vec::<f32>()?;
        count += values.iter().filter(|v| **v != 0.0).count();
    }
    Ok(count)
}

/// Bytes of a float model's state dict stored alone as a safetensors file (a training
/// checkpoint also holds the optimizer's state): how big the model is on disk.
pub(super) fn state_dict_bytes(model: &dyn Module) -> Result<u64> {
    Ok(serialize_safetensors(&model.state_dict(), &BTreeMap::new())?.len() as u64)
}

/// The model `tinytorch eval` evaluates, with what it is.
struct Evaluated {
    config: RunConfig,
    model: Box<dyn Module>,
    /// Whether it is an int8 file from `tinytorch quantize`.
    int8: bool,
    /// What it is, for the message ("after 3 epochs (120 steps)", "int8, dynamic").
    what: String,
    /// The same as JSON fields.
    fields: Value,
}

/// Load the model of `path`: an int8 file (told by its safetensors metadata) or a training
/// checkpoint.
fn load_evaluated(path: &Path) -> Result<Evaluated> {
    let metadata = file_metadata(path)?;
    if metadata.get("format").map(String::as_str) == Some(INT8_FORMAT) {
        let (config, model, scheme) = load_int8_model(path, &metadata)?;
        return Ok(Evaluated {
            config,
            model,
            int8: true,
            what: format!("int8, {scheme}"),
            fields: json!({"int8": scheme}),
        });
    }
    let ckpt = load_checkpoint(path)?;
    let config = config_of(&ckpt, path)?;
    let (epochs, steps, averaged) = (ckpt.epoch, ckpt.step, !ckpt.ema.is_empty());
    let model = trained_model(&config, ckpt)?;
    let average = if averaged { ", weight average" } else { "" };
    Ok(Evaluated {
        config,
        model,
        int8: false,
        what: format!("after {epochs} epochs ({steps} steps{average})"),
        fields: json!({"epochs": epochs, "steps": steps, "ema": averaged}),
    })
}

/// Run `tinytorch eval`: the test loss and accuracy of a checkpoint's model, or of an int8
/// model written by `tinytorch quantize`.
pub fn eval_checkpoint(args: &EvalArgs) -> Result<()> {
    let Evaluated {
        mut config,
        mut model,
        int8,
        what,
        fields,
    } = load_evaluated(&args.checkpoint)?;
    if args.data.is_some() {
        config.data = args.data.clone();
    }
    let test = load_split(&config, Split::Test)?;
    let (loss, acc) = evaluate(model.as_mut(), test.batches(1000)?)?;
    let latency = if args.latency {
        Some(Latency::measure(model.as_ref(), &test)?)
    } else {
        None
    };
    if args.json {
        let parameters = model.num_parameters() + quantized_parameter_count(model.as_ref());
        // The model alone on disk: an int8 file is that already.
        let model_bytes = if int8 {
            std::fs::metadata(&args.checkpoint)?.len()
        } else {
            state_dict_bytes(model.as_ref())?
        };
        let mut out = json!({"test_loss": loss, "test_acc": acc, "parameters": parameters,
                             "nonzero_parameters": nonzero_parameters(model.as_ref())?,
                             "model_bytes": model_bytes});
        let fields = [Some(fields), latency.as_ref().map(Latency::to_json)];
        for more in fields.into_iter().flatten() {
            if let Value::Object(more) = more {
                out.as_object_mut().expect("an object").extend(more);
            }
        }
        println!("{out}");
    } else {
        println!(
            "{} {what}: test loss {loss:.4}, test accuracy {}",
            config.model,
            percent(acc)
        );
        if let Some(latency) = latency {
            println!("{}", latency.describe());
        }
    }
    Ok(())
}
