//! Neural-network building blocks: the `Module` trait, layers, initialisation and losses.

mod conv;
mod module;
mod pool;

pub use conv::{Conv1d, Conv2d, ConvTranspose2d};
pub use module::{prefixed, Module};
pub use pool::{AdaptiveAvgPool2d, AvgPool2d, MaxPool2d};
