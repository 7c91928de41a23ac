//! `conv2d` through the fused kernels of the input's device (`Storage::conv2d_forward`), with
//! its backward node: the kernels' gradients, or under create_graph the differentiable
//! gradients of the im2col composition.

use super::im2col::{im2col_grads, with_bias_grad, BatchChunks};
use crate::autograd::needs_grad;
use crate::backend::{Conv2dSpec, Storage};
use crate::error::Result;
use crate::ops::with_spans;
use crate::tensor::Tensor;

/// `conv2d` (shapes checked, operands of one dtype on one device) through the fused kernels
/// of x's device (`Storage::conv2d_forward`; on the CPU, Winograd, direct or chunked
/// im2col + gemm, picked once so that the backward matches the forward), with its backward
/// node; `None` where the device has none. The im2col + gemm composition of `conv2d_im2col`
/// serves the others, and is the reference these kernels are tested against.
pub(super) fn conv2d_fused(
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
