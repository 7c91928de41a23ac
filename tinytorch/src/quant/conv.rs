//! Statically quantized Conv2d (`torch.ao.nn.quantized.Conv2d`, and `ConvReLU2d` with `relu`):
//! the input quantized with calibrated parameters into a zero-padded channels-last u8 image
//! (padding is the zero point, the integer for 0.0), unfolded into rows of `kh * kw * C` bytes
//! (one row per output position, each kernel row's `kw * C` bytes one copy), multiplied by the
//! int8 weights in the same `(i, j, c)` order, and requantized to the output's calibrated
//! parameters. Takes and returns f32 NCHW tensors, like `QuantLinear`.

use super::activation::Affine;
use super::gemm::{gemm_u8i8_serial, Kernel};
use super::linear::{check_f32_cpu, with_values};
use super::weight::{bias_values, quantize_per_channel, Epilogue, Int8Weight};
use crate::error::{Error, Result};
use crate::nn::{Conv2d, Module};
use crate::ops::{resolve_padding, window_count};
use crate::tensor::memory::CountedBytes;
use crate::tensor::Tensor;
use rayon::prelude::*;
use std::cell::RefCell;

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
        let image = with_values(op, x, |values| {
            Ok(self.quantize_padded(values, [n, c, h, w]))
        })?;
        // The u8 image in the memory statistics (the blocks count their own scratch).
        let _scratch = CountedBytes::cpu(image.len());
        let geometry = Geometry {
            positions: oh * ow,
            ow,
            wp,
            image_bytes: hp * wp * c,
        };
        let co = self.weight.n();
        let epilogue = self.weight.epilogue(
            self.input,
            Epilogue::Requantize {
                out: self.output,
                relu: self.relu,
            },
        );
        let total = n * geometry.positions;
        let k4 = (kh * kw * c).next_multiple_of(4);
        let block = block_rows(k4);
        let mut out = vec![0.0f32; n * co * geometry.positions];
        let shared = SharedOut(out.as_mut_ptr());
        (0..total.div_ceil(block)).into_par_iter().for_each(|b| {
            let shared = &shared; // the whole wrapper, which is Sync
            let first = b * block;
            let rows = (total - first).min(block);
            let _counted = CountedBytes::cpu(rows * (k4 + 4 * co) + 4 * co);
            SCRATCH.with(|scratch| {
                let scratch = &mut *scratch.borrow_mut();
                scratch.rows.resize(rows * k4, 0);
                scratch.sums.resize(rows * co, 0);
                scratch.line.resize(co, 0.0);
                self.unfold(&image, &geometry, first, &mut scratch.rows[..rows * k4]);
                let sums = &mut scratch.sums[..rows * co];
                gemm_u8i8_serial(
                    &scratch.rows,
                    k4,
                    rows,
                    self.weight.packed(),
                    sums,
                    self.kernel,
                );
                for (i, acc_row) in sums.chunks_exact(co).enumerate() {
                    epilogue.apply(acc_row, &mut scratch.line);
                    let (img, p) = (
                        (first + i) / geometry.positions,
                        (first + i) % geometry.positions,
                    );
                    let base = img * co * geometry.positions + p;
                    for (o, &v) in scratch.line.iter().enumerate() {
                        // SAFETY: output (img, o, p) belongs to row first + i, which only
                        // this block computes; the index is inside `out`.
                        unsafe { *shared.0.add(base + o * geometry.positions) = v };
                    }
                }
            });
        });
        Tensor::from_vec(out, &[n, co, oh, ow])
    }

    /// None: the int8 weights are not trained.
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        Vec::new()
    }
}

/// Where output positions come from in the padded image.
struct Geometry {
    /// Output positions per image (`OH * OW`).
    positions: usize,
    /// Output width.
    ow: usize,
    /// Padded input width.
    wp: usize,
    /// Bytes of one padded channels-last image.
    image_bytes: usize,
}

/// Output positions a block computes: about 128 KiB of unfolded rows (they stay in the core's
/// cache from unfolding to the product), a multiple of the kernels' 6-row blocks.
fn block_rows(k4: usize) -> usize {
    ((1 << 17) / k4.max(1)).clamp(6, 384) / 6 * 6
}

/// A thread's reusable buffers for the blocks it computes.
#[derive(Default)]
struct Scratch {
    rows: Vec<u8>,
    sums: Vec<i32>,
    line: Vec<f32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// The output's base pointer, shared by the blocks (each writes its own positions).
struct SharedOut(*mut f32);
// SAFETY: the blocks write disjoint elements (see `forward`), and the output outlives them.
unsafe impl Sync for SharedOut {}

impl QuantConv2d {
    /// Unfold output positions `first..` (one row of `kh * kw * C` bytes each, in `(i, j, c)`
    /// order, padded to `k4`) from the padded channels-last `image`, into `rows`.
    fn unfold(&self, image: &[u8], g: &Geometry, first: usize, rows: &mut [u8]) {
        let [kh, kw] = self.kernel_size;
        let c = self.in_channels;
        let k4 = (kh * kw * c).next_multiple_of(4);
        for (i, row) in rows.chunks_exact_mut(k4).enumerate() {
            let (b, p) = ((first + i) / g.positions, (first + i) % g.positions);
            let (y0, x0) = ((p / g.ow) * self.stride[0], (p % g.ow) * self.stride[1]);
            let img = &image[b * g.image_bytes..(b + 1) * g.image_bytes];
            for ki in 0..kh {
                let y = y0 + ki * self.dilation[0];
                if self.dilation[1] == 1 {
                    // The kernel row's kw pixels are adjacent: one copy of kw * C bytes.
                    let src = (y * g.wp + x0) * c;
                    row[ki * kw * c..(ki + 1) * kw * c].copy_from_slice(&img[src..src + kw * c]);
                } else {
                    for j in 0..kw {
                        let src = (y * g.wp + x0 + j * self.dilation[1]) * c;
                        let dst = (ki * kw + j) * c;
                        row[dst..dst + c].copy_from_slice(&img[src..src + c]);
                    }
                }
            }
        }
    }

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
