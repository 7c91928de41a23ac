//! Neural-network building blocks: the `Module` trait, layers, initialisation and losses.

mod module;
// basic layers and initialisation (i3-nn)
mod activation;
mod container;
mod dropout;
mod embedding;
mod flatten;
pub mod init;
mod linear;
pub use activation::{
    LeakyReLU, LogSoftmax, ReLU, SiLU, Sigmoid, Softmax, Softplus, Tanh, ELU, GELU,
};
pub use container::{ModuleList, Sequential};
pub use dropout::Dropout;
pub use embedding::Embedding;
pub use flatten::{Flatten, Identity};
pub use linear::Linear;
/// Functional forms of the layers (`torch.nn.functional`).
pub mod functional {
    pub use super::dropout::dropout;
    pub use super::embedding::embedding;
    pub use super::linear::linear;
}

pub use module::{prefixed, Module};
