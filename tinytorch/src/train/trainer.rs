//! The training loop of a whole recipe: each optimizer step with the learning rate its
//! schedule gives, gradient accumulation over micro-batches, mixed precision, gradient
//! clipping, and an exponential moving average of the weights; an epoch of such steps.

use super::epoch::{count_correct, EpochTotals, LossFn, StepDone, StepLimit};
use super::{Ema, LrSchedule, Progress};
use crate::amp::autocast;
use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::nn::Module;
use crate::optim::{clip_grad_norm_, Optimizer};
use crate::tensor::{DType, Tensor};
use std::time::Instant;

/// How each optimizer step is computed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepOptions {
    /// Micro-batches per step (gradient accumulation): the batch is cut along its first
    /// dimension into this many parts, each run forward and backward alone with its loss
    /// weighted by its share of the batch, so the step follows the whole batch's mean loss
    /// while only a part's activations are alive at once. 1: the batch at once.
    pub accumulate: usize,
    /// Clip the gradients' global 2-norm to this before stepping (`clip_grad_norm_`).
    pub clip_grad_norm: Option<f64>,
    /// Run the forward pass and the loss under `autocast` in this dtype (bf16 or f16); the
    /// weights, gradients and optimizer stay in f32. f16 without a gradient scaler can
    /// underflow, so recipes use bf16.
    pub amp: Option<DType>,
    /// Take the step even when the loss is NaN or infinite. Off by default: such a step
    /// would write NaN into every weight, so it is an error instead, raised before the
    /// optimizer touches them.
    pub allow_nonfinite_loss: bool,
}

impl Default for StepOptions {
    fn default() -> Self {
        StepOptions {
            accumulate: 1,
            clip_grad_norm: None,
            amp: None,
            allow_nonfinite_loss: false,
        }
    }
}

/// A training run's step machinery and its position: what to do at every step, the
/// schedule with the base learning rates it scales, the weight average, the steps taken and
/// how many may still be taken.
pub struct Trainer {
    /// How each step is computed.
    pub options: StepOptions,
    /// The learning-rate schedule (`None`: the optimizer's rates are left alone).
    pub schedule: Option<LrSchedule>,
    /// Each param group's base learning rate, which the schedule scales.
    pub base_lrs: Vec<f64>,
    /// The moving average of the weights, updated after every step.
    pub ema: Option<Ema>,
    /// Optimizer steps taken since the start of training (the schedule's position).
    pub step: u64,
    /// Steps that may still be taken.
    pub limit: StepLimit,
}

impl Trainer {
    /// Plain steps (one batch at once, no clipping, f32, no schedule, no average) from step
    /// 0, without a limit; the base learning rates are `opt`'s current ones, so build the
    /// trainer before loading an optimizer state that a schedule has changed.
    pub fn new(opt: &dyn Optimizer) -> Trainer {
        Trainer {
            options: StepOptions::default(),
            schedule: None,
            base_lrs: opt.lrs(),
            ema: None,
            step: 0,
            limit: StepLimit(None),
        }
    }

    /// One optimizer step on the batch `(x, y)` minimising `loss`: set the learning rate,
    /// zero the gradients, forward and backward each micro-batch, clip, `opt.step()`,
    /// update the average. Returns the batch's mean loss and its correct predictions.
    pub fn step(
        &mut self,
        model: &dyn Module,
        opt: &mut dyn Optimizer,
        x: &Tensor,
        y: &Tensor,
        loss: LossFn<'_>,
    ) -> Result<(f64, u64)> {
        let n = x.shape().first().copied().unwrap_or(0);
        let parts = self.options.accumulate;
        if parts == 0 || (parts > 1 && parts > n) {
            return Err(Error::invalid(
                "Trainer::step",
                format!("cannot cut a batch of {n} samples into {parts} micro-batches"),
            ));
        }
        if let Some(s) = &self.schedule {
            s.apply(opt, self.step, &self.base_lrs)?;
        }
        let StepOptions {
            clip_grad_norm,
            amp,
            allow_nonfinite_loss,
            ..
        } = self.options;
        let step = self.step;
        // The whole step on a compute thread (`parallel::run_for`): its forward pass is as
        // many small kernels as its backward.
        let done = crate::parallel::run_for(x.device(), || {
            opt.zero_grad();
            let (mut loss_sum, mut correct) = (0.0, 0);
            for k in 0..parts {
                let (start, end) = (k * n / parts, (k + 1) * n / parts);
                let (xk, yk) = if parts == 1 {
                    (x.clone(), y.clone())
                } else {
                    let len = end - start;
                    (
                        x.narrow(0, start as isize, len)?,
                        y.narrow(0, start as isize, len)?,
                    )
                };
                let (logits, part_loss) = {
                    // Autocast covers the forward pass and the loss, not the backward (as
                    // in PyTorch, which runs each backward op in its forward's dtype).
                    let _amp = amp.map(autocast).transpose()?;
                    let logits = model.call(&xk)?;
                    let part_loss = loss(&logits, &xk, &yk)?;
                    (logits, part_loss)
                };
                let weight = if parts == 1 {
                    1.0
                } else {
                    (end - start) as f64 / n as f64
                };
                if parts == 1 {
                    part_loss.backward()?;
                } else {
                    part_loss.mul_scalar(weight)?.backward()?;
                }
                loss_sum += part_loss.item_f64()? * weight;
                let _guard = no_grad();
                correct += count_correct(&logits.detach(), &yk)?;
            }
            if !loss_sum.is_finite() && !allow_nonfinite_loss {
                let lr = opt.lrs().first().copied().unwrap_or(f64::NAN);
                return Err(Error::invalid(
                    "train",
                    format!(
                        "the loss is {loss_sum} at step {step} (learning rate {lr}): training \
                         diverged; lower the learning rate or clip the gradients (the weights \
                         are those before this step)"
                    ),
                ));
            }
            if let Some(max_norm) = clip_grad_norm {
                clip_grad_norm_(&model.parameters(), max_norm, 2.0)?;
            }
            opt.step()?;
            Ok::<_, Error>((loss_sum, correct))
        })?;
        if let Some(ema) = &mut self.ema {
            ema.update(model)?;
        }
        self.step += 1;
        self.limit.take_one();
        Ok(done)
    }

    /// Train `model` (in training mode) on `batches` until they run out or the step limit is
    /// reached, updating `progress` and calling `observe` after every step (an error from it
    /// ends the epoch with that error). Returns the sums of this call.
    pub fn train_epoch<I>(
        &mut self,
        model: &mut dyn Module,
        opt: &mut dyn Optimizer,
        batches: I,
        progress: &Progress,
        loss: LossFn<'_>,
        observe: &mut dyn FnMut(&StepDone<'_>) -> Result<()>,
    ) -> Result<EpochTotals>
    where
        I: IntoIterator<Item = Result<(Tensor, Tensor)>>,
    {
        model.train();
        let mut totals = EpochTotals::default();
        let mut first_step_end: Option<Instant> = None;
        for batch in batches {
            if self.limit.exhausted() {
                break;
            }
            let (x, y) = batch?;
            let (batch_loss, correct) = self.step(model, opt, &x, &y, loss)?;
            let n = y.shape()[0] as u64;
            match first_step_end {
                None => first_step_end = Some(Instant::now()),
                Some(t) => {
                    totals.timed_s = t.elapsed().as_secs_f64();
                    totals.timed_samples += n;
                }
            }
            totals.loss_sum += batch_loss * n as f64;
            totals.correct += correct;
            totals.samples += n;
            totals.steps += 1;
            progress.step(batch_loss, &totals);
            observe(&StepDone {
                model,
                optimizer: opt,
                loss: batch_loss,
                samples: n,
                correct,
                totals: &totals,
            })?;
        }
        Ok(totals)
    }
}
