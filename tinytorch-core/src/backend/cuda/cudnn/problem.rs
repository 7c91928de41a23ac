//! A convolution as cuDNN's legacy API describes it: 4-d NCHW tensors and filter, symmetric
//! padding, stride, dilation and groups as C ints, the data, compute and math types. Built
//! from the op layer's `Conv2dSpec`, or `None` where cuDNN cannot take it, so that the
//! im2col path runs instead. Plain data: it is the key of the algorithm cache and needs no
//! GPU to build or test.

use crate::backend::Conv2dSpec;
use crate::base::DType;
use cudarc::cudnn::sys::{cudnnDataType_t, cudnnMathType_t};
use std::ffi::c_int;

/// One convolution in cuDNN's terms (all sizes checked to fit a C int).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ConvProblem {
    /// The element type of input, weight and output.
    pub dtype: DType,
    /// Input `(N, Ci, H, W)`.
    pub x: [c_int; 4],
    /// Weight `(Co, Ci/G, kh, kw)`.
    pub w: [c_int; 4],
    /// Output `(N, Co, OH, OW)`.
    pub y: [c_int; 4],
    /// Zero padding `(ph, pw)`, the same on both sides.
    pub pad: [c_int; 2],
    /// Window step `(sh, sw)`.
    pub stride: [c_int; 2],
    /// Spacing of the kernel taps `(dh, dw)`.
    pub dilation: [c_int; 2],
    /// Groups `G`.
    pub groups: c_int,
    /// Whether f32 may use TF32 tensor cores (`allow_tf32` when the problem was built): part
    /// of the problem because it changes the math type and so the algorithms allowed.
    pub allow_tf32: bool,
}

impl ConvProblem {
    /// The problem of `spec` in `dtype`, or `None` where cuDNN's legacy API cannot run it:
    /// not a float dtype; an empty input, weight or output (cuDNN rejects zero sizes); a
    /// size past a C int; or padding that is not the same on both sides of a dim, which
    /// the op layer's geometry allows (`padding="same"` with an even kernel puts the extra
    /// element after) and cuDNN's descriptor does not. The last shows as an output size
    /// that symmetric padding would not give: where it gives the same size, the windows
    /// never reach the extra padding, so the results agree.
    pub fn new(spec: &Conv2dSpec, dtype: DType, allow_tf32: bool) -> Option<ConvProblem> {
        if !matches!(dtype, DType::F16 | DType::BF16 | DType::F32 | DType::F64) {
            return None;
        }
        let g = &spec.geom;
        for d in 0..2 {
            if g.stride[d] == 0 || g.dilation[d] == 0 {
                return None; // the op layer refuses these; never reached from it
            }
            let span = g.dilation[d].checked_mul(g.kernel[d].checked_sub(1)?)? + 1;
            let padded = g.input[d].checked_add(2 * g.padding[d])?;
            if padded < span || (padded - span) / g.stride[d] + 1 != g.output[d] {
                return None;
            }
        }
        let int = |v: usize| c_int::try_from(v).ok();
        if spec.groups == 0 || !g.channels.is_multiple_of(spec.groups) {
            return None; // the op layer checks this; never reached from it
        }
        let per_group = g.channels / spec.groups;
        let x = [g.batch, g.channels, g.input[0], g.input[1]];
        let w = [spec.out_channels, per_group, g.kernel[0], g.kernel[1]];
        let y = [g.batch, spec.out_channels, g.output[0], g.output[1]];
        for dims in [&x, &w, &y] {
            // cuDNN's legacy API indexes with ints: each tensor's element count must fit.
            let n = dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d))?;
            if n == 0 || int(n).is_none() {
                return None;
            }
        }
        Some(ConvProblem {
            dtype,
            x: x.map(|v| v as c_int),
            w: w.map(|v| v as c_int),
            y: y.map(|v| v as c_int),
            pad: [int(g.padding[0])?, int(g.padding[1])?],
            stride: [int(g.stride[0])?, int(g.stride[1])?],
            dilation: [int(g.dilation[0])?, int(g.dilation[1])?],
            groups: int(spec.groups)?,
            allow_tf32,
        })
    }

    /// Elements of the input.
    pub fn x_len(&self) -> usize {
        numel(&self.x)
    }

    /// Elements of the weight.
    pub fn w_len(&self) -> usize {
        numel(&self.w)
    }

    /// Elements of the output.
    pub fn y_len(&self) -> usize {
        numel(&self.y)
    }

    /// The cuDNN type of the tensors.
    pub fn data_type(&self) -> cudnnDataType_t {
        match self.dtype {
            DType::F16 => cudnnDataType_t::CUDNN_DATA_HALF,
            DType::BF16 => cudnnDataType_t::CUDNN_DATA_BFLOAT16,
            DType::F64 => cudnnDataType_t::CUDNN_DATA_DOUBLE,
            _ => cudnnDataType_t::CUDNN_DATA_FLOAT,
        }
    }

    /// The type cuDNN accumulates in: f32 for half-precision tensors (cuDNN's
    /// PSEUDO_HALF/PSEUDO_BFLOAT16 configurations, as PyTorch asks and as TinyTorch's CPU
    /// convolutions compute), else the tensors' own.
    pub fn compute_type(&self) -> cudnnDataType_t {
        match self.dtype {
            DType::F64 => cudnnDataType_t::CUDNN_DATA_DOUBLE,
            _ => cudnnDataType_t::CUDNN_DATA_FLOAT,
        }
    }

    /// The math type set on the convolution descriptor, as PyTorch sets it: tensor cores
    /// for f16/bf16; for f32 the default (which lets cuDNN use TF32 on Ampere and later)
    /// where `allow_tf32`, else FMA math, plain f32; f64 the default (no tensor-core path).
    pub fn math_type(&self) -> cudnnMathType_t {
        match self.dtype {
            DType::F16 | DType::BF16 => cudnnMathType_t::CUDNN_TENSOR_OP_MATH,
            DType::F32 if !self.allow_tf32 => cudnnMathType_t::CUDNN_FMA_MATH,
            _ => cudnnMathType_t::CUDNN_DEFAULT_MATH,
        }
    }
}

fn numel(dims: &[c_int; 4]) -> usize {
    dims.iter().map(|&d| d as usize).product()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::ConvGeometry;

    /// A 3x3 convolution of 2 x 8 x 10 x 12 images to 6 channels with these settings.
    fn spec(stride: usize, pad: usize, dilation: usize, groups: usize) -> Conv2dSpec {
        let k = 3;
        let out = |n: usize| (n + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
        Conv2dSpec {
            geom: ConvGeometry {
                batch: 2,
                channels: 8,
                input: [10, 12],
                kernel: [k, k],
                stride: [stride; 2],
                dilation: [dilation; 2],
                padding: [pad; 2],
                output: [out(10), out(12)],
            },
            out_channels: 6,
            groups,
        }
    }

    #[test]
    fn a_convolution_becomes_cudnn_dims() {
        let p = ConvProblem::new(&spec(2, 1, 2, 2), DType::F32, true).unwrap();
        assert_eq!(p.x, [2, 8, 10, 12]);
        assert_eq!(p.w, [6, 4, 3, 3]);
        assert_eq!(p.y, [2, 6, 4, 5]);
        assert_eq!(
            (p.pad, p.stride, p.dilation, p.groups),
            ([1, 1], [2, 2], [2, 2], 2)
        );
        assert_eq!((p.x_len(), p.w_len(), p.y_len()), (1920, 216, 240));
    }

    #[test]
    fn what_cudnn_cannot_take_is_none() {
        assert!(ConvProblem::new(&spec(1, 1, 1, 1), DType::I64, true).is_none());
        assert!(ConvProblem::new(&spec(1, 1, 1, 1), DType::U8, true).is_none());
        let mut empty = spec(1, 1, 1, 1);
        empty.geom.batch = 0;
        assert!(ConvProblem::new(&empty, DType::F32, true).is_none());
        // padding="same" with an even kernel: one more zero after than before, which makes
        // an output one longer than symmetric padding would.
        let mut same = spec(1, 1, 1, 1);
        same.geom.kernel = [4, 4];
        same.geom.output = same.geom.input;
        assert!(ConvProblem::new(&same, DType::F32, true).is_none());
        let mut huge = spec(1, 0, 1, 1);
        huge.geom.batch = 1 << 25; // 2^25 * 8 * 120 elements > i32::MAX
        assert!(ConvProblem::new(&huge, DType::F32, true).is_none());
    }

    #[test]
    fn types_follow_pytorchs_choices() {
        let p = |dt, tf32| ConvProblem::new(&spec(1, 1, 1, 1), dt, tf32).unwrap();
        use cudnnDataType_t::*;
        use cudnnMathType_t::*;
        let f32_tf32 = p(DType::F32, true);
        assert_eq!(
            (
                f32_tf32.data_type(),
                f32_tf32.compute_type(),
                f32_tf32.math_type()
            ),
            (CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH)
        );
        assert_eq!(p(DType::F32, false).math_type(), CUDNN_FMA_MATH);
        let h = p(DType::F16, false);
        assert_eq!(
            (h.data_type(), h.compute_type(), h.math_type()),
            (CUDNN_DATA_HALF, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH)
        );
        let b = p(DType::BF16, true);
        assert_eq!(
            (b.data_type(), b.compute_type(), b.math_type()),
            (CUDNN_DATA_BFLOAT16, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH)
        );
        let d = p(DType::F64, true);
        assert_eq!(
            (d.data_type(), d.compute_type(), d.math_type()),
            (CUDNN_DATA_DOUBLE, CUDNN_DATA_DOUBLE, CUDNN_DEFAULT_MATH)
        );
    }

    /// The problem is a cache key: the TF32 setting and the dtype tell problems apart.
    #[test]
    fn problems_differ_by_dtype_and_tf32() {
        let a = ConvProblem::new(&spec(1, 1, 1, 1), DType::F32, true).unwrap();
        assert_ne!(
            a,
            ConvProblem::new(&spec(1, 1, 1, 1), DType::F32, false).unwrap()
        );
        assert_ne!(
            a,
            ConvProblem::new(&spec(1, 1, 1, 1), DType::F16, true).unwrap()
        );
        assert_eq!(
            a,
            ConvProblem::new(&spec(1, 1, 1, 1), DType::F32, true).unwrap()
        );
    }
}
