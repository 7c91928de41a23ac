//! A small, explicit training loop for classifiers: one optimizer step ([`train_step`]), an
//! epoch over a stream of batches with a progress bar ([`train_epoch`]), a whole recipe's
//! steps ([`Trainer`]: learning-rate schedule with warm-up ([`LrSchedule`]), gradient
//! accumulation, mixed precision, clipping, a moving average of the weights ([`Ema`])),
//! [`EarlyStopping`], evaluation
//! ([`evaluate`]), per-epoch metrics as CSV and JSON lines ([`MetricsLog`]) and a PNG of the
//! loss and accuracy curves ([`plot_curves`]), and what the dashboard reads beside them
//! ([`run_log`]: logged steps, parameter histograms, whole-document JSON). The `tinytorch
//! train` command is built from these pieces; a program that needs something else calls them
//! in its own loop.

mod early_stopping;
mod ema;
mod epoch;
mod metrics;
mod plot;
mod progress;
pub mod run_log;
mod schedule;
mod trainer;

pub use early_stopping::EarlyStopping;
pub use ema::Ema;
pub use epoch::{
    cross_entropy_loss, evaluate, evaluate_with_predictions, train_epoch, train_epoch_observed,
    train_epoch_with, train_step, train_step_with, EpochTotals, LossFn, Prediction, StepDone,
    StepLimit,
};
pub use metrics::{EpochMetrics, MetricsLog};
pub use plot::{plot_curves, register_plot_font};
pub use progress::Progress;
pub use schedule::{LrSchedule, ScheduleKind};
pub use trainer::{StepOptions, Trainer};
