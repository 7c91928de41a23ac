//! The base types every layer shares, at the bottom of the stack: element types
//! ([`DType`], [`Element`], PyTorch's type promotion), strided [`Layout`]s, [`Device`]s and
//! [`Scalar`]s. They import nothing of the crate but [`crate::error`], so the backend can
//! use them without importing `tensor`; `tensor` re-exports them under their old paths.

mod device;
pub mod dims;
pub mod dtype;
pub mod layout;
pub mod scalar;

pub use device::Device;
pub use dims::{Dim, Dims};
pub use dtype::{DType, Element, FloatElement, ResultType};
pub use layout::Layout;
pub use scalar::Scalar;
