//! Feature maps of each convolution of a run's latest checkpoint for one test image of its
//! eval.json gallery: the model is rebuilt from the checkpoint, the image goes through it
//! once with the op trace keeping outputs, and every `conv2d` output becomes a grid PNG,
//! named by the layer that owns its weight.

use super::images::{decode_hex, feature_grid};
use super::runs::Run;
use crate::train::load_trained_model;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;
use tinytorch::autograd::trace;
use tinytorch::{Error, Result, Tensor};

/// The feature maps of one convolution.
#[derive(Clone, Debug)]
pub struct LayerMaps {
    /// The layer's state-dict name (`conv1`, `layer1.0.conv2`).
    pub layer: String,
    /// The output's shape `[C, H, W]` for the one image.
    pub shape: [usize; 3],
    /// The maps as one PNG grid.
    pub png: Vec<u8>,
}

/// One trace at a time per process (the profiler's rule), so requests take turns.
static TRACE_TURN: Mutex<()> = Mutex::new(());

fn invalid(msg: impl Into<String>) -> Error {
    Error::invalid("dashboard feature maps", msg.into())
}

/// The feature maps for gallery image `index` of `run`'s eval.json, through the model of its
/// checkpoint.safetensors.
pub fn feature_maps(run: &Run, eval: &Value, index: usize) -> Result<Vec<LayerMaps>> {
    let ckpt = run
        .file("checkpoint.safetensors")
        .ok_or_else(|| invalid(format!("run {} has no checkpoint yet", run.id)))?;
    let entry = eval["gallery"]
        .as_array()
        .and_then(|g| g.get(index))
        .ok_or_else(|| invalid(format!("no gallery image {index} in eval.json")))?;
    let shape: Vec<usize> = serde_json::from_value(eval["image_shape"].clone())
        .map_err(|e| invalid(format!("eval.json image_shape: {e}")))?;
    let pixels = decode_hex(entry["pixels_hex"].as_str().unwrap_or_default())?;
    if shape.len() != 3 || pixels.len() != shape.iter().product::<usize>() {
        return Err(invalid(format!(
            "gallery image {index}: {} pixels for shape {shape:?}",
            pixels.len()
        )));
    }
    // The trainer's input: pixels / 255, one image in a batch of one.
    let input = Tensor::from_vec(
        pixels.iter().map(|&p| p as f32 / 255.0).collect::<Vec<_>>(),
        &[1, shape[0], shape[1], shape[2]],
    )?;
    let (_, mut model) = load_trained_model(&ckpt)?;
    model.eval();
    let owner: HashMap<_, String> = model
        .named_parameters()
        .into_iter()
        .map(|(name, p)| (p.id(), name))
        .collect();

    let _turn = TRACE_TURN.lock().unwrap_or_else(|e| e.into_inner());
    if trace::is_active() {
        return Err(invalid("another trace is running"));
    }
    // Parameters require grad, so each op records a node and the trace sees it.
    trace::start_keeping_outputs();
    let result = model.forward(&input);
    let records = trace::stop();
    result?;

    let mut out = Vec::new();
    for r in records.iter().filter(|r| r.name == "conv2d") {
        let Some(value) = &r.value else { continue };
        let layer = r
            .inputs
            .iter()
            .find_map(|i| owner.get(&i.id))
            .map(|n| n.trim_end_matches(".weight").to_string())
            .unwrap_or_else(|| format!("conv2d #{}", out.len() + 1));
        let dims = value.shape();
        if dims.len() != 4 {
            continue;
        }
        let shape = [dims[1], dims[2], dims[3]];
        let values = value.select(0, 0)?.to_vec_f64()?;
        out.push(LayerMaps {
            layer,
            shape,
            png: feature_grid(&values, shape)?,
        });
    }
    Ok(out)
}
