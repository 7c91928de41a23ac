//! `tinytorch train-lm` and `tinytorch generate`: a GPT on a text corpus, and sampling from
//! its checkpoint.

mod checkpoint;
mod data;
mod generate;
mod train;

pub use generate::{generate, GenerateArgs};
pub use train::{train_lm, TrainLmArgs};
