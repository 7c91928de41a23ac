//! Mixed precision as `torch.amp` does it: an [`autocast`] scope in which matrix products,
//! linear layers and convolutions run in f16 or bf16 (their f32 inputs are cast, gradients
//! flow back to the f32 master weights through the casts) while softmax and log-softmax run
//! in f32. Dynamic loss scaling steps optimizers, so its `GradScaler` lives with them in
//! `optim`.

pub(crate) mod autocast;

pub use autocast::{autocast, autocast_dtype, set_autocast_dtype, AutocastGuard};
pub(crate) use autocast::{runs_in_f32, to_autocast};
