//! int8 quantization. Quantization parameters as PyTorch's observers compute them
//! (`qparams`), observers that calibrate activation ranges over data (`observer`: min-max, and
//! a percentile of |x| from a histogram), quantizing tensors to int8 and back (`QTensor`), the
//! u8 x i8 -> i32 matrix product (`gemm`: AVX-512 VNNI and portable kernels), and dynamically
//! quantized Linear (`DynamicQuantLinear`). Still to come: static quantization of Linear and
//! Conv2d, converting whole models, and the `tinytorch quantize` command.

pub mod gemm;
mod linear;
pub mod observer;
pub mod qparams;

pub use linear::DynamicQuantLinear;
pub use observer::{MinMaxObserver, PercentileObserver};
pub use qparams::{QParams, QTensor, QuantRange};
