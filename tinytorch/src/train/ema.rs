//! An exponential moving average of a model's weights, the model a recipe evaluates and
//! ships (`torch.optim.swa_utils.AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(decay),
//! use_buffers=True)`).

use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::nn::Module;
use crate::tensor::Tensor;
use std::collections::BTreeMap;

/// The running average of every parameter and buffer of a model, kept in the order of
/// `named_parameters()` then `named_buffers()` (so a data-parallel wrapper and the model it
/// wraps share one average; names are attached when it is saved).
///
/// After each update, `avg += (1 - decay) * (current - avg)` for floating-point tensors (the
/// first update copies); integer buffers such as BatchNorm's `num_batches_tracked` are
/// copied.
pub struct Ema {
    decay: f64,
    updates: u64,
    average: Vec<Tensor>,
}

/// The model's parameters then buffers, in state order.
fn state_tensors(model: &dyn Module) -> Vec<(String, Tensor)> {
    model
        .named_parameters()
        .into_iter()
        .chain(model.named_buffers())
        .collect()
}

impl Ema {
    /// An empty average with weight `decay` on the past, in `[0, 1]`.
    pub fn new(decay: f64) -> Result<Ema> {
        if !(0.0..=1.0).contains(&decay) {
            return Err(Error::invalid(
                "Ema",
                format!("decay must be in [0, 1], got {decay}"),
            ));
        }
        Ok(Ema {
            decay,
            updates: 0,
            average: Vec::new(),
        })
    }

    /// The weight on the past.
    pub fn decay(&self) -> f64 {
        self.decay
    }

    /// Updates so far (`n_averaged`).
    pub fn updates(&self) -> u64 {
        self.updates
    }

    /// Fold the model's current weights into the average.
    pub fn update(&mut self, model: &dyn Module) -> Result<()> {
        let _guard = no_grad();
        let current = state_tensors(model);
        if self.updates == 0 {
            self.average = current
                .iter()
                .map(|(_, t)| t.detach().contiguous_copy())
                .collect::<Result<_>>()?;
        } else {
            self.check_matches(&current, "Ema::update")?;
            for (avg, (_, t)) in self.average.iter().zip(&current) {
                if t.dtype().is_float() {
                    avg.add_scaled_(&t.detach().sub(avg)?, 1.0 - self.decay)?;
                } else {
                    avg.copy_(t)?;
                }
            }
        }
        self.updates += 1;
        Ok(())
    }

    fn check_matches(&self, current: &[(String, Tensor)], op: &'static str) -> Result<()> {
        let mismatch = current.len() != self.average.len()
            || current
                .iter()
                .zip(&self.average)
                .any(|((_, t), a)| t.shape() != a.shape());
        if mismatch {
            return Err(Error::invalid(
                op,
                format!(
                    "the model's {} parameters and buffers do not match the average's {}",
                    current.len(),
                    self.average.len()
                ),
            ));
        }
        Ok(())
    }

    /// Exchange the model's weights with the average (call twice to swap back): evaluate the
    /// averaged model in place, then return to training the raw one.
    pub fn swap(&mut self, model: &dyn Module) -> Result<()> {
        if self.updates == 0 {
            return Err(Error::invalid("Ema::swap", "the average has no update yet"));
        }
        let current = state_tensors(model);
        self.check_matches(&current, "Ema::swap")?;
        let _guard = no_grad();
        for (avg, (_, t)) in self.average.iter_mut().zip(&current) {
            let raw = t.detach().contiguous_copy()?;
            t.copy_(avg)?;
            *avg = raw;
        }
        Ok(())
    }

    /// The average under the names of `model`'s state dict (the model it averages, or the
    /// one a wrapper holds); empty before the first update.
    pub fn state_dict(&self, model: &dyn Module) -> Result<BTreeMap<String, Tensor>> {
        if self.updates == 0 {
            return Ok(BTreeMap::new());
        }
        let current = state_tensors(model);
        self.check_matches(&current, "Ema::state_dict")?;
        Ok(current
            .into_iter()
            .zip(&self.average)
            .map(|((name, _), avg)| (name, avg.clone()))
            .collect())
    }

    /// Restore an average written by [`Ema::state_dict`] after `updates` updates, matched to
    /// `model` by name; every tensor must be there with the model's shape.
    pub fn load_state_dict(
        &mut self,
        model: &dyn Module,
        state: &BTreeMap<String, Tensor>,
        updates: u64,
    ) -> Result<()> {
        let current = state_tensors(model);
        let average = current
            .iter()
            .map(|(name, t)| match state.get(name) {
                Some(a) if a.shape() == t.shape() => a
                    .to_device(t.device())?
                    .to_dtype(t.dtype())?
                    .contiguous_copy(),
                Some(a) => Err(Error::shape(
                    "Ema::load_state_dict",
                    format!("'{name}': saved {:?}, model {:?}", a.shape(), t.shape()),
                )),
                None => Err(Error::invalid(
                    "Ema::load_state_dict",
                    format!("the saved average lacks '{name}'"),
                )),
            })
            .collect::<Result<Vec<_>>>()?;
        if state.len() != current.len() {
            return Err(Error::invalid(
                "Ema::load_state_dict",
                format!(
                    "{} saved tensors for a model with {} parameters and buffers",
                    state.len(),
                    current.len()
                ),
            ));
        }
        self.average = average;
        self.updates = updates;
        Ok(())
    }

    /// Move the average to the model's device (after `model.to_device`).
    pub fn to_device(&mut self, device: crate::Device) -> Result<()> {
        for a in &mut self.average {
            *a = a.to_device(device)?;
        }
        Ok(())
    }
}
