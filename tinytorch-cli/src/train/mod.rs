//! `tinytorch train`: train a model on an image classification data set with a progress
//! bar, per-epoch metrics (CSV, JSON lines), a curves PNG, the files `tinytorch dashboard`
//! shows, and atomic checkpoints that resume bit-identically, even in the middle of an epoch.

mod args;
mod checkpoint;
mod config;
mod data;
mod distill;
mod distributed;
mod eval;
mod latency;
mod prune;
mod quantize;
mod recipe;
mod recipe_file;
mod run;
mod run_files;
mod session;

pub use args::{EvalArgs, TrainArgs};
pub use checkpoint::load_trained_model;
pub use config::{DatasetKind, OptimizerKind, RunConfig};
pub use distill::{distill, DistillArgs};
pub use eval::eval_checkpoint;
pub use prune::{prune, PruneArgs};
pub use quantize::{quantize, QuantizeArgs};
pub use recipe_file::expand_config_args;
pub use run::train;
