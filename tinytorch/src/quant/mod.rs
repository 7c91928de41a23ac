//! int8 quantization, first part: the numerics. Quantization parameters as PyTorch's
//! observers compute them (`qparams`), observers that calibrate activation ranges over data
//! (`observer`: min-max, and a percentile of |x| from a histogram), and quantizing tensors to
//! int8 and back (`QTensor`). The int8 kernels, quantized Linear/Conv2d and the `tinytorch
//! quantize` command build on these.

pub mod observer;
pub mod qparams;

pub use observer::{MinMaxObserver, PercentileObserver};
pub use qparams::{QParams, QTensor, QuantRange};
