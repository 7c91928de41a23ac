//! The rotary embedding's parameters of a Llama config and its inverse frequencies, computed
//! in f32 step by step as `transformers.modeling_rope_utils` does (`default`, `linear`,
//! `llama3`). Other RoPE types (`dynamic`, `yarn`, `longrope`, ...) are rejected.

use super::LlamaConfig;
use crate::error::{Error, Result};
use crate::nn::rope_inv_freq;
use serde_json::{Map, Value};

/// How the RoPE frequencies are rescaled for longer contexts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RopeScaling {
    /// Plain RoPE (`rope_type` `default`).
    None,
    /// `linear`: every frequency divided by `factor` (position interpolation).
    Linear {
        /// The divisor.
        factor: f64,
    },
    /// `llama3` (Llama 3.1 and later): low frequencies divided by `factor`, high ones kept,
    /// the band between interpolated smoothly.
    Llama3 {
        /// The divisor of the low frequencies.
        factor: f64,
        /// Wavelengths above `original_max_position_embeddings / low_freq_factor` are scaled.
        low_freq_factor: f64,
        /// Wavelengths below `original_max_position_embeddings / high_freq_factor` are kept.
        high_freq_factor: f64,
        /// The context length of pretraining.
        original_max_position_embeddings: usize,
    },
}

/// The rotary embedding of a Llama model: base and scaling.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rope {
    /// The base of the frequencies (`rope_theta`).
    pub theta: f64,
    /// The rescaling.
    pub scaling: RopeScaling,
}

const OP: &str = "LlamaConfig";

fn bad(msg: String) -> Error {
    Error::invalid(OP, msg)
}

/// A positive number field of the RoPE parameters.
fn number(params: &Map<String, Value>, key: &str, kind: &str) -> Result<f64> {
    match params.get(key).and_then(Value::as_f64) {
        Some(x) if x > 0.0 && x.is_finite() => Ok(x),
        Some(x) => Err(bad(format!(
            "RoPE parameter '{key}' must be positive, got {x}"
        ))),
        None => Err(bad(format!(
            "RoPE type '{kind}' needs the number '{key}' in rope_parameters / rope_scaling"
        ))),
    }
}

impl Rope {
    /// The RoPE of `config`: `rope_parameters` when present (transformers 5), otherwise
    /// `rope_scaling` with the top-level `rope_theta` (older files); base 10000 when neither
    /// gives one.
    pub(super) fn from_config(config: &LlamaConfig) -> Result<Rope> {
        let empty = Map::new();
        let params = match [&config.rope_parameters, &config.rope_scaling]
            .into_iter()
            .flatten()
            .find(|v| !v.is_null())
        {
            None => &empty,
            Some(Value::Object(m)) => m,
            Some(other) => {
                return Err(bad(format!(
                    "rope_parameters / rope_scaling must be an object, got {other}"
                )))
            }
        };
        if let Some((key, _)) = params.iter().find(|(_, v)| v.is_object()) {
            return Err(bad(format!(
                "per-layer-type RoPE parameters ('{key}') are not supported"
            )));
        }
        let kind = params
            .get("rope_type")
            .or_else(|| params.get("type"))
            .map(|v| {
                v.as_str()
                    .ok_or_else(|| bad(format!("rope_type must be a string, got {v}")))
            })
            .transpose()?
            .unwrap_or("default");
        let theta = match params.get("rope_theta") {
            Some(_) => number(params, "rope_theta", kind)?,
            None => config.rope_theta.unwrap_or(10000.0),
        };
        if !(theta > 0.0 && theta.is_finite()) {
            return Err(bad(format!("rope_theta must be positive, got {theta}")));
        }
        if let Some(p) = params.get("partial_rotary_factor").and_then(Value::as_f64) {
            if p != 1.0 {
                return Err(bad(format!(
                    "partial_rotary_factor {p} is not supported (Llama rotates whole heads)"
                )));
            }
        }
        let scaling = match kind {
            "default" => RopeScaling::None,
            "linear" => RopeScaling::Linear {
                factor: number(params, "factor", kind)?,
            },
            "llama3" => {
                let original = match params.get("original_max_position_embeddings") {
                    None => config.max_position_embeddings,
                    Some(v) => v.as_u64().filter(|&n| n > 0).ok_or_else(|| {
                        bad(format!(
                            "original_max_position_embeddings must be a positive integer, got {v}"
                        ))
                    })? as usize,
                };
                let (low, high) = (
                    number(params, "low_freq_factor", kind)?,
                    number(params, "high_freq_factor", kind)?,
                );
                if high <= low {
                    return Err(bad(format!(
                        "high_freq_factor {high} must exceed low_freq_factor {low}"
                    )));
                }
                RopeScaling::Llama3 {
                    factor: number(params, "factor", kind)?,
                    low_freq_factor: low,
                    high_freq_factor: high,
                    original_max_position_embeddings: original,
                }
            }
            other => {
                return Err(bad(format!(
                    "RoPE type '{other}' is not supported (supported: default, linear, llama3)"
                )))
            }
        };
        Ok(Rope { theta, scaling })
    }

    /// The `head_dim / 2` inverse frequencies, in f32 operation by operation as Hugging Face
    /// computes them (`ROPE_INIT_FUNCTIONS`).
    pub fn inv_freq(&self, head_dim: usize) -> Vec<f32> {
        let base = rope_inv_freq(head_dim, self.theta);
        match self.scaling {
            RopeScaling::None => base,
            RopeScaling::Linear { factor } => base.iter().map(|f| f / factor as f32).collect(),
            RopeScaling::Llama3 {
                factor,
                low_freq_factor,
                high_freq_factor,
                original_max_position_embeddings: old,
            } => {
                let old = old as f64;
                // Python floats meeting f32 tensors are rounded to f32 first.
                let low_wavelen = (old / low_freq_factor) as f32;
                let high_wavelen = (old / high_freq_factor) as f32;
                let (factor, low) = (factor as f32, low_freq_factor as f32);
                let span = (high_freq_factor - low_freq_factor) as f32;
                base.iter()
                    .map(|&f| {
                        let wavelen = (2.0 * std::f64::consts::PI) as f32 / f;
                        if wavelen > low_wavelen {
                            f / factor
                        } else if wavelen < high_wavelen {
                            f
                        } else {
                            let smooth = (old as f32 / wavelen - low) / span;
                            (1.0 - smooth) * f / factor + smooth * f
                        }
                    })
                    .collect()
            }
        }
    }
}
