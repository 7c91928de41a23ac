//! One training step, one epoch, and evaluation of a classifier with cross-entropy.

use super::{Progress, Trainer};
use crate::autograd::no_grad;
use crate::error::Result;
use crate::nn::functional::cross_entropy;
use crate::nn::{Module, Reduction};
use crate::optim::Optimizer;
use crate::tensor::Tensor;

/// Running sums over the batches of an epoch. Losses are summed per sample so the mean does
/// not depend on how the last batch is cut.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EpochTotals {
    /// Sum over samples of the per-sample loss.
    pub loss_sum: f64,
    /// Correctly classified samples.
    pub correct: u64,
    /// Samples seen.
    pub samples: u64,
    /// Optimizer steps taken.
    pub steps: u64,
    /// Wall-clock seconds from the end of the first step to the end of the last, waiting for
    /// data included (the first step pays for warm-up and is left out).
    pub timed_s: f64,
    /// Samples in the steps after the first.
    pub timed_samples: u64,
}

impl EpochTotals {
    /// Mean loss per sample (NaN before any sample).
    pub fn mean_loss(&self) -> f64 {
        self.loss_sum / self.samples as f64
    }
    /// Fraction of samples classified correctly.
    pub fn accuracy(&self) -> f64 {
        self.correct as f64 / self.samples as f64
    }
    /// Training throughput, leaving out each epoch's first step.
    pub fn samples_per_s(&self) -> f64 {
        self.timed_samples as f64 / self.timed_s
    }
    /// Add another part of an epoch (used when an epoch is resumed from a checkpoint).
    pub fn merge(&mut self, other: &EpochTotals) {
        self.loss_sum += other.loss_sum;
        self.correct += other.correct;
        self.samples += other.samples;
        self.steps += other.steps;
        self.timed_s += other.timed_s;
        self.timed_samples += other.timed_samples;
    }
}

/// How many optimizer steps may still be taken (`--max-steps`); `None` is unlimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepLimit(pub Option<u64>);

impl StepLimit {
    /// True when no step is left.
    pub fn exhausted(&self) -> bool {
        self.0 == Some(0)
    }
    pub(super) fn take_one(&mut self) {
        if let Some(n) = &mut self.0 {
            *n = n.saturating_sub(1);
        }
    }
}

/// Number of rows whose arg-max equals the target class.
pub(super) fn count_correct(logits: &Tensor, target: &Tensor) -> Result<u64> {
    let predicted = logits.argmax(Some(-1), false)?;
    if predicted.shape() != target.shape() || target.dtype() != crate::DType::I64 {
        let hits = predicted.eq(target)?;
        return Ok(hits.to_dtype(crate::DType::I64)?.sum_all()?.item::<i64>()? as u64);
    }
    // Compared on the host: one copy each instead of three more ops (`eq`, a cast and a
    // sum), a few microseconds of a small model's step.
    let (predicted, target) = (predicted.to_vec::<i64>()?, target.to_vec::<i64>()?);
    Ok(predicted
        .iter()
        .zip(&target)
        .filter(|(p, t)| p == t)
        .count() as u64)
}

/// A training loss: from the model's logits, the batch's inputs and its targets, the scalar
/// to minimise. [`cross_entropy_loss`] is the usual one; distillation passes one that also
/// runs the teacher on the inputs.
pub type LossFn<'a> = &'a (dyn Fn(&Tensor, &Tensor, &Tensor) -> Result<Tensor> + Sync);

/// Mean cross-entropy of the logits against the targets (the loss of [`train_step`]).
pub fn cross_entropy_loss(logits: &Tensor, _inputs: &Tensor, targets: &Tensor) -> Result<Tensor> {
    cross_entropy(logits, targets, None, -100, Reduction::Mean, 0.0)
}

/// One optimizer step on a batch: zero the gradients, forward, mean cross-entropy, backward,
/// `opt.step()`. Returns the batch's mean loss and its number of correct predictions.
pub fn train_step(
    model: &dyn Module,
    opt: &mut dyn Optimizer,
    x: &Tensor,
    y: &Tensor,
) -> Result<(f64, u64)> {
    train_step_with(model, opt, x, y, &cross_entropy_loss)
}

/// [`train_step`] minimising `loss` instead of the cross-entropy (a plain [`Trainer`] step).
pub fn train_step_with(
    model: &dyn Module,
    opt: &mut dyn Optimizer,
    x: &Tensor,
    y: &Tensor,
    loss: LossFn<'_>,
) -> Result<(f64, u64)> {
    Trainer::new(opt).step(model, opt, x, y, loss)
}

/// Train `model` (in training mode) on `batches` until they run out or `limit` is exhausted,
/// updating `progress` after every step. Returns the sums of this call.
pub fn train_epoch<I>(
    model: &mut dyn Module,
    opt: &mut dyn Optimizer,
    batches: I,
    limit: &mut StepLimit,
    progress: &Progress,
) -> Result<EpochTotals>
where
    I: IntoIterator<Item = Result<(Tensor, Tensor)>>,
{
    train_epoch_with(model, opt, batches, limit, progress, &cross_entropy_loss)
}

/// [`train_epoch`] minimising `loss` instead of the cross-entropy.
pub fn train_epoch_with<I>(
    model: &mut dyn Module,
    opt: &mut dyn Optimizer,
    batches: I,
    limit: &mut StepLimit,
    progress: &Progress,
    loss: LossFn<'_>,
) -> Result<EpochTotals>
where
    I: IntoIterator<Item = Result<(Tensor, Tensor)>>,
{
    train_epoch_observed(model, opt, batches, limit, progress, loss, &mut |_| Ok(()))
}

/// What [`train_epoch_observed`] tells its observer after each optimizer step: the model (its
/// gradients are still those of the step), the batch's figures and the epoch's sums so far.
pub struct StepDone<'a> {
    /// The model, after the step.
    pub model: &'a dyn Module,
    /// The optimizer, after the step (its learning rates).
    pub optimizer: &'a dyn Optimizer,
    /// Mean loss of the batch.
    pub loss: f64,
    /// Samples in the batch.
    pub samples: u64,
    /// Correct predictions in the batch.
    pub correct: u64,
    /// The sums of this call so far, the step included.
    pub totals: &'a EpochTotals,
}

/// [`train_epoch_with`] calling `observe` after every step (to log steps, histograms, ...);
/// an error from it ends the epoch with that error.
pub fn train_epoch_observed<I>(
    model: &mut dyn Module,
    opt: &mut dyn Optimizer,
    batches: I,
    limit: &mut StepLimit,
    progress: &Progress,
    loss: LossFn<'_>,
    observe: &mut dyn FnMut(&StepDone<'_>) -> Result<()>,
) -> Result<EpochTotals>
where
    I: IntoIterator<Item = Result<(Tensor, Tensor)>>,
{
    let mut trainer = Trainer::new(opt);
    trainer.limit = *limit;
    let totals = trainer.train_epoch(model, opt, batches, progress, loss, observe);
    *limit = trainer.limit;
    totals
}

/// Mean cross-entropy and accuracy of `model` in evaluation mode over `batches` of inputs
/// and i64 class targets, without recording a graph. The model is left in evaluation mode.
pub fn evaluate<I>(model: &mut dyn Module, batches: I) -> Result<(f64, f64)>
where
    I: IntoIterator<Item = Result<(Tensor, Tensor)>>,
{
    evaluate_with_predictions(model, batches).map(|(loss, acc, _)| (loss, acc))
}

/// One sample's prediction: the class with the highest logit and its softmax probability,
/// beside the sample's true class.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    /// The predicted class.
    pub class: i64,
    /// Its probability under the model.
    pub probability: f64,
    /// The sample's target.
    pub target: i64,
}

/// [`evaluate`], also returning every sample's [`Prediction`], in order (for a confusion
/// matrix or a list of mistakes): one pass over the data for both. Returns the mean loss,
/// the accuracy and the predictions.
pub fn evaluate_with_predictions<I>(
    model: &mut dyn Module,
    batches: I,
) -> Result<(f64, f64, Vec<Prediction>)>
where
    I: IntoIterator<Item = Result<(Tensor, Tensor)>>,
{
    model.eval();
    let _guard = no_grad();
    let mut totals = EpochTotals::default();
    let mut predictions = Vec::new();
    for batch in batches {
        let (x, y) = batch?;
        let logits = model.call(&x)?;
        let loss = cross_entropy(&logits, &y, None, -100, Reduction::Sum, 0.0)?;
        totals.loss_sum += loss.item_f64()?;
        totals.correct += count_correct(&logits, &y)?;
        totals.samples += y.shape()[0] as u64;
        // The class dimension is 1, as for the cross-entropy.
        let (best, class) = logits.softmax(1)?.max_dim(1, false)?;
        let (class, best, target) = (
            class.to_vec::<i64>()?,
            best.to_vec_f64()?,
            y.to_vec::<i64>()?,
        );
        predictions.extend((0..class.len()).map(|i| Prediction {
            class: class[i],
            probability: best[i],
            target: target[i],
        }));
    }
    Ok((totals.mean_loss(), totals.accuracy(), predictions))
}

#[cfg(test)]
mod tests {
    use super::count_correct;
    use crate::{DType, Tensor};

    /// Rows 0 and 2 are right (row 2 by a tie, which goes to the first maximum as in
    /// `torch.argmax`), row 1 is wrong; the same through the host comparison (i64 targets)
    /// and through the tensor one (u8 targets, a broadcast target).
    #[test]
    fn count_correct_on_host_and_as_tensors() {
        let logits = Tensor::from_vec(
            vec![0.1f32, 2.0, 0.3, 1.0, 0.0, -1.0, 5.0, 5.0, 1.0],
            &[3, 3],
        )
        .unwrap();
        let target = Tensor::from_vec(vec![1i64, 2, 0], &[3]).unwrap();
        assert_eq!(count_correct(&logits, &target).unwrap(), 2);
        let as_u8 = target.to_dtype(DType::U8).unwrap();
        assert_eq!(count_correct(&logits, &as_u8).unwrap(), 2);
        let one = Tensor::from_vec(vec![0i64], &[1]).unwrap();
        assert_eq!(count_correct(&logits, &one).unwrap(), 2);
        let t = logits.t().unwrap();
        assert_eq!(count_correct(&t, &target).unwrap(), 1);
    }
}
