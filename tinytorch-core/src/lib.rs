//! TinyTorch's core: tensors, autograd and every differentiable operation, the layers,
//! optimizers, data loading and safetensors/checkpoint io, with no plotting, progress bars,
//! tokenizers or async runtime in its dependencies. The `tinytorch` crate re-exports each
//! module at the same path and adds the training loop, text, models, distributed training
//! and the systems toolkit.
//!
//! Layers, bottom to top: `base` (layouts, dtypes, devices), `backend` (kernels per device),
//! `tensor` (the handle, creation, views), `autograd` (graph and backward engine), `ops`
//! (every differentiable operation), then `nn`, `optim`, `data` and `io`. See docs/DESIGN.md.
//!
//! ```
//! use tinytorch_core::{DType, Device, Tensor};
//!
//! # fn main() -> tinytorch_core::Result<()> {
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
pub mod data;
pub mod error;
pub mod io;
pub mod nn;
pub mod ops;
pub mod optim;
pub mod parallel;
pub mod tensor;

pub use autograd::{no_grad, set_grad_enabled};
pub use base::{Dim, Dims};
pub use error::{Error, Result};
pub use tensor::{manual_seed, DType, Device, Generator, Layout, Scalar, Tensor};
