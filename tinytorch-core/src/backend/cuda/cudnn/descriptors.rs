//! The cuDNN descriptors of one convolution (input, output and bias tensors, filter,
//! convolution), created from a `ConvProblem` and destroyed when dropped.
//!
//! Built here on cudarc's `result` functions rather than its safe `Cudnn` types because
//! those are generic over a Rust element type (TinyTorch's buffers are bytes with a dtype
//! beside them) and keep their raw descriptors private, which `cudnnFind*AlgorithmEx`
//! (not wrapped by cudarc) needs.

use super::problem::ConvProblem;
use cudarc::cudnn::result::{self, CudnnError};
use cudarc::cudnn::sys;

/// A tensor descriptor, destroyed on drop.
pub(crate) struct TensorDesc(pub sys::cudnnTensorDescriptor_t);

impl TensorDesc {
    /// A packed NCHW tensor of `dims` in `dtype`.
    fn new(dtype: sys::cudnnDataType_t, dims: [i32; 4]) -> Result<Self, CudnnError> {
        let d = TensorDesc(result::create_tensor_descriptor()?);
        let format = sys::cudnnTensorFormat_t::CUDNN_TENSOR_NCHW;
        // SAFETY: a live descriptor; plain values.
        unsafe { result::set_tensor4d_descriptor(d.0, format, dtype, dims) }?;
        Ok(d)
    }
}

impl Drop for TensorDesc {
    fn drop(&mut self) {
        // SAFETY: created by this struct and destroyed once. A failure here would be
        // cuDNN's own bug; there is nothing to do about it in a destructor.
        let _ = unsafe { result::destroy_tensor_descriptor(self.0) };
    }
}

/// A filter descriptor, destroyed on drop.
pub(crate) struct FilterDesc(pub sys::cudnnFilterDescriptor_t);

impl Drop for FilterDesc {
    fn drop(&mut self) {
        // SAFETY: as TensorDesc's.
        let _ = unsafe { result::destroy_filter_descriptor(self.0) };
    }
}

/// A convolution descriptor, destroyed on drop.
pub(crate) struct ConvDesc(pub sys::cudnnConvolutionDescriptor_t);

impl Drop for ConvDesc {
    fn drop(&mut self) {
        // SAFETY: as TensorDesc's.
        let _ = unsafe { result::destroy_convolution_descriptor(self.0) };
    }
}

/// Every descriptor of one convolution. Building them costs a few host calls and no device
/// work, so they are made per call instead of cached beside the algorithm.
pub(crate) struct Descriptors {
    /// The input `(N, Ci, H, W)` (or its gradient).
    pub x: TensorDesc,
    /// The weight `(Co, Ci/G, kh, kw)` (or its gradient).
    pub w: FilterDesc,
    /// The output `(N, Co, OH, OW)` (or its gradient).
    pub y: TensorDesc,
    /// Stride, padding, dilation, groups, compute and math type.
    pub conv: ConvDesc,
}

impl Descriptors {
    /// The descriptors of `p`.
    pub fn new(p: &ConvProblem) -> Result<Self, CudnnError> {
        let dt = p.data_type();
        let w = FilterDesc(result::create_filter_descriptor()?);
        let format = sys::cudnnTensorFormat_t::CUDNN_TENSOR_NCHW;
        // SAFETY: a live descriptor; plain values.
        unsafe { result::set_filter4d_descriptor(w.0, dt, format, p.w) }?;
        let conv = ConvDesc(result::create_convolution_descriptor()?);
        let mode = sys::cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION;
        // SAFETY: a live descriptor; plain values. The math type is set once and never
        // taken from what an algorithm query returns: copying that back could turn TF32
        // on where `allow_tf32` is off (a bug PyTorch once had).
        unsafe {
            result::set_convolution2d_descriptor(
                conv.0,
                p.pad[0],
                p.pad[1],
                p.stride[0],
                p.stride[1],
                p.dilation[0],
                p.dilation[1],
                mode,
                p.compute_type(),
            )?;
            result::set_convolution_group_count(conv.0, p.groups)?;
            result::set_convolution_math_type(conv.0, p.math_type())?;
        }
        Ok(Descriptors {
            x: TensorDesc::new(dt, p.x)?,
            w,
            y: TensorDesc::new(dt, p.y)?,
            conv,
        })
    }

    /// The bias `(1, Co, 1, 1)`, broadcast over the output by `cudnnAddTensor`.
    pub fn bias(p: &ConvProblem) -> Result<TensorDesc, CudnnError> {
        TensorDesc::new(p.data_type(), [1, p.y[1], 1, 1])
    }
}
