//! `torch.nn.functional.pixel_shuffle` / `pixel_unshuffle`: channels traded for spatial
//! resolution by a reshape, a permute and a reshape (one copy), so any dtype works and the
//! backward is the inverse permutation.

use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// The leading (batch) dims and `(C, H, W)` of an input with at least 3 dims.
fn split_chw(op: &'static str, x: &Tensor) -> Result<(Vec<usize>, [usize; 3])> {
    if x.ndim() < 3 {
        return Err(Error::shape(
            op,
            format!(
                "expects input to have at least 3 dimensions, but got input with {} \
                 dimension(s) (shape {:?})",
                x.ndim(),
                x.shape()
            ),
        ));
    }
    let n = x.ndim();
    let lead = x.shape()[..n - 3].to_vec();
    Ok((lead, [x.shape()[n - 3], x.shape()[n - 2], x.shape()[n - 1]]))
}

fn check_factor(op: &'static str, what: &str, r: usize) -> Result<()> {
    if r == 0 {
        return Err(Error::invalid(
            op,
            format!("expects a positive {what}, but got {r}"),
        ));
    }
    Ok(())
}

/// The shape `lead ++ tail`.
fn dims(lead: &[usize], tail: &[usize]) -> Vec<usize> {
    [lead, tail].concat()
}

/// The permutation `lead ++ order` (order indexes the dims after the leading ones).
fn perm(lead: usize, order: &[usize]) -> Vec<usize> {
    (0..lead).chain(order.iter().map(|&d| lead + d)).collect()
}

impl Tensor {
    /// `(*, C*r*r, H, W)` -> `(*, C, H*r, W*r)` (`torch.nn.functional.pixel_shuffle`): output
    /// pixel `(c, h*r + i, w*r + j)` is input channel `c*r*r + i*r + j` at `(h, w)`.
    pub fn pixel_shuffle(&self, upscale_factor: usize) -> Result<Tensor> {
        const OP: &str = "pixel_shuffle";
        let r = upscale_factor;
        check_factor(OP, "upscale_factor", r)?;
        let (lead, [c, h, w]) = split_chw(OP, self)?;
        if !c.is_multiple_of(r * r) {
            return Err(Error::shape(
                OP,
                format!(
                    "expects its input's 'channel' dimension to be divisible by the square of \
                     upscale_factor, but input.size(-3)={c} is not divisible by {} (shape {:?})",
                    r * r,
                    self.shape()
                ),
            ));
        }
        let oc = c / (r * r);
        // (*, oc, r, r, h, w) -> (*, oc, h, r, w, r)
        self.reshape(&dims(&lead, &[oc, r, r, h, w]))?
            .permute(&perm(lead.len(), &[0, 3, 1, 4, 2]))?
            .reshape(&dims(&lead, &[oc, h * r, w * r]))
    }

    /// `(*, C, H*r, W*r)` -> `(*, C*r*r, H, W)` (`torch.nn.functional.pixel_unshuffle`), the
    /// inverse of [`Tensor::pixel_shuffle`].
    pub fn pixel_unshuffle(&self, downscale_factor: usize) -> Result<Tensor> {
        const OP: &str = "pixel_unshuffle";
        let r = downscale_factor;
        check_factor(OP, "downscale_factor", r)?;
        let (lead, [c, h, w]) = split_chw(OP, self)?;
        for (name, size, d) in [("height", h, -2), ("width", w, -1)] {
            if !size.is_multiple_of(r) {
                return Err(Error::shape(
                    OP,
                    format!(
                        "expects {name} to be divisible by downscale_factor, but \
                         input.size({d})={size} is not divisible by {r} (shape {:?})",
                        self.shape()
                    ),
                ));
            }
        }
        let (oh, ow) = (h / r, w / r);
        // (*, c, oh, r, ow, r) -> (*, c, r, r, oh, ow)
        self.reshape(&dims(&lead, &[c, oh, r, ow, r]))?
            .permute(&perm(lead.len(), &[0, 2, 4, 1, 3]))?
            .reshape(&dims(&lead, &[c * r * r, oh, ow]))
    }
}
