//! Statically quantized Conv2d (`torch.ao.nn.quantized.Conv2d`, and `ConvReLU2d` with `relu`):
//! the input quantized with calibrated parameters into a zero-padded channels-last u8 image
//! (padding is the zero point, the integer for 0.0), unfolded into rows of `kh * kw * C` bytes
//! (one row per output position, each kernel row's `kw * C` bytes one copy), multiplied by the
//! int8 weights in the same `(i, j, c)` order, and requantized to the output's calibrated
//! parameters. Takes and returns f32 NCHW tensors, like `QuantLinear`.

use super::activation::{Affine, MIN_TASK};
use super::gemm::Kernel;
use super::linear::check_f32_cpu;
use super::weight::{bias_values, quantize_per_channel, Epilogue, Int8Weight};
use crate::error::{Error, Result};
use crate::nn::{Conv2d, Module};
use crate::ops::{resolve_padding, window_count};
use crate::tensor::memory::CountedBytes;
use crate::tensor::Tensor;
use rayon::prelude::*;

/// A statically quantized 2-D convolution with one group (see the module docs).
#[derive(Clone, Debug)]
pub struct QuantConv2d {
    /// `out_channels` rows of `kh * kw * in_channels`, in `(i, j, c)` order.
    pub(super) weight: Int8Weight,
    pub(super) in_channels: usize,
    pub(super) kernel_size: [usize; 2],
    pub(super) stride: [usize; 2],
    /// `(top, bottom, left, right)`.
    pub(super) padding: [usize; 4],
    pub(super) dilation: [usize; 2],
    /// The calibrated parameters of the input.
    pub input: Affine,
    /// The calibrated parameters of the output.
    pub output: Affine,
    /// Whether the ReLU that followed the float layer is fused in.
    pub relu: bool,
    /// The kernel of the int8 product (`Auto`: the fastest this CPU has).
    pub kernel: Kernel,
}

/// Reorder a weight `(co, c, kh, kw)` (row-major `values`) to `(co, kh, kw, c)`, or back with
/// `inverse`.
pub(super) fn channels_last(values: &[i8], shape: [usize; 4], inverse: bool) -> Vec<i8> {
    let [co, c, kh, kw] = shape;
    let mut out = vec![0i8; values.len()];
    for o in 0..co {
        for ci in 0..c {
            for i in 0..kh {
                for j in 0..kw {
                    let nchw = ((o * c + ci) * kh + i) * kw + j;
                    let nhwc = ((o * kh + i) * kw + j) * c + ci;
                    if inverse {
                        out[nchw] = values[nhwc];
                    } else {
                        out[nhwc] = values[nchw];
                    }
                }
            }
        }
    }
    out
}

impl QuantConv2d {
    const OP: &'static str = "quantized conv2d";

    /// Quantize `conv` (one group) with calibrated input and output parameters.
    pub fn from_conv(
        conv: &Conv2d,
        input: Affine,
        output: Affine,
        relu: bool,
    ) -> Result<QuantConv2d> {
        let (values, scales) = quantize_per_channel(&conv.weight)?;
        let bias = bias_values(conv.bias.as_ref())?;
        QuantConv2d::from_parts(conv, &values, scales, bias, input, output, relu)
    }

    /// The layer with `conv`'s geometry and stored integers (`values`, in the weight's
    /// `(out_channels, in_channels, kh, kw)` order), scales and bias.
    pub(super) fn from_parts(
        conv: &Conv2d,
        values: &[i8],
        scales: Vec<f32>,
        bias: Option<Vec<f32>>,
        input: Affine,
        output: Affine,
        relu: bool,
    ) -> Result<QuantConv2d> {
        if conv.groups != 1 {
            return Err(Error::invalid(
                Self::OP,
                format!("supports one group, got groups={}", conv.groups),
            ));
        }
        let ws = conv.weight.shape();
        let shape = [ws[0], ws[1], ws[2], ws[3]];
        if values.len() != shape.iter().product::<usize>() {
            return Err(Error::shape(
                Self::OP,
                format!("{} weights for a weight of shape {shape:?}", values.len()),
            ));
        }
        let padding = resolve_padding(
            Self::OP,
            conv.padding,
            [shape[2], shape[3]],
            conv.stride,
            conv.dilation,
        )?;
        let weight = Int8Weight::new(
            Self::OP,
            &channels_last(values, shape, false),
            shape[0],
            shape[1] * shape[2] * shape[3],
            scales,
            bias,
        )?;
        Ok(QuantConv2d {
            weight,
            in_channels: shape[1],
            kernel_size: [shape[2], shape[3]],
            stride: conv.stride,
            padding,
            dilation: conv.dilation,
            input,
            output,
            relu,
            kernel: Kernel::Auto,
        })
    }

    /// The integers in the weight's `(out_channels, in_channels, kh, kw)` order.
    pub(super) fn weight_values(&self) -> Vec<i8> {
        channels_last(&self.weight.values(), self.weight_shape(), true)
    }

    /// The weight's shape, `(out_channels, in_channels, kh, kw)`.
    pub fn weight_shape(&self) -> [usize; 4] {
        [
            self.weight.n(),
            self.in_channels,
            self.kernel_size[0],
            self.kernel_size[1],
        ]
    }
}

impl Module for QuantConv2d {
    /// `x` of shape `(N, in_channels, H, W)`, f32 on the CPU, to `(N, out_channels, OH, OW)` f32
    /// values on the output's 256 levels.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let op = Self::OP;
        check_f32_cpu(op, x)?;
        if x.ndim() != 4 || x.shape()[1] != self.in_channels {
            return Err(Error::shape(
                op,
                format!(
                    "input of shape {:?} for {} input channels (N, C, H, W)",
                    x.shape(),
                    self.in_channels
                ),
            ));
        }
        let (n, c, h, w) = (x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3]);
        let [pt, pb, pl, pr] = self.padding;
        let (hp, wp) = (h + pt + pb, w + pl + pr);
        let [kh, kw] = self.kernel_size;
        let oh = window_count(hp, kh, self.stride[0], self.dilation[0]);
        let ow = window_count(wp, kw, self.stride[1], self.dilation[1]);
        if oh == 0 || ow == 0 {
            return Err(Error::shape(
                op,
                format!(
                    "input {h}x{w} (padded {hp}x{wp}) is smaller than the kernel {kh}x{kw} \
                     at dilation {:?}",
                    self.dilation
                ),
            ));
        }
        let values = x.contiguous()?.to_vec::<f32>()?;
        let image = self.quantize_padded(&values, [n, c, h, w]);
        let (positions, k) = (oh * ow, kh * kw * c);
        let k4 = k.next_multiple_of(4);
        // The input's copy, the u8 image and its unfolded rows, in the memory statistics.
        let _scratch = CountedBytes::cpu(4 * values.len() + image.len() + n * positions * k4);
        let mut rows = vec![0u8; n * positions * k4];
        rows.par_chunks_mut(k4)
            .enumerate()
            .with_min_len(MIN_TASK / k4 + 1)
            .for_each(|(r, row)| {
                let (b, p) = (r / positions, r % positions);
                let (y0, x0) = ((p / ow) * self.stride[0], (p % ow) * self.stride[1]);
                let img = &image[b * hp * wp * c..(b + 1) * hp * wp * c];
                for i in 0..kh {
                    let y = y0 + i * self.dilation[0];
                    if self.dilation[1] == 1 {
                        // The kernel row's kw pixels are adjacent: one copy of kw * C bytes.
                        let src = (y * wp + x0) * c;
                        row[i * kw * c..(i + 1) * kw * c].copy_from_slice(&img[src..src + kw * c]);
                    } else {
                        for j in 0..kw {
                            let src = (y * wp + x0 + j * self.dilation[1]) * c;
                            let dst = (i * kw + j) * c;
                            row[dst..dst + c].copy_from_slice(&img[src..src + c]);
                        }
                    }
                }
            });
        let epilogue = Epilogue::Requantize {
            out: self.output,
            relu: self.relu,
        };
        let out = self
            .weight
            .run(&rows, n * positions, self.input, epilogue, self.kernel);
        // Channels-last rows back to NCHW, one image at a time.
        let co = self.weight.n();
        let mut nchw = vec![0.0f32; out.len()];
        nchw.par_chunks_mut((co * positions).max(1))
            .zip(out.par_chunks((co * positions).max(1)))
            .for_each(|(dst, src)| {
                for (p, pixel) in src.chunks_exact(co).enumerate() {
                    for (o, &v) in pixel.iter().enumerate() {
                        dst[o * positions + p] = v;
                    }
                }
            });
        Tensor::from_vec(nchw, &[n, co, oh, ow])
    }

    /// None: the int8 weights are not trained.
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        Vec::new()
    }
}

impl QuantConv2d {
    /// `values` (NCHW, `dims`) quantized with the input's parameters into a channels-last
    /// image padded with the zero point: `(N, H + pt + pb, W + pl + pr, C)`.
    fn quantize_padded(&self, values: &[f32], dims: [usize; 4]) -> Vec<u8> {
        let [n, c, h, w] = dims;
        let [pt, pb, pl, pr] = self.padding;
        let (hp, wp) = (h + pt + pb, w + pl + pr);
        let act = self.input;
        let inv = 1.0 / act.scale;
        let mut image = vec![act.zero_point as u8; n * hp * wp * c];
        image
            .par_chunks_mut((hp * wp * c).max(1))
            .zip(values.par_chunks((c * h * w).max(1)))
            .for_each(|(dst, src)| {
                for (ci, plane) in src.chunks_exact(h * w).enumerate() {
                    for (y, line) in plane.chunks_exact(w).enumerate() {
                        let base = ((y + pt) * wp + pl) * c + ci;
                        for (xi, &v) in line.iter().enumerate() {
                            dst[base + xi * c] = act.quantize(v, inv, 0.0);
                        }
                    }
                }
            });
        image
    }
}
