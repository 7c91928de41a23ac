//! Neural-network building blocks: the `Module` trait, layers, initialisation and losses.

mod activation;
mod container;
mod conv;
mod dropout;
mod embedding;
mod flatten;
pub mod init;
mod linear;
mod module;
mod pool;

pub use activation::{
    LeakyReLU, LogSoftmax, ReLU, SiLU, Sigmoid, Softmax, Softplus, Tanh, ELU, GELU,
};
pub use container::{ModuleList, Sequential};
pub use conv::{Conv1d, Conv2d, ConvTranspose2d};
pub use dropout::Dropout;
pub use embedding::Embedding;
pub use flatten::{Flatten, Identity};
pub use linear::Linear;
pub use module::{prefixed, Module};
pub use pool::{AdaptiveAvgPool2d, AvgPool2d, MaxPool2d};

/// Functional forms of the layers (`torch.nn.functional`).
pub mod functional {
    pub use super::dropout::dropout;
    pub use super::embedding::embedding;
    pub use super::linear::linear;
}
