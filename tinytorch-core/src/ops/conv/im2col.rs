//! The im2col + gemm composition of `conv2d`, for the dtypes and devices without a fused
//! kernel, and the reference those kernels are tested against: the batch in chunks, each
//! chunk's windows gathered into a column matrix and multiplied by the weight in one batched
//! gemm over the groups; the backward chunk by chunk from the same pieces.

use crate::autograd::needs_grad;
use crate::backend::{Conv2dSpec, ConvGeometry};
use crate::error::Result;
use crate::tensor::Tensor;

/// The im2col + gemm `conv2d` (arguments checked by `conv2d_4d`), with its backward node.
pub(super) fn conv2d_im2col(
    op: &'static str,
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    spec: &Conv2dSpec,
) -> Result<Tensor> {
    let (geom, co, groups) = (spec.geom, spec.out_channels, spec.groups);
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
    let spec = *spec;
    Ok(out.record(op, &inputs, move |g, need| {
        let w = match (&saved_w, need[0]) {
            (Some(w), true) => Some(w.get()?),
            _ => None,
        };
        let x = match (&saved_x, need[1]) {
            (Some(x), true) => Some(x.get()?),
            _ => None,
        };
        let (gx, gw) = im2col_grads(g, w.as_ref(), x.as_ref(), &spec, chunks, &w_shape)?;
        with_bias_grad(vec![gx, gw], g, has_bias, need)
    }))
}

/// The gradients of a convolution from im2col, gemm and col2im, chunk by chunk: of the input
/// when the weight `w` is given, of the weight when the input `x` is given. Tensor ops all
/// (im2col and col2im record each other as backward), so under create_graph the gradients
/// are differentiable again. `w_shape` is the weight's shape.
pub(super) fn im2col_grads(
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

/// A convolution backward's gradients: `[input, weight]`, then the bias's (the sum of `g`
/// over N, H and W) when the convolution has one.
pub(super) fn with_bias_grad(
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
pub(super) struct BatchChunks {
    batch: usize,
    per_chunk: usize,
}

impl BatchChunks {
    const TARGET_BYTES: usize = 4 << 20;

    pub(super) fn new(g: &ConvGeometry, elem_bytes: usize) -> Self {
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
