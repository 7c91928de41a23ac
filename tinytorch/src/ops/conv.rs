//! Convolutions (`torch.nn.functional.conv1d/conv2d/conv_transpose2d`) as im2col + gemm.
//!
//! `conv2d` first asks the fused kernels of its device (`Storage::conv2d_forward`). On the
//! CPU, f32/f64 run the chunk-parallel kernels of `backend/cpu/conv/gemm.rs` (one thread per
//! chunk of images, forward and both gradients), or for f32 3x3 and 5x5 stride-1 kernels
//! with enough channels the Winograd kernels of `backend/cpu/conv/winograd.rs` (switched off
//! with [`set_winograd_convolution`]), or for other f32 convolutions on AVX-512 CPUs the
//! direct kernels of `backend/cpu/conv/direct.rs` (switched off with
//! [`set_direct_convolution`]); `backend/cpu/conv/mod.rs` picks. Other dtypes and devices
//! take the composition described next.
//! `conv2d` splits the batch into chunks whose column matrix fits in a few megabytes; for each
//! chunk it gathers the input windows into a `(Ci*kh*kw, n*OH*OW)` column matrix with the
//! `im2col` backend primitive and multiplies it by the weight with one batched gemm over the
//! groups. Its hand-written backward node runs chunk by chunk too:
//! `grad_input = col2im(W^T @ grad_out)`, `grad_weight = sum of (cols @ grad_out^T)^T` (the
//! columns rebuilt from the saved input), `grad_bias = sum(grad_out)`. `conv1d` is a `conv2d`
//! of height 1; `conv_transpose2d` is a `conv2d` of the zero-stuffed, padded input with the
//! flipped kernel, built from differentiable views. Pooling still uses the view-based
//! [`patches`].

use crate::amp::to_autocast;
use crate::autograd::needs_grad;
pub use crate::backend::{set_direct_convolution, set_winograd_convolution};
use crate::backend::{Conv2dSpec, ConvGeometry, Storage};
use crate::error::{Error, Result};
use crate::ops::{same_device, with_spans, PadMode};
use crate::tensor::Tensor;

/// The `padding` argument of a convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConvPadding {
    /// Explicit zero padding `(ph, pw)` on both sides of each spatial dim.
    Explicit(usize, usize),
    /// `padding="same"`: the output has the input's size (stride must be 1); with an even
    /// kernel the extra element goes on the right/bottom, as in PyTorch.
    Same,
    /// `padding="valid"`: no padding.
    Valid,
}

/// Output length of a sliding window over `padded` elements (PyTorch's formula, floor mode).
pub(crate) fn window_count(padded: usize, k: usize, stride: usize, dilation: usize) -> usize {
    let span = dilation * (k - 1) + 1;
    if padded < span {
        0
    } else {
        (padded - span) / stride + 1
    }
}

/// im2col on an already padded `(N, C, Hp, Wp)` tensor: `(N, C, kh*kw, OH, OW)`, where entry
/// `[n, c, i*kw + j, oh, ow]` is `x[n, c, oh*sh + i*dh, ow*sw + j*dw]`.
pub(crate) fn patches(
    x: &Tensor,
    kernel: [usize; 2],
    stride: [usize; 2],
    dilation: [usize; 2],
    out: [usize; 2],
) -> Result<Tensor> {
    let mut taps = Vec::with_capacity(kernel[0] * kernel[1]);
    for i in 0..kernel[0] {
        let h0 = i * dilation[0];
        let rows = x.slice(
            2,
            Some(h0 as isize),
            Some((h0 + (out[0] - 1) * stride[0] + 1) as isize),
            stride[0],
        )?;
        for j in 0..kernel[1] {
            let w0 = j * dilation[1];
            taps.push(rows.slice(
                3,
                Some(w0 as isize),
                Some((w0 + (out[1] - 1) * stride[1] + 1) as isize),
                stride[1],
            )?);
        }
    }
    let refs: Vec<&Tensor> = taps.iter().collect();
    Tensor::stack(&refs, 2)
}

fn check_positive(op: &'static str, name: &str, v: [usize; 2]) -> Result<()> {
    if v[0] == 0 || v[1] == 0 {
        return Err(Error::invalid(
            op,
            format!("{name} must be positive, got {v:?}"),
        ));
    }
    Ok(())
}

fn check_float_pair(op: &'static str, x: &Tensor, w: &Tensor) -> Result<()> {
    if !x.dtype().is_float() {
        return Err(Error::dtype(
            op,
            format!("expected a floating-point input, got {}", x.dtype()),
        ));
    }
    if x.dtype() != w.dtype() {
        return Err(Error::dtype(
            op,
            format!(
                "input dtype {:?} and weight dtype {:?} differ",
                x.dtype(),
                w.dtype()
            ),
        ));
    }
    Ok(())
}

/// Add `bias` (shape `(C,)`) over dim 1 of an `(N, C, H, W)` tensor after checking its shape.
fn add_bias(
    op: &'static str,
    out: Tensor,
    bias: Option<&Tensor>,
    channels: usize,
) -> Result<Tensor> {
    let Some(b) = bias else { return Ok(out) };
    check_bias(op, b, channels, &out)?;
    out.add(&b.reshape(&[1, channels as isize, 1, 1])?)
}

/// `bias` must be `(C,)` with the input's dtype.
fn check_bias(op: &'static str, b: &Tensor, channels: usize, out: &Tensor) -> Result<()> {
    if b.shape() != [channels] {
        return Err(Error::shape(
            op,
            format!(
                "bias must have shape [{channels}] (one per output channel), got {:?}",
                b.shape()
            ),
        ));
    }
    if b.dtype() != out.dtype() {
        return Err(Error::dtype(
            op,
            format!(
                "bias dtype {:?} differs from input dtype {:?}",
                b.dtype(),
                out.dtype()
            ),
        ));
    }
    Ok(())
}

/// Run `f` on a batched view of `x`: an unbatched `(C, H, W)` input gets a batch dim of 1,
/// which is removed again from the result (PyTorch accepts both forms).
fn batched(
    op: &'static str,
    x: &Tensor,
    f: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    match x.ndim() {
        4 => f(x),
        3 => f(&x.unsqueeze(0)?)?.squeeze_dim(0),
        _ => Err(Error::shape(
            op,
            format!(
                "expected a 3-d (C, H, W) or 4-d (N, C, H, W) input, got shape {:?}",
                x.shape()
            ),
        )),
    }
}

impl Tensor {
    /// 2-D convolution (`torch.nn.functional.conv2d`). `self` is `(N, Ci, H, W)` or
    /// `(Ci, H, W)`, `weight` is `(Co, Ci/groups, kh, kw)`, `bias` is `(Co,)`. Output spatial
    /// size: `(H + 2p - d*(k-1) - 1) / s + 1`.
    pub fn conv2d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        stride: [usize; 2],
        padding: ConvPadding,
        dilation: [usize; 2],
        groups: usize,
    ) -> Result<Tensor> {
        const OP: &str = "conv2d";
        if crate::amp::autocast_dtype().is_some() {
            let (x, w) = (to_autocast(self)?, to_autocast(weight)?);
            let b = bias.map(to_autocast).transpose()?;
            return batched(OP, &x, |x| {
                conv2d_4d(OP, x, &w, b.as_ref(), stride, padding, dilation, groups)
            });
        }
        batched(OP, self, |x| {
            conv2d_4d(OP, x, weight, bias, stride, padding, dilation, groups)
        })
    }

    /// 1-D convolution (`torch.nn.functional.conv1d`): `self` is `(N, Ci, L)` or `(Ci, L)`,
    /// `weight` is `(Co, Ci/groups, k)`. Computed as a 2-D convolution with height 1.
    pub fn conv1d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        stride: usize,
        padding: ConvPadding,
        dilation: usize,
        groups: usize,
    ) -> Result<Tensor> {
        const OP: &str = "conv1d";
        if weight.ndim() != 3 {
            return Err(Error::shape(
                OP,
                format!(
                    "expected a 3-d weight (Co, Ci/groups, k), got shape {:?}",
                    weight.shape()
                ),
            ));
        }
        let pad2 = match padding {
            ConvPadding::Explicit(_, p) => ConvPadding::Explicit(0, p),
            other => other,
        };
        let w2 = weight.unsqueeze(2)?;
        let run = |x: &Tensor| -> Result<Tensor> {
            conv2d_4d(
                OP,
                &x.unsqueeze(2)?,
                &w2,
                bias,
                [1, stride],
                pad2,
                [1, dilation],
                groups,
            )?
            .squeeze_dim(2)
        };
        match self.ndim() {
            3 => run(self),
            2 => run(&self.unsqueeze(0)?)?.squeeze_dim(0),
            _ => Err(Error::shape(
                OP,
                format!(
                    "expected a 2-d (C, L) or 3-d (N, C, L) input, got shape {:?}",
                    self.shape()
                ),
            )),
        }
    }

    /// Transposed 2-D convolution (`torch.nn.functional.conv_transpose2d`), the adjoint of
    /// `conv2d`: `self` is `(N, Ci, H, W)` or `(Ci, H, W)`, `weight` is `(Ci, Co/groups, kh, kw)`.
    /// Output size: `(H - 1)*s - 2p + d*(k-1) + output_padding + 1`.
    #[allow(clippy::too_many_arguments)]
    pub fn conv_transpose2d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        stride: [usize; 2],
        padding: [usize; 2],
        output_padding: [usize; 2],
        groups: usize,
        dilation: [usize; 2],
    ) -> Result<Tensor> {
        const OP: &str = "conv_transpose2d";
        batched(OP, self, |x| {
            conv_transpose2d_4d(
                OP,
                x,
                weight,
                bias,
                stride,
                padding,
                output_padding,
                groups,
                dilation,
            )
        })
    }
}

/// Check the shapes of a convolution and return `(N, Ci, Co, kernel)`.
fn check_conv_shapes(
    op: &'static str,
    x: &Tensor,
    w: &Tensor,
    groups: usize,
) -> Result<(usize, usize, usize, [usize; 2])> {
    check_float_pair(op, x, w)?;
    if w.ndim() != 4 {
        return Err(Error::shape(
            op,
            format!(
                "expected a 4-d weight (Co, Ci/groups, kh, kw), got shape {:?}",
                w.shape()
            ),
        ));
    }
    if groups == 0 {
        return Err(Error::invalid(op, "groups must be positive"));
    }
    let (n, ci) = (x.shape()[0], x.shape()[1]);
    let ws = w.shape();
    if !ci.is_multiple_of(groups) || !ws[0].is_multiple_of(groups) {
        return Err(Error::invalid(
            op,
            format!(
                "groups={groups} must divide both the input channels ({ci}) and the output \
                 channels ({}) (input {:?}, weight {:?})",
                ws[0],
                x.shape(),
                ws
            ),
        ));
    }
    if ws[1] * groups != ci {
        return Err(Error::shape(
            op,
            format!(
                "weight {:?} with groups={groups} expects {} input channels, but the input {:?} \
                 has {ci}",
                ws,
                ws[1] * groups,
                x.shape()
            ),
        ));
    }
    if ws[2] == 0 || ws[3] == 0 {
        return Err(Error::shape(op, format!("empty kernel in weight {ws:?}")));
    }
    Ok((n, ci, ws[0], [ws[2], ws[3]]))
}

/// Resolve `padding` into `(top, bottom, left, right)`.
pub(crate) fn resolve_padding(
    op: &'static str,
    padding: ConvPadding,
    kernel: [usize; 2],
    stride: [usize; 2],
    dilation: [usize; 2],
) -> Result<[usize; 4]> {
    Ok(match padding {
        ConvPadding::Explicit(ph, pw) => [ph, ph, pw, pw],
        ConvPadding::Valid => [0; 4],
        ConvPadding::Same => {
            if stride != [1, 1] {
                return Err(Error::invalid(
                    op,
                    format!("padding='same' is not supported for strided convolutions (stride {stride:?})"),
                ));
            }
            let th = dilation[0] * (kernel[0] - 1);
            let tw = dilation[1] * (kernel[1] - 1);
            [th / 2, th - th / 2, tw / 2, tw - tw / 2]
        }
    })
}

#[allow(clippy::too_many_arguments)]
fn conv2d_4d(
    op: &'static str,
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    stride: [usize; 2],
    padding: ConvPadding,
    dilation: [usize; 2],
    groups: usize,
) -> Result<Tensor> {
    check_positive(op, "stride", stride)?;
    check_positive(op, "dilation", dilation)?;
    let (n, ci, co, k) = check_conv_shapes(op, x, w, groups)?;
    same_device(op, &[x, w])?;
    if let Some(b) = bias {
        check_bias(op, b, co, x)?;
    }
    let [pt, pb, pl, pr] = resolve_padding(op, padding, k, stride, dilation)?;
    let (hp, wp) = (x.shape()[2] + pt + pb, x.shape()[3] + pl + pr);
    let span = [dilation[0] * (k[0] - 1) + 1, dilation[1] * (k[1] - 1) + 1];
    if hp < span[0] || wp < span[1] {
        return Err(Error::shape(
            op,
            format!(
                "kernel size {k:?} (dilated {span:?}) is larger than the padded input \
                 ({hp}, {wp}) (input {:?})",
                x.shape()
            ),
        ));
    }
    let geom = ConvGeometry {
        batch: n,
        channels: ci,
        input: [x.shape()[2], x.shape()[3]],
        kernel: k,
        stride,
        dilation,
        padding: [pt, pl],
        output: [
            window_count(hp, k[0], stride[0], dilation[0]),
            window_count(wp, k[1], stride[1], dilation[1]),
        ],
    };
    let spec = Conv2dSpec {
        geom,
        out_channels: co,
        groups,
    };
    let bias_ok = bias.is_none_or(|b| b.device() == x.device() && b.dtype() == x.dtype());
    if bias_ok && w.dtype() == x.dtype() {
        if let Some(y) = conv2d_fused(op, x, w, bias, &spec)? {
            return Ok(y);
        }
    }
    let chunks = BatchChunks::new(&geom, x.dtype().size_in_bytes());
    let (xd, wd, bd) = (x.detach(), w.detach(), bias.map(|b| b.detach()));
    let mut outs = Vec::new();
    for (start, len) in chunks.iter() {
        let (xc, gc) = (xd.narrow(0, start as isize, len)?, geom.with_batch(len));
        let cols = im2col(&xc, &gc)?;
        outs.push(conv_forward(
            &cols,
            &wd,
            bd.as_ref(),
            &GemmShapes::new(&gc, co, groups),
        )?);
    }
    let out = cat_chunks(outs)?;
    let mut inputs = vec![x, w];
    inputs.extend(bias);
    if !needs_grad(&inputs) {
        return Ok(out);
    }
    // grad_input needs the weight only, grad_weight the input only: its columns are rebuilt
    // chunk by chunk rather than kept, so the backward holds no (C*kh*kw, N*L) matrix.
    let saved_w = x.requires_grad().then(|| w.save(op));
    let saved_x = w.requires_grad().then(|| x.save(op));
    let w_shape = w.shape().to_vec();
    let has_bias = bias.is_some();
    Ok(out.record(op, &inputs, move |g, need| {
        let w = match (&saved_w, need[0]) {
            (Some(w), true) => Some(w.get()?),
            _ => None,
        };
        let x = match (&saved_x, need[1]) {
            (Some(x), true) => Some(x.get()?),
            _ => None,
        };
        let spec = Conv2dSpec {
            geom,
            out_channels: co,
            groups,
        };
        let (gx, gw) = im2col_grads(g, w.as_ref(), x.as_ref(), &spec, chunks, &w_shape)?;
        with_bias_grad(vec![gx, gw], g, has_bias, need)
    }))
}

/// The gradients of a convolution from im2col, gemm and col2im, chunk by chunk: of the input
/// when the weight `w` is given, of the weight when the input `x` is given. Tensor ops all
/// (im2col and col2im record each other as backward), so under create_graph the gradients
/// are differentiable again. `w_shape` is the weight's shape.
fn im2col_grads(
    g: &Tensor,
    w: Option<&Tensor>,
    x: Option<&Tensor>,
    spec: &Conv2dSpec,
    chunks: BatchChunks,
    w_shape: &[usize],
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let (geom, co, groups) = (spec.geom, spec.out_channels, spec.groups);
    let wt = w
        .map(|w| {
            let shapes = GemmShapes::new(&geom, co, groups);
            w.reshape(&shapes.weight_matrix())?.transpose(1, 2)
        })
        .transpose()?;
    let (mut gx_chunks, mut gw) = (Vec::new(), None::<Tensor>);
    for (start, len) in chunks.iter() {
        let gc = geom.with_batch(len);
        let shapes = GemmShapes::new(&gc, co, groups);
        let gm = shapes.grad_matrix(&g.narrow(0, start as isize, len)?)?;
        if let Some(wt) = &wt {
            let gcols = wt.matmul(&gm)?.reshape(&[gc.rows() as isize, -1])?;
            gx_chunks.push(col2im(&gcols, &gc)?);
        }
        if let Some(x) = x {
            // grad_weight^T = cols @ grad_out^T, (G, Kg, Co/G). Both operands have the
            // contracted N*L dim contiguous; gemm packs them far better for this product
            // than for grad_out @ cols^T (measured 3-8x on resnet20's layers).
            let cols = im2col(&x.narrow(0, start as isize, len)?, &gc)?;
            let part = cols
                .reshape(&shapes.cols_matrix())?
                .matmul(&gm.transpose(1, 2)?)?;
            gw = Some(match gw {
                Some(acc) => acc.add(&part)?,
                None => part,
            });
        }
    }
    let gx = wt.map(|_| cat_chunks(gx_chunks)).transpose()?;
    let gw = gw
        .map(|t| t.transpose(1, 2)?.reshape(&to_isize(w_shape)))
        .transpose()?;
    Ok((gx, gw))
}

/// `conv2d` (shapes checked, operands of one dtype on one device) through the fused kernels
/// of x's device (`Storage::conv2d_forward`; on the CPU, Winograd, direct or chunked
/// im2col + gemm, picked once so that the backward matches the forward), with its backward
/// node; `None` where the device has none. The im2col + gemm composition of [`conv2d_4d`]
/// serves the others, and is the reference these kernels are tested against.
fn conv2d_fused(
    op: &'static str,
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    spec: &Conv2dSpec,
) -> Result<Option<Tensor>> {
    let (xc, wc) = (x.detach().contiguous()?, w.detach().contiguous()?);
    let b = bias.map(|b| b.detach().contiguous()).transpose()?;
    let fwd = with_spans(&[Some(&xc), Some(&wc), b.as_ref()], |s| {
        Storage::conv2d_forward(s[0].expect("given"), s[1].expect("given"), s[2], spec)
    })?;
    let Some((y, plan)) = fwd else {
        return Ok(None);
    };
    let g = spec.geom;
    let out = Tensor::from_contiguous(y, &[g.batch, spec.out_channels, g.output[0], g.output[1]]);
    let mut inputs = vec![x, w];
    inputs.extend(bias);
    if !needs_grad(&inputs) {
        return Ok(Some(out));
    }
    // grad_input needs the weight only, grad_weight the input only.
    // The operands themselves (not the contiguous copies), so that under create_graph the
    // gradients below hang on their place in the graph.
    let saved_w = x.requires_grad().then(|| w.save(op));
    let saved_x = w.requires_grad().then(|| x.save(op));
    let (x_shape, w_shape) = (x.shape().to_vec(), w.shape().to_vec());
    let has_bias = bias.is_some();
    let chunks = BatchChunks::new(&spec.geom, x.dtype().size_in_bytes());
    let spec = *spec;
    Ok(Some(out.record(op, &inputs, move |g, need| {
        let w = saved_w
            .as_ref()
            .filter(|_| need[0])
            .map(|w| w.get())
            .transpose()?;
        let x = saved_x
            .as_ref()
            .filter(|_| need[1])
            .map(|x| x.get())
            .transpose()?;
        let operands: Vec<&Tensor> = [Some(g), w.as_ref(), x.as_ref()]
            .into_iter()
            .flatten()
            .collect();
        if needs_grad(&operands) {
            // create_graph: the kernels have no backward; the composed gradients have.
            let (gx, gw) = im2col_grads(g, w.as_ref(), x.as_ref(), &spec, chunks, &w_shape)?;
            return with_bias_grad(vec![gx, gw], g, has_bias, need);
        }
        let g = g.contiguous()?;
        let gx = match (&saved_w, need[0]) {
            (Some(w), true) => {
                let w = w.get()?;
                let wc = w.contiguous()?;
                let v = with_spans(&[Some(&g), Some(&wc)], |s| {
                    Storage::conv2d_backward_input(
                        s[0].expect("given"),
                        s[1].expect("given"),
                        &plan,
                    )
                })?;
                Some(Tensor::from_contiguous(v, &x_shape).first_order_only(op, &[&g, &w]))
            }
            _ => None,
        };
        let gw = match (&saved_x, need[1]) {
            (Some(x), true) => {
                let x = x.get()?;
                let xc = x.contiguous()?;
                let v = with_spans(&[Some(&xc), Some(&g)], |s| {
                    Storage::conv2d_backward_weight(
                        s[0].expect("given"),
                        s[1].expect("given"),
                        &plan,
                    )
                })?;
                Some(Tensor::from_contiguous(v, &w_shape).first_order_only(op, &[&g, &x]))
            }
            _ => None,
        };
        with_bias_grad(vec![gx, gw], &g, has_bias, need)
    })))
}

/// A convolution backward's gradients: `[input, weight]`, then the bias's (the sum of `g`
/// over N, H and W) when the convolution has one.
fn with_bias_grad(
    mut grads: Vec<Option<Tensor>>,
    g: &Tensor,
    has_bias: bool,
    need: &[bool],
) -> Result<Vec<Option<Tensor>>> {
    if has_bias {
        grads.push(match need[2] {
            true => Some(g.sum(&[0, 2, 3], false)?),
            false => None,
        });
    }
    Ok(grads)
}

/// The batch split into runs of images whose column matrix fits in about `TARGET_BYTES`: one
/// gemm per chunk on cache-sized operands beats one gemm over a column matrix of hundreds of
/// megabytes (measured: seed-cnn's 48->96 5x5 layer, batch 64, 2 cores, 585 ms of gemm as one
/// batch against 212 ms image by image), and the fresh buffers stay small enough to be reused.
#[derive(Clone, Copy, Debug)]
struct BatchChunks {
    batch: usize,
    per_chunk: usize,
}

impl BatchChunks {
    const TARGET_BYTES: usize = 4 << 20;

    fn new(g: &ConvGeometry, elem_bytes: usize) -> Self {
        let per_image = (g.rows() * g.output[0] * g.output[1] * elem_bytes).max(1);
        BatchChunks {
            batch: g.batch,
            per_chunk: (Self::TARGET_BYTES / per_image).clamp(1, g.batch.max(1)),
        }
    }

    /// `(start, len)` of each chunk; an empty batch is one empty chunk, so shapes still flow.
    fn iter(self) -> impl Iterator<Item = (usize, usize)> {
        let starts = (0..self.batch.max(1)).step_by(self.per_chunk);
        starts.map(move |s| (s, self.per_chunk.min(self.batch - s)))
    }
}

/// The chunks' results as one batch (no copy when there is a single chunk).
fn cat_chunks(mut parts: Vec<Tensor>) -> Result<Tensor> {
    if parts.len() == 1 {
        return Ok(parts.pop().expect("one part"));
    }
    Tensor::cat(&parts.iter().collect::<Vec<_>>(), 0)
}

fn to_isize(v: &[usize]) -> Vec<isize> {
    v.iter().map(|&d| d as isize).collect()
}

/// The matrix shapes of a grouped convolution as one batched gemm over the groups:
/// `W (G, Co/G, Kg) @ cols (G, Kg, N*L) -> (G, Co/G, N*L)`, with `Kg = Ci/G*kh*kw` and
/// `L = OH*OW`.
#[derive(Clone, Copy, Debug)]
struct GemmShapes {
    n: usize,
    groups: usize,
    co: usize,
    kg: usize,
    out: [usize; 2],
}

impl GemmShapes {
    fn new(g: &ConvGeometry, co: usize, groups: usize) -> Self {
        GemmShapes {
            n: g.batch,
            groups,
            co,
            kg: g.rows() / groups,
            out: g.output,
        }
    }

    fn l(&self) -> usize {
        self.out[0] * self.out[1]
    }

    fn weight_matrix(&self) -> [isize; 3] {
        [
            self.groups as isize,
            (self.co / self.groups) as isize,
            self.kg as isize,
        ]
    }

    fn cols_matrix(&self) -> [isize; 3] {
        [
            self.groups as isize,
            self.kg as isize,
            (self.n * self.l()) as isize,
        ]
    }

    /// `grad_out (N, Co, OH, OW)` as the contiguous `(G, Co/G, N*L)` matrix the gemms need.
    fn grad_matrix(&self, g: &Tensor) -> Result<Tensor> {
        let (n, co, l) = (self.n as isize, self.co as isize, self.l() as isize);
        g.reshape(&[n, co, l])?
            .permute(&[1, 0, 2])?
            .contiguous()?
            .reshape(&[self.groups as isize, co / self.groups as isize, n * l])
    }
}

/// The forward gemm on detached operands: `(N, Co, OH, OW)` plus bias, outside the graph.
fn conv_forward(
    cols: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    s: &GemmShapes,
) -> Result<Tensor> {
    let (n, co, l) = (s.n as isize, s.co as isize, s.l() as isize);
    let y = w
        .reshape(&s.weight_matrix())?
        .matmul(&cols.reshape(&s.cols_matrix())?)?
        .reshape(&[co, n, l])?
        .permute(&[1, 0, 2])?;
    // The bias add (or the copy) also makes the (N, Co, L) order contiguous.
    let y = match bias {
        Some(b) => y.add(&b.reshape(&[1, co, 1])?)?,
        None => y.contiguous()?,
    };
    y.reshape(&[n, co, s.out[0] as isize, s.out[1] as isize])
}

/// The `(C*kh*kw, N*OH*OW)` column matrix of `x`. A linear map whose backward is its
/// adjoint [`col2im`] (recorded only when `x` is in the graph: in backward under
/// create_graph; the convolution's forward passes detached operands).
fn im2col(x: &Tensor, geom: &ConvGeometry) -> Result<Tensor> {
    let s = x.storage().im2col(x.layout(), geom)?;
    let out = Tensor::from_contiguous(s, &[geom.rows(), geom.cols()]);
    if !needs_grad(&[x]) {
        return Ok(out);
    }
    let geom = *geom;
    Ok(out.record("im2col", &[x], move |g, _| {
        Ok(vec![Some(col2im(g, &geom)?)])
    }))
}

/// The `(N, C, H, W)` adjoint of [`im2col`] applied to `cols`; its backward is [`im2col`].
fn col2im(cols: &Tensor, geom: &ConvGeometry) -> Result<Tensor> {
    let s = cols.storage().col2im(cols.layout(), geom)?;
    let out = Tensor::from_contiguous(
        s,
        &[geom.batch, geom.channels, geom.input[0], geom.input[1]],
    );
    if !needs_grad(&[cols]) {
        return Ok(out);
    }
    let geom = *geom;
    Ok(out.record("col2im", &[cols], move |g, _| {
        Ok(vec![Some(im2col(g, &geom)?)])
    }))
}

/// Insert `s - 1` zeros between neighbouring elements of `dim` (the "fractional stride" of a
/// transposed convolution), built from `pad` so that it is differentiable.
fn dilate_dim(x: &Tensor, dim: usize, s: usize) -> Result<Tensor> {
    let len = x.shape()[dim];
    if s == 1 || len == 0 {
        return Ok(x.clone());
    }
    let d = dim as isize;
    let spread = x.unsqueeze(d + 1)?;
    let mut pads = vec![0isize; 2 * (spread.ndim() - dim - 1)];
    let last = pads.len() - 1;
    // pads are listed from the last dim; the new unit dim is `dim + 1`.
    let idx = 2 * (spread.ndim() - 1 - (dim + 1)) + 1;
    debug_assert!(idx <= last);
    pads[idx] = s as isize - 1;
    let padded = spread.pad(&pads, PadMode::Constant(0.0))?;
    let merged = padded.flatten(d, d + 1)?;
    merged.narrow(d, 0, (len - 1) * s + 1)
}

/// Pad (or, for negative amounts, crop) `dim` by `before`/`after` elements.
fn pad_or_crop(x: &Tensor, dim: usize, before: isize, after: isize) -> Result<Tensor> {
    let nd = x.ndim();
    let mut pads = vec![0isize; 2 * (nd - dim)];
    let base = 2 * (nd - 1 - dim);
    pads[base] = before;
    pads[base + 1] = after;
    x.pad(&pads, PadMode::Constant(0.0))
}

#[allow(clippy::too_many_arguments)]
fn conv_transpose2d_4d(
    op: &'static str,
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    stride: [usize; 2],
    padding: [usize; 2],
    output_padding: [usize; 2],
    groups: usize,
    dilation: [usize; 2],
) -> Result<Tensor> {
    check_positive(op, "stride", stride)?;
    check_positive(op, "dilation", dilation)?;
    check_float_pair(op, x, w)?;
    if w.ndim() != 4 {
        return Err(Error::shape(
            op,
            format!(
                "expected a 4-d weight (Ci, Co/groups, kh, kw), got shape {:?}",
                w.shape()
            ),
        ));
    }
    if groups == 0 {
        return Err(Error::invalid(op, "groups must be positive"));
    }
    let ws = w.shape().to_vec();
    let ci = x.shape()[1];
    if ws[0] != ci {
        return Err(Error::shape(
            op,
            format!(
                "weight {ws:?} expects {} input channels, but the input {:?} has {ci}",
                ws[0],
                x.shape()
            ),
        ));
    }
    if !ci.is_multiple_of(groups) {
        return Err(Error::invalid(
            op,
            format!(
                "groups={groups} must divide the input channels ({ci}) (input {:?})",
                x.shape()
            ),
        ));
    }
    for a in 0..2 {
        if output_padding[a] >= stride[a] && output_padding[a] >= dilation[a] {
            return Err(Error::invalid(
                op,
                format!(
                    "output_padding {output_padding:?} must be smaller than either stride {stride:?} \
                     or dilation {dilation:?}"
                ),
            ));
        }
    }
    let k = [ws[2], ws[3]];
    let (cig, cog) = (ci / groups, ws[1]);
    let co = cog * groups;
    let out_size = |a: usize| -> isize {
        (x.shape()[2 + a] as isize - 1) * stride[a] as isize - 2 * padding[a] as isize
            + (dilation[a] * (k[a] - 1)) as isize
            + output_padding[a] as isize
            + 1
    };
    let (oh, ow) = (out_size(0), out_size(1));
    if oh <= 0 || ow <= 0 {
        return Err(Error::shape(
            op,
            format!(
                "output size ({oh}, {ow}) is too small (input {:?}, weight {ws:?})",
                x.shape()
            ),
        ));
    }
    // The adjoint of a convolution: zero-stuff the input, pad by d*(k-1) - p, and correlate
    // with the spatially flipped kernel whose in/out channel roles are swapped per group.
    let mut t = dilate_dim(x, 2, stride[0])?;
    t = dilate_dim(&t, 3, stride[1])?;
    for a in 0..2 {
        let full = (dilation[a] * (k[a] - 1)) as isize - padding[a] as isize;
        t = pad_or_crop(&t, 2 + a, full, full + output_padding[a] as isize)?;
    }
    let wt = w
        .reshape(&[
            groups as isize,
            cig as isize,
            cog as isize,
            k[0] as isize,
            k[1] as isize,
        ])?
        .transpose(1, 2)?
        .reshape(&[co as isize, cig as isize, k[0] as isize, k[1] as isize])?
        .flip(&[2, 3])?;
    let out = conv2d_4d(
        op,
        &t,
        &wt,
        None,
        [1, 1],
        ConvPadding::Valid,
        dilation,
        groups,
    )?;
    add_bias(op, out, bias, co)
}
