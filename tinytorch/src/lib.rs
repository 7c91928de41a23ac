//! TinyTorch: a PyTorch-style deep learning framework in Rust.
//!
//! Layers, bottom to top: `backend` (kernels per device), `tensor` (the handle, layouts,
//! dtypes, creation), `autograd` (graph and backward engine), `ops` (every differentiable
//! operation), `nn`, `optim`, `data`, `io`: these come from the `tinytorch-core` crate and are
//! re-exported here at the same paths. This crate adds `text`, `train`, `models`,
//! `distributed` and the systems toolkit (`benchmark`, `profile`, `quant`, `prune`).
//! See docs/DESIGN.md.
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

pub use tinytorch_core::{
    amp, autograd, backend, base, data, error, io, nn, ops, optim, parallel, tensor,
};

pub mod benchmark;
pub mod distributed;
pub mod models;
pub mod profile;
pub mod prune;
pub mod quant;
pub mod text;
pub mod train;

pub use tinytorch_core::{
    manual_seed, no_grad, set_grad_enabled, DType, Device, Error, Generator, Layout, Result,
    Scalar, Tensor,
};
