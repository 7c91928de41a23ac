//! The training recipe of a run beyond model, data and optimizer: augmentation, the
//! learning-rate schedule, how steps are taken (accumulation, clipping, mixed precision),
//! the weight average and early stopping. Stored in every checkpoint with the rest of the
//! configuration, so a resumed run follows the same recipe.

use serde_json::{json, Value};
use std::sync::Arc;
use tinytorch::data::transforms::{
    Compose, Normalize, RandomCrop, RandomHorizontalFlip, Transform,
};
use tinytorch::models::ImageShape;
use tinytorch::train::{EarlyStopping, Ema, LrSchedule, ScheduleKind, StepOptions};
use tinytorch::{DType, Error, Result};

/// The schedules `--lr-schedule` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ScheduleName {
    /// The learning rate throughout (after any warm-up).
    Constant,
    /// Cosine annealing to --min-lr at the last step.
    Cosine,
    /// Multiply by --lr-gamma every --lr-step-epochs epochs.
    Step,
    /// PyTorch's one-cycle policy with --lr as the peak (its own warm-up: --pct-start).
    #[value(name = "one-cycle")]
    OneCycle,
}

impl ScheduleName {
    fn name(self) -> &'static str {
        match self {
            ScheduleName::Constant => "constant",
            ScheduleName::Cosine => "cosine",
            ScheduleName::Step => "step",
            ScheduleName::OneCycle => "one-cycle",
        }
    }
}

/// The dtypes `--amp` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum AmpDtype {
    /// bfloat16: f32's range, so no loss scaling is needed.
    Bf16,
}

/// A comma-separated list of numbers (`--normalize-mean 0.49,0.48,0.45`).
#[derive(Clone, Debug, PartialEq)]
pub struct FloatList(pub Vec<f64>);

/// Parse a [`FloatList`].
pub fn parse_float_list(text: &str) -> std::result::Result<FloatList, String> {
    text.split(',')
        .map(|v| {
            v.trim()
                .parse::<f64>()
                .map_err(|_| format!("'{v}' is not a number"))
        })
        .collect::<std::result::Result<Vec<_>, _>>()
        .map(FloatList)
}

/// Everything of a recipe beyond model, data and optimizer.
#[derive(Clone, Debug, PartialEq)]
pub struct Recipe {
    /// The run's planned length in epochs (what cosine and one-cycle anneal over).
    pub epochs: usize,
    /// Random crop back to the image size after zero padding on every side by this much.
    pub crop_padding: Option<usize>,
    /// Random horizontal flips (p = 0.5).
    pub flip: bool,
    /// Per-channel mean and standard deviation to normalise inputs with (training and test).
    pub normalize: Option<(Vec<f64>, Vec<f64>)>,
    /// The schedule after the warm-up.
    pub schedule: ScheduleName,
    /// Epochs of linear warm-up (may be fractional).
    pub warmup_epochs: f64,
    /// The warm-up's first learning rate as a fraction of --lr.
    pub warmup_start_factor: f64,
    /// Cosine: the final learning rate.
    pub min_lr: f64,
    /// Step: epochs between decays.
    pub step_epochs: usize,
    /// Step: the decay factor.
    pub gamma: f64,
    /// One-cycle: fraction of the run spent rising.
    pub pct_start: f64,
    /// Clip the gradients' global 2-norm to this.
    pub clip_grad_norm: Option<f64>,
    /// Micro-batches per optimizer step.
    pub accumulate: usize,
    /// Autocast dtype of the forward pass.
    pub amp: Option<AmpDtype>,
    /// Decay of the weights' moving average (evaluated and saved as the model).
    pub ema: Option<f64>,
    /// Stop after this many epochs without a better test loss.
    pub early_stopping: Option<u64>,
    /// The least test-loss decrease that counts as better.
    pub min_delta: f64,
}

impl Default for Recipe {
    /// Plain training: no augmentation, a constant rate, whole-batch f32 steps.
    fn default() -> Self {
        Recipe {
            epochs: 1,
            crop_padding: None,
            flip: false,
            normalize: None,
            schedule: ScheduleName::Constant,
            warmup_epochs: 0.0,
            warmup_start_factor: 0.01,
            min_lr: 0.0,
            step_epochs: 30,
            gamma: 0.1,
            pct_start: 0.3,
            clip_grad_norm: None,
            accumulate: 1,
            amp: None,
            ema: None,
            early_stopping: None,
            min_delta: 0.0,
        }
    }
}

impl Recipe {
    /// The transform of training batches: crop, flip, then normalise (torchvision's order:
    /// padding is black before normalisation). `None` when there is nothing to do.
    pub fn train_transform(&self, shape: ImageShape) -> Option<Arc<dyn Transform>> {
        let mut steps: Vec<Box<dyn Transform>> = Vec::new();
        if let Some(p) = self.crop_padding {
            steps.push(Box::new(RandomCrop::new((shape.height, shape.width), p)));
        }
        if self.flip {
            steps.push(Box::new(RandomHorizontalFlip::default()));
        }
        if let Some(n) = self.eval_normalize() {
            steps.push(Box::new(n));
        }
        (!steps.is_empty()).then(|| Arc::new(Compose::new(steps)) as Arc<dyn Transform>)
    }

    /// The normalisation of evaluation batches, if any.
    pub fn eval_normalize(&self) -> Option<Normalize> {
        self.normalize
            .as_ref()
            .map(|(mean, std)| Normalize::new(mean.clone(), std.clone()))
    }

    /// The learning-rate schedule over this many batches per epoch (`None` for a constant
    /// rate without warm-up: the optimizer's rate is left alone).
    pub fn lr_schedule(&self, batches_per_epoch: usize) -> Result<Option<LrSchedule>> {
        let per_epoch = batches_per_epoch as f64;
        let warmup = (self.warmup_epochs * per_epoch).round() as u64;
        let kind = match self.schedule {
            ScheduleName::Constant if warmup == 0 => return Ok(None),
            ScheduleName::Constant => ScheduleKind::Constant,
            ScheduleName::Cosine => ScheduleKind::Cosine {
                min_lr: self.min_lr,
            },
            ScheduleName::Step => ScheduleKind::Step {
                step_size: (self.step_epochs * batches_per_epoch) as u64,
                gamma: self.gamma,
            },
            ScheduleName::OneCycle => ScheduleKind::OneCycle {
                pct_start: self.pct_start,
                div_factor: 25.0,
                final_div_factor: 1e4,
            },
        };
        let total = (self.epochs * batches_per_epoch) as u64;
        LrSchedule::new(kind, warmup, self.warmup_start_factor, total).map(Some)
    }

    /// How each optimizer step is computed.
    pub fn step_options(&self) -> StepOptions {
        StepOptions {
            accumulate: self.accumulate,
            clip_grad_norm: self.clip_grad_norm,
            amp: self.amp.map(|AmpDtype::Bf16| DType::BF16),
            allow_nonfinite_loss: false,
        }
    }

    /// A fresh weight average, if the recipe keeps one.
    pub fn ema(&self) -> Result<Option<Ema>> {
        self.ema.map(Ema::new).transpose()
    }

    /// A fresh early-stopping watcher, if the recipe stops early.
    pub fn early_stopping(&self) -> Result<Option<EarlyStopping>> {
        self.early_stopping
            .map(|p| EarlyStopping::new(p, self.min_delta))
            .transpose()
    }

    /// Errors for settings that cannot work, before anything is loaded.
    pub fn check(&self, evaluating: bool) -> Result<()> {
        let bad = |what: String| Err(Error::invalid("train", what));
        if self.accumulate == 0 {
            return bad("--accumulate must be at least 1".into());
        }
        if self.early_stopping.is_some() && !evaluating {
            return bad("--early-stopping watches the test loss; drop --no-eval".into());
        }
        if let Some((mean, std)) = &self.normalize {
            if mean.len() != std.len() {
                return bad(format!(
                    "--normalize-mean has {} values and --normalize-std {}",
                    mean.len(),
                    std.len()
                ));
            }
            if let Some(s) = std.iter().find(|s| **s <= 0.0) {
                return bad(format!("--normalize-std values must be positive, got {s}"));
            }
        }
        if let Some(c) = self.clip_grad_norm.filter(|c| *c <= 0.0) {
            return bad(format!("--clip-grad-norm must be positive, got {c}"));
        }
        if self.warmup_epochs < 0.0 {
            return bad(format!(
                "--warmup-epochs must be >= 0, got {}",
                self.warmup_epochs
            ));
        }
        self.ema()?;
        self.early_stopping()?;
        Ok(())
    }

    /// The recipe as JSON (inside the run configuration).
    pub fn to_json(&self) -> Value {
        json!({
            "epochs": self.epochs,
            "crop_padding": self.crop_padding,
            "flip": self.flip,
            "normalize_mean": self.normalize.as_ref().map(|n| &n.0),
            "normalize_std": self.normalize.as_ref().map(|n| &n.1),
            "lr_schedule": self.schedule.name(),
            "warmup_epochs": self.warmup_epochs,
            "warmup_start_factor": self.warmup_start_factor,
            "min_lr": self.min_lr,
            "lr_step_epochs": self.step_epochs,
            "lr_gamma": self.gamma,
            "pct_start": self.pct_start,
            "clip_grad_norm": self.clip_grad_norm,
            "accumulate": self.accumulate,
            "amp": self.amp.map(|AmpDtype::Bf16| "bf16"),
            "ema": self.ema,
            "early_stopping": self.early_stopping,
            "min_delta": self.min_delta,
        })
    }

    /// Parse what [`Recipe::to_json`] wrote; a missing key (a checkpoint from before the
    /// recipe existed) keeps its default.
    pub fn from_json(v: &Value) -> Result<Recipe> {
        let bad = |k: &str| Error::invalid("checkpoint", format!("bad recipe entry '{k}'"));
        let d = Recipe::default();
        let present = |k: &str| v.get(k).filter(|x| !x.is_null());
        let f = |k: &str, default: f64| match present(k) {
            None => Ok(default),
            Some(x) => x.as_f64().ok_or_else(|| bad(k)),
        };
        let opt_f = |k: &str| {
            present(k)
                .map(|x| x.as_f64().ok_or_else(|| bad(k)))
                .transpose()
        };
        let opt_u = |k: &str| {
            present(k)
                .map(|x| x.as_u64().ok_or_else(|| bad(k)))
                .transpose()
        };
        let list = |k: &str| -> Result<Option<Vec<f64>>> {
            present(k)
                .map(|x| {
                    x.as_array()
                        .and_then(|a| a.iter().map(Value::as_f64).collect::<Option<Vec<_>>>())
                        .ok_or_else(|| bad(k))
                })
                .transpose()
        };
        use clap::ValueEnum;
        let schedule = match present("lr_schedule") {
            None => d.schedule,
            Some(x) => x
                .as_str()
                .and_then(|s| ScheduleName::from_str(s, false).ok())
                .ok_or_else(|| bad("lr_schedule"))?,
        };
        let amp = match present("amp") {
            None => None,
            Some(x) if x.as_str() == Some("bf16") => Some(AmpDtype::Bf16),
            Some(_) => return Err(bad("amp")),
        };
        Ok(Recipe {
            epochs: opt_u("epochs")?.map_or(d.epochs, |e| e as usize),
            crop_padding: opt_u("crop_padding")?.map(|p| p as usize),
            flip: present("flip").and_then(Value::as_bool).unwrap_or(false),
            normalize: list("normalize_mean")?.zip(list("normalize_std")?),
            schedule,
            warmup_epochs: f("warmup_epochs", d.warmup_epochs)?,
            warmup_start_factor: f("warmup_start_factor", d.warmup_start_factor)?,
            min_lr: f("min_lr", d.min_lr)?,
            step_epochs: opt_u("lr_step_epochs")?.map_or(d.step_epochs, |e| e as usize),
            gamma: f("lr_gamma", d.gamma)?,
            pct_start: f("pct_start", d.pct_start)?,
            clip_grad_norm: opt_f("clip_grad_norm")?,
            accumulate: opt_u("accumulate")?.map_or(d.accumulate, |a| a as usize),
            amp,
            ema: opt_f("ema")?,
            early_stopping: opt_u("early_stopping")?,
            min_delta: f("min_delta", d.min_delta)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recipe_round_trips_and_old_configs_get_defaults() {
        let r = Recipe {
            epochs: 30,
            crop_padding: Some(4),
            flip: true,
            normalize: Some((vec![0.5, 0.4, 0.3], vec![0.2, 0.2, 0.2])),
            schedule: ScheduleName::Cosine,
            warmup_epochs: 1.5,
            clip_grad_norm: Some(5.0),
            accumulate: 2,
            amp: Some(AmpDtype::Bf16),
            ema: Some(0.999),
            early_stopping: Some(3),
            ..Default::default()
        };
        assert_eq!(Recipe::from_json(&r.to_json()).unwrap(), r);
        assert_eq!(Recipe::from_json(&json!({})).unwrap(), Recipe::default());
        assert!(Recipe::from_json(&json!({"lr_schedule": "zigzag"})).is_err());
    }

    #[test]
    fn schedules_span_the_planned_run() {
        let r = Recipe {
            epochs: 10,
            schedule: ScheduleName::Cosine,
            warmup_epochs: 1.0,
            ..Default::default()
        };
        let s = r.lr_schedule(100).unwrap().unwrap();
        assert_eq!((s.warmup_steps, s.total_steps), (100, 1000));
        assert_eq!(Recipe::default().lr_schedule(100).unwrap(), None);
        assert!(parse_float_list("0.5, x").is_err());
        assert_eq!(
            parse_float_list("1,2.5").unwrap(),
            FloatList(vec![1.0, 2.5])
        );
    }
}
