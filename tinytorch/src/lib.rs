//! TinyTorch: a PyTorch-style deep learning framework in Rust.
//!
//! Layers, bottom to top: `backend` (kernels per device), `tensor` (the handle, layouts,
//! dtypes, creation), `autograd` (graph and backward engine), `ops` (every differentiable
//! operation). See docs/DESIGN.md.
//!
//! ```
//! use tinytorch::{DType, Device, Tensor};
//!
//! # fn main() -> tinytorch::Result<()> {
//! let x = Tensor::randn(&[64, 784], DType::F32, Device::Cpu)?;
//! let w = Tensor::randn(&[784, 10], DType::F32, Device::Cpu)?.requires_grad_(true)?;
//! let loss = x.matmul(&w)?.log_softmax(-1)?.mean_all()?;
//! loss.backward()?;
//! assert_eq!(w.grad().unwrap().shape(), &[784, 10]);
//! # Ok(())
//! # }
//! ```

pub mod amp;
pub mod autograd;
pub mod backend;
pub mod base;
pub mod benchmark;
pub mod data;
pub mod distributed;
pub mod error;
pub mod io;
pub mod models;
pub mod nn;
pub mod ops;
pub mod optim;
pub mod parallel;
pub mod profile;
pub mod prune;
pub mod quant;
pub mod tensor;
pub mod text;
pub mod train;

pub use autograd::{no_grad, set_grad_enabled};
pub use error::{Error, Result};
pub use tensor::{manual_seed, DType, Device, Generator, Layout, Scalar, Tensor};
