//! Physically remove structurally pruned channels: the layer's pruned output channels (rows
//! of its weight, entries of its bias) and the matching input features of the layer that
//! reads them go, and the model is rebuilt at its new widths. With the pruned channels' bias
//! masked as well as their weights (their output is then zero), the smaller model's outputs
//! equal the masked model's.

use super::PruneMasks;
use crate::error::{Error, Result};
use crate::models::{ImageShape, ModelKind};
use crate::nn::Module;
use crate::tensor::{Device, Tensor};
use std::collections::HashMap;

/// Indices as an i64 tensor for `index_select`.
fn index(v: &[usize], device: Device) -> Result<Tensor> {
    Tensor::from_vec(v.iter().map(|&i| i as i64).collect::<Vec<_>>(), &[v.len()])?.to_device(device)
}

/// The model `kind` (built for `input` and `num_classes`) of weights `model`, rebuilt
/// without the output channels that `masks` prunes whole in its linked layers
/// ([`ModelKind::channel_links`]; the masks are `{layer}.weight`'s, from
/// [`super::ln_structured`] on dim 0). Returns the new widths and the smaller model.
pub fn shrink(
    kind: ModelKind,
    input: ImageShape,
    num_classes: usize,
    model: &dyn Module,
    masks: &PruneMasks,
) -> Result<(Vec<usize>, Box<dyn Module>)> {
    const OP: &str = "shrink";
    let links = kind.channel_links(input).ok_or_else(|| {
        Error::invalid(
            OP,
            format!("{kind}'s channels cannot be removed one layer at a time"),
        )
    })?;
    let mut state: HashMap<String, Tensor> = model.state_dict().into_iter().collect();
    let mut widths = Vec::with_capacity(links.len());
    for link in &links {
        let weight_key = format!("{}.weight", link.layer);
        let weight = state
            .get(&weight_key)
            .cloned()
            .ok_or_else(|| Error::invalid(OP, format!("the model has no {weight_key}")))?;
        let channels = weight.shape()[0];
        let keep: Vec<usize> = match masks.get(&weight_key) {
            Some(mask) => {
                let per_row = mask.numel() / channels.max(1);
                let m = mask.to_vec_f64()?;
                (0..channels)
                    .filter(|&c| m[c * per_row..(c + 1) * per_row].iter().any(|&x| x != 0.0))
                    .collect()
            }
            None => (0..channels).collect(),
        };
        if keep.is_empty() {
            return Err(Error::invalid(
                OP,
                format!("every channel of layer {} is pruned", link.layer),
            ));
        }
        let device = weight.device();
        let rows = index(&keep, device)?;
        state.insert(weight_key, weight.index_select(0, &rows)?);
        let bias_key = format!("{}.bias", link.layer);
        if let Some(b) = state.get(&bias_key).cloned() {
            state.insert(bias_key, b.index_select(0, &rows)?);
        }
        let reader_key = format!("{}.weight", link.reader);
        let reader = state
            .get(&reader_key)
            .cloned()
            .ok_or_else(|| Error::invalid(OP, format!("the model has no {reader_key}")))?;
        let columns: Vec<usize> = keep
            .iter()
            .flat_map(|&c| c * link.per_channel..(c + 1) * link.per_channel)
            .collect();
        state.insert(
            reader_key,
            reader.index_select(1, &index(&columns, device)?)?,
        );
        widths.push(keep.len());
    }
    let small = kind.build_with_widths(input, num_classes, Some(&widths))?;
    let first = state.values().next().map_or(Device::Cpu, Tensor::device);
    small.to_device(first)?;
    // Copies the values into the new model's own (trainable) parameters.
    small.load_state_dict(&state, true)?;
    Ok((widths, small))
}
