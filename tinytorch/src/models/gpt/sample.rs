//! Choosing the next token from logits: temperature, top-k and top-p (nucleus) sampling,
//! or greedy decoding at temperature 0.

use crate::error::{Error, Result};
use crate::tensor::{DType, Device, Tensor};

/// How to pick tokens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sampling {
    /// Divides the logits; 0 picks the most likely token (greedy).
    pub temperature: f64,
    /// Keep only the `k` most likely tokens.
    pub top_k: Option<usize>,
    /// Keep the smallest set of most likely tokens whose probability reaches `p`.
    pub top_p: Option<f64>,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling {
            temperature: 1.0,
            top_k: None,
            top_p: None,
        }
    }
}

impl Sampling {
    /// Error unless temperature >= 0, top_p in (0, 1] and top_k > 0 (NaN fails too).
    pub fn check(&self) -> Result<()> {
        let temperature_ok = self.temperature >= 0.0;
        let top_p_ok = self.top_p.is_none_or(|p| p > 0.0 && p <= 1.0);
        if !temperature_ok || !top_p_ok || self.top_k == Some(0) {
            return Err(Error::invalid(
                "sample",
                format!(
                    "temperature must be >= 0, top_p in (0, 1] and top_k > 0; got \
                     temperature {}, top_p {:?}, top_k {:?}",
                    self.temperature, self.top_p, self.top_k
                ),
            ));
        }
        Ok(())
    }
}

/// The next token for the logits `(vocab,)` of the last position, drawing from the global
/// generator (`manual_seed` makes it reproducible).
pub fn sample_next(logits: &Tensor, s: &Sampling) -> Result<usize> {
    s.check()?;
    let l = logits.to_dtype(DType::F64)?.to_vec::<f64>()?;
    let mut order: Vec<usize> = (0..l.len()).collect();
    order.sort_by(|&a, &b| l[b].total_cmp(&l[a]));
    if s.temperature == 0.0 || l.len() == 1 {
        return Ok(order[0]);
    }
    let keep = s.top_k.map_or(order.len(), |k| k.min(order.len()));
    order.truncate(keep);
    let max = l[order[0]];
    let mut probs: Vec<f64> = order
        .iter()
        .map(|&i| ((l[i] - max) / s.temperature).exp())
        .collect();
    let total: f64 = probs.iter().sum();
    probs.iter_mut().for_each(|p| *p /= total);
    if let Some(top_p) = s.top_p {
        // The first tokens whose cumulative probability reaches top_p (at least one).
        let mut cum = 0.0;
        let cut = probs
            .iter()
            .position(|p| {
                cum += p;
                cum >= top_p
            })
            .map_or(probs.len(), |i| i + 1);
        probs.truncate(cut);
        order.truncate(cut);
        let total: f64 = probs.iter().sum();
        probs.iter_mut().for_each(|p| *p /= total);
    }
    let u = Tensor::rand(&[], DType::F64, Device::Cpu)?.item::<f64>()?;
    let mut cum = 0.0;
    for (p, &i) in probs.iter().zip(&order) {
        cum += p;
        if u < cum {
            return Ok(i);
        }
    }
    Ok(*order.last().expect("at least one token"))
}
