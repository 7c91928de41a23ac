//! Pooling (`torch.nn.functional.max_pool1d/2d`, `avg_pool1d/2d`, `adaptive_avg_pool2d`,
//! `adaptive_max_pool2d`); the 1-D pools are the 2-D ones on a height-1 plane. Built on the
//! same differentiable im2col as the convolutions: windows are gathered with strided slices,
//! then reduced with `max_dim` (gradient to the argmax) or a mean. Max pooling takes the
//! fused kernel of its device where there is one (`Storage::max_pool2d_forward`: the CPU's,
//! f32/f64, backend/cpu/max_pool.rs), checked against this composite in tests/conv.rs.

use crate::autograd::needs_grad;
use crate::backend::{PoolPlane, Storage};
use crate::error::{Error, Result};
use crate::ops::conv::patches;
use crate::ops::{with_batch_dim, with_spans, PadMode, IMAGE};
use crate::tensor::Tensor;

/// Output length of a pooling window (PyTorch's `pooling_output_shape`), with ceil mode: the
/// last window must start inside the input or its left padding.
fn pool_out(len: usize, k: usize, s: usize, p: usize, d: usize, ceil: bool) -> isize {
    let num = len as isize + 2 * p as isize - (d * (k - 1)) as isize - 1;
    let s = s as isize;
    let mut out = if ceil {
        (num + s - 1).div_euclid(s) + 1
    } else {
        num.div_euclid(s) + 1
    };
    if ceil && (out - 1) * s >= len as isize + p as isize {
        out -= 1;
    }
    out
}

struct Window {
    kernel: [usize; 2],
    stride: [usize; 2],
    dilation: [usize; 2],
    out: [usize; 2],
    /// (top, bottom, left, right) padding, including ceil-mode's extra tail.
    pads: [usize; 4],
}

/// Check pooling arguments on a 4-d input and compute the window geometry.
fn window(
    op: &'static str,
    x: &Tensor,
    kernel: [usize; 2],
    stride: Option<[usize; 2]>,
    padding: [usize; 2],
    dilation: [usize; 2],
    ceil_mode: bool,
) -> Result<Window> {
    let stride = stride.unwrap_or(kernel);
    for (name, v) in [
        ("kernel_size", kernel),
        ("stride", stride),
        ("dilation", dilation),
    ] {
        if v[0] == 0 || v[1] == 0 {
            return Err(Error::invalid(
                op,
                format!("{name} must be positive, got {v:?}"),
            ));
        }
    }
    if padding[0] > kernel[0] / 2 || padding[1] > kernel[1] / 2 {
        return Err(Error::invalid(
            op,
            format!("padding {padding:?} should be at most half of kernel_size {kernel:?}"),
        ));
    }
    let mut out = [0usize; 2];
    let mut tail = [0usize; 2];
    for a in 0..2 {
        let len = x.shape()[2 + a];
        let o = pool_out(
            len,
            kernel[a],
            stride[a],
            padding[a],
            dilation[a],
            ceil_mode,
        );
        if o <= 0 {
            return Err(Error::shape(
                op,
                format!(
                    "kernel_size {kernel:?} (dilation {dilation:?}) is larger than the padded \
                     input; output size would be {o} (input {:?})",
                    x.shape()
                ),
            ));
        }
        out[a] = o as usize;
        let need = (out[a] - 1) * stride[a] + dilation[a] * (kernel[a] - 1) + 1;
        tail[a] = need.saturating_sub(len + 2 * padding[a]);
    }
    Ok(Window {
        kernel,
        stride,
        dilation,
        out,
        pads: [
            padding[0],
            padding[0] + tail[0],
            padding[1],
            padding[1] + tail[1],
        ],
    })
}

/// The windows of `x` as `(N, C, kh*kw, OH, OW)`, padding filled with `fill`.
fn windows(x: &Tensor, w: &Window, fill: f64) -> Result<Tensor> {
    let [pt, pb, pl, pr] = w.pads;
    let xp = if pt + pb + pl + pr > 0 {
        x.pad(
            &[pl as isize, pr as isize, pt as isize, pb as isize],
            PadMode::Constant(fill),
        )?
    } else {
        x.clone()
    };
    patches(&xp, w.kernel, w.stride, w.dilation, w.out)
}

/// Max pooling of a 4-d tensor in one pass through its device's fused kernel, or `None`
/// where it has none; the backward adds the gradient at each window's argmax, which the
/// forward keeps.
fn max_pool2d_fused(x: &Tensor, w: &Window) -> Result<Option<Tensor>> {
    const OP: &str = "max_pool2d";
    let [n, c, h, wd] = [x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3]];
    let plane = PoolPlane {
        input: [h, wd],
        output: w.out,
        kernel: w.kernel,
        stride: w.stride,
        // Ceil mode's extra tail needs no entry: a window's positions past the input are
        // skipped like the padding's.
        padding: [w.pads[0], w.pads[2]],
        dilation: w.dilation,
    };
    let xc = x.detach().contiguous()?;
    let fwd = with_spans(&[Some(&xc)], |s| {
        Storage::max_pool2d_forward(s[0].expect("given"), n * c, &plane)
    })?;
    let Some((y, argmax)) = fwd else {
        return Ok(None);
    };
    let out = Tensor::from_contiguous(y, &[n, c, w.out[0], w.out[1]]);
    // A tensor, so that its buffer goes back to the caching allocator when the graph drops.
    let argmax = Tensor::from_contiguous(argmax, &[argmax_len(&plane, n * c)]);
    if !needs_grad(&[x]) {
        return Ok(Some(out));
    }
    let in_shape = x.shape().to_vec();
    Ok(Some(out.record(OP, &[x], move |g, _| {
        let g = g.contiguous()?;
        let gx = with_spans(&[Some(&g), Some(&argmax)], |s| {
            Storage::max_pool2d_backward(s[0].expect("given"), s[1].expect("given"), n * c, &plane)
        })?;
        let gx = Tensor::from_contiguous(gx, &in_shape).first_order_only(OP, &[&g]);
        Ok(vec![Some(gx)])
    })))
}

/// Number of outputs (and argmax entries) of `planes` planes.
fn argmax_len(plane: &PoolPlane, planes: usize) -> usize {
    planes * plane.output[0] * plane.output[1]
}

/// Apply a 4-d pooling function to a `(N, C, H, W)` or unbatched `(C, H, W)` float input.
fn pool_batched(
    op: &'static str,
    x: &Tensor,
    f: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    if !x.dtype().is_float() {
        return Err(Error::dtype(
            op,
            format!("expected a floating-point input, got {}", x.dtype()),
        ));
    }
    with_batch_dim(op, x, IMAGE, f)
}

impl Tensor {
    /// 2-D max pooling (`torch.nn.functional.max_pool2d`); `stride` defaults to the kernel
    /// size. Padding counts as `-inf`. The gradient goes to the first maximum of each window.
    pub fn max_pool2d(
        &self,
        kernel: [usize; 2],
        stride: Option<[usize; 2]>,
        padding: [usize; 2],
        dilation: [usize; 2],
        ceil_mode: bool,
    ) -> Result<Tensor> {
        max_pool2d_as(
            "max_pool2d",
            self,
            kernel,
            stride,
            padding,
            dilation,
            ceil_mode,
        )
    }

    /// 2-D average pooling (`torch.nn.functional.avg_pool2d`, `ceil_mode=False`); with
    /// `count_include_pad` the zero padding counts in the divisor, otherwise only the input
    /// elements of each window do.
    pub fn avg_pool2d(
        &self,
        kernel: [usize; 2],
        stride: Option<[usize; 2]>,
        padding: [usize; 2],
        count_include_pad: bool,
    ) -> Result<Tensor> {
        avg_pool2d_as(
            "avg_pool2d",
            self,
            kernel,
            stride,
            padding,
            count_include_pad,
        )
    }

    /// 1-D max pooling of `(N, C, L)` or `(C, L)` (`torch.nn.functional.max_pool1d`): the 2-D
    /// pool on a height-1 plane. `stride` defaults to the kernel size; padding counts as
    /// `-inf`; the gradient goes to the first maximum of each window.
    pub fn max_pool1d(
        &self,
        kernel: usize,
        stride: Option<usize>,
        padding: usize,
        dilation: usize,
        ceil_mode: bool,
    ) -> Result<Tensor> {
        const OP: &str = "max_pool1d";
        check_1d(OP, self, kernel, stride, padding, dilation)?;
        on_plane(self, |x| {
            max_pool2d_as(
                OP,
                x,
                [1, kernel],
                stride.map(|s| [1, s]),
                [0, padding],
                [1, dilation],
                ceil_mode,
            )
        })
    }

    /// 1-D average pooling of `(N, C, L)` or `(C, L)` (`torch.nn.functional.avg_pool1d`,
    /// `ceil_mode=False`): the 2-D pool on a height-1 plane; with `count_include_pad` the zero
    /// padding counts in the divisor.
    pub fn avg_pool1d(
        &self,
        kernel: usize,
        stride: Option<usize>,
        padding: usize,
        count_include_pad: bool,
    ) -> Result<Tensor> {
        const OP: &str = "avg_pool1d";
        check_1d(OP, self, kernel, stride, padding, 1)?;
        on_plane(self, |x| {
            avg_pool2d_as(
                OP,
                x,
                [1, kernel],
                stride.map(|s| [1, s]),
                [0, padding],
                count_include_pad,
            )
        })
    }

    /// Adaptive 2-D max pooling (`torch.nn.functional.adaptive_max_pool2d`): output cell `i`
    /// is the maximum of input rows `floor(i*H/oh) .. ceil((i+1)*H/oh)` (and likewise for
    /// columns). The gradient goes to the first maximum of each cell in row-major order, as
    /// in PyTorch.
    pub fn adaptive_max_pool2d(&self, output_size: [usize; 2]) -> Result<Tensor> {
        const OP: &str = "adaptive_max_pool2d";
        pool_batched(OP, self, |x| {
            check_adaptive(OP, x, output_size)?;
            let [h, w] = [x.shape()[2], x.shape()[3]];
            let [oh, ow] = output_size;
            if h.is_multiple_of(oh) && w.is_multiple_of(ow) {
                // Equal windows that tile the plane: an ordinary max pool (the fused kernel).
                let k = [h / oh, w / ow];
                return max_pool2d_as(OP, x, k, Some(k), [0, 0], [1, 1], false);
            }
            // Columns first, then rows: the row stage's first maximum, then that row's first
            // maximum, is the cell's first maximum in row-major order.
            let t = adaptive_max_dim(x, 3, w, ow)?;
            adaptive_max_dim(&t, 2, h, oh)
        })
    }

    /// Adaptive 2-D average pooling (`torch.nn.functional.adaptive_avg_pool2d`): output cell
    /// `i` averages input rows `floor(i*H/oh) .. ceil((i+1)*H/oh)` (and likewise for columns).
    pub fn adaptive_avg_pool2d(&self, output_size: [usize; 2]) -> Result<Tensor> {
        const OP: &str = "adaptive_avg_pool2d";
        pool_batched(OP, self, |x| {
            check_adaptive(OP, x, output_size)?;
            if output_size == [1, 1] {
                // Global pooling (the usual head of a CNN): one reduction over both dims.
                return x.mean(&[2, 3], true);
            }
            let mut t = x.clone();
            for (a, &o) in output_size.iter().enumerate() {
                t = adaptive_mean_dim(&t, 2 + a, x.shape()[2 + a], o)?;
            }
            Ok(t)
        })
    }
}

/// Adaptive averaging along one dim: `o` means over PyTorch's start/end ranges.
fn adaptive_mean_dim(t: &Tensor, dim: usize, len: usize, o: usize) -> Result<Tensor> {
    adaptive_reduce_dim(t, dim, len, o, |w, d| w.mean(&[d], true))
}

/// Adaptive max along one dim: `o` maxima over PyTorch's start/end ranges.
fn adaptive_max_dim(t: &Tensor, dim: usize, len: usize, o: usize) -> Result<Tensor> {
    adaptive_reduce_dim(t, dim, len, o, |w, d| Ok(w.max_dim(d, true)?.0))
}

/// `reduce` (keeping the dim) over each of the `o` windows of `dim` (length `len`) that
/// adaptive pooling uses: window `i` is `floor(i*len/o) .. ceil((i+1)*len/o)`.
fn adaptive_reduce_dim(
    t: &Tensor,
    dim: usize,
    len: usize,
    o: usize,
    reduce: impl Fn(&Tensor, isize) -> Result<Tensor>,
) -> Result<Tensor> {
    let d = dim as isize;
    if len == o {
        return Ok(t.clone());
    }
    let mut parts = Vec::with_capacity(o);
    for i in 0..o {
        let start = i * len / o;
        let end = ((i + 1) * len).div_ceil(o);
        parts.push(reduce(&t.narrow(d, start as isize, end - start)?, d)?);
    }
    let refs: Vec<&Tensor> = parts.iter().collect();
    Tensor::cat(&refs, d)
}

/// Output size and input plane of an adaptive pool must both be non-empty.
fn check_adaptive(op: &'static str, x: &Tensor, output_size: [usize; 2]) -> Result<()> {
    for a in 0..2 {
        let (len, o) = (x.shape()[2 + a], output_size[a]);
        if o == 0 || len == 0 {
            return Err(Error::invalid(
                op,
                format!(
                    "output_size {output_size:?} and input spatial size {:?} must be positive",
                    &x.shape()[2..]
                ),
            ));
        }
    }
    Ok(())
}

/// 2-D max pooling reported as `op` (the 1-D and adaptive pools run it too).
fn max_pool2d_as(
    op: &'static str,
    x: &Tensor,
    kernel: [usize; 2],
    stride: Option<[usize; 2]>,
    padding: [usize; 2],
    dilation: [usize; 2],
    ceil_mode: bool,
) -> Result<Tensor> {
    pool_batched(op, x, |x| {
        let w = window(op, x, kernel, stride, padding, dilation, ceil_mode)?;
        if let Some(y) = max_pool2d_fused(x, &w)? {
            return Ok(y);
        }
        // Devices without the kernel: the windows as a tensor, reduced by max_dim.
        Ok(windows(x, &w, f64::NEG_INFINITY)?.max_dim(2, false)?.0)
    })
}

/// 2-D average pooling reported as `op` (the 1-D pool runs it too).
fn avg_pool2d_as(
    op: &'static str,
    x: &Tensor,
    kernel: [usize; 2],
    stride: Option<[usize; 2]>,
    padding: [usize; 2],
    count_include_pad: bool,
) -> Result<Tensor> {
    pool_batched(op, x, |x| {
        let w = window(op, x, kernel, stride, padding, [1, 1], false)?;
        let sums = windows(x, &w, 0.0)?.sum(&[2], false)?;
        if count_include_pad {
            return sums.div_scalar((kernel[0] * kernel[1]) as f64);
        }
        // Count the real elements per window by pooling a ones plane the same way.
        let ones = Tensor::ones(&[1, 1, x.shape()[2], x.shape()[3]], x.dtype(), x.device())?;
        let counts = windows(&ones, &w, 0.0)?.sum(&[2], false)?;
        sums.div(&counts)
    })
}

/// The 1-D pools' arguments, checked with their own values in the messages; the input must
/// be `(C, L)` or `(N, C, L)`.
fn check_1d(
    op: &'static str,
    x: &Tensor,
    kernel: usize,
    stride: Option<usize>,
    padding: usize,
    dilation: usize,
) -> Result<()> {
    if !matches!(x.ndim(), 2 | 3) {
        return Err(Error::shape(
            op,
            format!(
                "expected a 2-d (C, L) or 3-d (N, C, L) input, got shape {:?}",
                x.shape()
            ),
        ));
    }
    for (name, v) in [
        ("kernel_size", kernel),
        ("stride", stride.unwrap_or(kernel)),
        ("dilation", dilation),
    ] {
        if v == 0 {
            return Err(Error::invalid(
                op,
                format!("{name} must be positive, got {v}"),
            ));
        }
    }
    if padding > kernel / 2 {
        return Err(Error::invalid(
            op,
            format!("padding {padding} should be at most half of kernel_size {kernel}"),
        ));
    }
    Ok(())
}

/// Run a 2-D pool on `x` `(.., C, L)` seen as `(.., C, 1, L)`, and drop the height again.
fn on_plane(x: &Tensor, f: impl FnOnce(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
    f(&x.unsqueeze(-2)?)?.squeeze_dim(-2)
}
