//! TinyTorch: a PyTorch-style deep learning framework in Rust.
//!
//! Layers, bottom to top: `backend` (kernels per device), `tensor` (the handle, layouts,
//! dtypes, creation), `autograd` (graph and backward engine), `ops` (every differentiable
//! operation). See docs/DESIGN.md.

pub mod autograd;
pub mod backend;
pub mod error;
pub mod ops;
pub mod tensor;

pub use autograd::{no_grad, set_grad_enabled};
pub use error::{Error, Result};
pub use tensor::{manual_seed, DType, Device, Generator, Layout, Tensor};
