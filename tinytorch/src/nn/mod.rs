//! Neural-network building blocks: the `Module` trait, layers, initialisation and losses.

mod module;

pub use module::{prefixed, Module};
