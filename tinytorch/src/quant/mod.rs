//! int8 quantization, PyTorch's eager mode on the CPU. Quantization parameters as PyTorch's
//! observers compute them (`qparams`), observers that calibrate activation ranges over data
//! (`observer`: min-max, and a percentile of |x| from a histogram), quantizing tensors to int8
//! and back (`QTensor`), affine u8 activations (`Affine`), the u8 x i8 -> i32 matrix product
//! (`gemm`: AVX-512 VNNI, AVX2 and portable kernels), quantized layers (`DynamicQuantLinear`,
//! static `QuantLinear` and `QuantConv2d`), calibration and whole-model conversion
//! (`Calibration`, `convert_static`, `quantize_dynamic`), and the int8 model file
//! (`save_quantized`, `load_quantized`).

mod activation;
mod conv;
mod convert;
mod file;
pub mod gemm;
mod linear;
pub mod observer;
pub mod qparams;
mod weight;

pub use activation::Affine;
pub use conv::QuantConv2d;
pub use convert::{
    convert_static, quantize_dynamic, quantized_parameter_count, Calibration, ObserverKind,
};
pub use file::{file_metadata, load_quantized, save_quantized, INT8_FORMAT, INT8_VERSION};
pub use gemm::Kernel;
pub use linear::{DynamicQuantLinear, QuantLinear};
pub use observer::{MinMaxObserver, PercentileObserver};
pub use qparams::{QParams, QTensor, QuantRange};
