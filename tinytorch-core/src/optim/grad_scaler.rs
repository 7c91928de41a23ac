//! Dynamic loss scaling (`torch.amp.GradScaler`): multiply the loss by a scale so small
//! half-precision gradients do not flush to zero, divide the gradients back before the
//! step, skip steps whose gradients hold inf or NaN and shrink the scale after them, and
//! grow it after a run of good steps.

use crate::autograd::no_grad;
use crate::error::Result;
use crate::optim::Optimizer;
use crate::tensor::Tensor;

/// GradScaler's hyperparameters, with PyTorch's defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GradScalerOptions {
    /// Starting scale (2^16).
    pub init_scale: f64,
    /// Factor applied after `growth_interval` steps without inf/NaN (2).
    pub growth_factor: f64,
    /// Factor applied after a step with inf/NaN gradients (0.5).
    pub backoff_factor: f64,
    /// Good steps between growths (2000).
    pub growth_interval: u64,
    /// When false, every method is a pass-through.
    pub enabled: bool,
}

impl Default for GradScalerOptions {
    fn default() -> Self {
        GradScalerOptions {
            init_scale: 65536.0,
            growth_factor: 2.0,
            backoff_factor: 0.5,
            growth_interval: 2000,
            enabled: true,
        }
    }
}

/// The loss scaler; use it as `scale(loss).backward()`, `step(opt)`, `update()`.
#[derive(Clone, Debug)]
pub struct GradScaler {
    opts: GradScalerOptions,
    scale: f64,
    growth_tracker: u64,
    /// This step's gradients were already divided by the scale.
    unscaled: bool,
    /// This step's gradients hold inf or NaN.
    found_inf: bool,
}

impl Default for GradScaler {
    fn default() -> Self {
        GradScaler::new(GradScalerOptions::default())
    }
}

impl GradScaler {
    /// A scaler with these options.
    pub fn new(opts: GradScalerOptions) -> Self {
        GradScaler {
            scale: opts.init_scale,
            opts,
            growth_tracker: 0,
            unscaled: false,
            found_inf: false,
        }
    }

    /// The current scale (1 when disabled).
    pub fn get_scale(&self) -> f64 {
        if self.opts.enabled {
            self.scale
        } else {
            1.0
        }
    }

    /// `loss * scale`, the tensor to call `backward` on.
    pub fn scale(&self, loss: &Tensor) -> Result<Tensor> {
        if !self.opts.enabled {
            return Ok(loss.clone());
        }
        loss.mul_scalar(self.scale)
    }

    /// Divide the gradients of `opt`'s parameters by the scale, in place, and note whether
    /// any is inf or NaN (`scaler.unscale_(optimizer)`, e.g. before gradient clipping).
    /// Once per step; a second call does nothing.
    pub fn unscale_(&mut self, opt: &dyn Optimizer) -> Result<()> {
        if !self.opts.enabled || self.unscaled {
            return Ok(());
        }
        let _guard = no_grad();
        let inv = 1.0 / self.scale;
        for group in opt.param_groups() {
            for p in &group.params {
                if let Some(g) = p.grad() {
                    g.mul_scalar_(inv)?;
                    // Any inf or NaN makes the sum of |g| non-finite (NaN propagates).
                    let total = g
                        .abs()?
                        .to_dtype(crate::DType::F64)?
                        .sum_all()?
                        .item_f64()?;
                    self.found_inf |= !total.is_finite();
                }
            }
        }
        self.unscaled = true;
        Ok(())
    }

    /// Unscale (unless done already) and take `opt.step()` unless a gradient is inf or NaN.
    /// Returns whether the step was taken.
    pub fn step(&mut self, opt: &mut dyn Optimizer) -> Result<bool> {
        if !self.opts.enabled {
            opt.step()?;
            return Ok(true);
        }
        self.unscale_(opt)?;
        if self.found_inf {
            return Ok(false);
        }
        opt.step()?;
        Ok(true)
    }

    /// Adjust the scale for the next step: back off after inf/NaN, grow after
    /// `growth_interval` good steps in a row.
    pub fn update(&mut self) {
        if !self.opts.enabled {
            return;
        }
        if self.found_inf {
            self.scale *= self.opts.backoff_factor;
            self.growth_tracker = 0;
        } else {
            self.growth_tracker += 1;
            if self.growth_tracker == self.opts.growth_interval {
                self.scale *= self.opts.growth_factor;
                self.growth_tracker = 0;
            }
        }
        self.unscaled = false;
        self.found_inf = false;
    }
}
