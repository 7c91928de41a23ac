//! Convolutions through NVIDIA's cuDNN 9, loaded at run time like NVRTC and cuBLAS (cudarc's
//! dynamic loading), so that building needs no cuDNN and a machine without it runs the
//! im2col + cuBLAS convolutions instead, after one warning.
//!
//! By job: `library.rs` finds and checks the library once per process; `flags.rs` holds
//! `torch.backends.cudnn`'s switches; `problem.rs` says a convolution in cuDNN's terms (or
//! that cuDNN cannot take it); `algo.rs` chooses and caches an algorithm per shape;
//! `handle.rs` keeps one cuDNN handle per thread and device; `descriptors.rs` builds the
//! descriptors; `conv.rs` makes the three calls. The door, `Storage::conv2d_forward` and its
//! backward in `backend/fused/conv.rs`, calls [`forward`], [`backward_data`] and
//! [`backward_filter`] through the functions below.

mod algo;
mod conv;
mod descriptors;
mod flags;
mod handle;
mod library;
mod problem;

pub use algo::cached_choices;
pub use flags::{
    allow_tf32, benchmark, deterministic, enabled, set_allow_tf32, set_benchmark,
    set_deterministic, set_enabled,
};
pub use library::{check, is_available, version};
pub(crate) use problem::ConvProblem;

use super::CudaStorage;
use crate::backend::Conv2dSpec;
use crate::base::DType;
use crate::error::Result;
use conv::Failure;

/// The cuDNN problem of a CUDA convolution of `spec` in `dtype`, or `None` where the
/// im2col path is to run: cuDNN switched off (`enabled`), not loadable (said once, with
/// the reason), or unable to take this convolution (see [`ConvProblem::new`]).
pub(crate) fn plan(spec: &Conv2dSpec, dtype: DType) -> Option<ConvProblem> {
    if !enabled() {
        return None;
    }
    if let Err(e) = check() {
        library::warn_fallback_once(&e.to_string());
        return None;
    }
    ConvProblem::new(spec, dtype, allow_tf32())
}

/// `y = conv(x, w) (+ bias)` for `p`, operands given as (buffer, first element) and
/// checked for length by the caller; `Ok(None)` where cuDNN has no algorithm for it, so
/// that the im2col path runs.
pub(crate) fn forward(
    x: (&CudaStorage, usize),
    w: (&CudaStorage, usize),
    bias: Option<(&CudaStorage, usize)>,
    p: &ConvProblem,
) -> Result<Option<CudaStorage>> {
    match conv::forward(x, w, bias, p) {
        Ok(y) => Ok(Some(y)),
        Err(Failure::Unsupported(_)) => Ok(None),
        Err(Failure::Error(e)) => Err(e),
    }
}

/// The input's gradient of a convolution whose forward ran through cuDNN.
pub(crate) fn backward_data(
    gy: (&CudaStorage, usize),
    w: (&CudaStorage, usize),
    p: &ConvProblem,
) -> Result<CudaStorage> {
    conv::backward_data(gy, w, p)
}

/// The weight's gradient of a convolution whose forward ran through cuDNN.
pub(crate) fn backward_filter(
    x: (&CudaStorage, usize),
    gy: (&CudaStorage, usize),
    p: &ConvProblem,
) -> Result<CudaStorage> {
    conv::backward_filter(x, gy, p)
}
