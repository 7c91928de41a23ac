//! Reductions over any set of dims (`keepdim` as in PyTorch), arg-reductions, statistics,
//! norms and the inclusive scans, each with its backward rule.
//!
//! Conventions: `dims` is a list of possibly negative dims, empty meaning "all dims"; a 0-d
//! tensor accepts dim 0 and -1. Backward rules first reshape the output gradient to the
//! keepdim shape, then broadcast it back over the reduced dims.

use super::view::inverse_permutation;
use crate::autograd::{needs_grad, no_grad};
use crate::backend::{ArgReduceOp, ReduceOp, ScanOp};
use crate::base::{Dim, Dims};
use crate::error::{Error, Result};
use crate::tensor::layout::{normalize_dim, normalize_dims};
use crate::tensor::{DType, Device, Tensor};

/// The shape of a reduction's output with the reduced dims kept as size 1.
fn keepdim_shape(shape: &[usize], dims: &[usize]) -> Vec<usize> {
    shape
        .iter()
        .enumerate()
        .map(|(i, &d)| if dims.contains(&i) { 1 } else { d })
        .collect()
}

/// Drop the reduced dims from a shape.
fn squeezed_shape(shape: &[usize], dims: &[usize]) -> Vec<usize> {
    shape
        .iter()
        .enumerate()
        .filter(|(i, _)| !dims.contains(i))
        .map(|(_, &d)| d)
        .collect()
}

/// Number of elements each output of a reduction over `dims` folds.
fn reduced_count(shape: &[usize], dims: &[usize]) -> usize {
    dims.iter().map(|&d| shape[d]).product()
}

/// The gradient of a reduction's output (keepdim or not), broadcast back to the input's
/// shape as a contiguous tensor (a stride-0 gradient would alias under in-place updates).
fn expand_grad(g: &Tensor, in_shape: &[usize], dims: &[usize]) -> Result<Tensor> {
    g.reshape(&keepdim_shape(in_shape, dims))?
        .broadcast_to(in_shape)?
        .contiguous()
}

/// `|t|` with derivative `sign(t)` (0 at 0, as PyTorch's `abs`).
fn abs_of(t: &Tensor) -> Result<Tensor> {
    let d = t.detach();
    let sign = d
        .gt_scalar(0.0)?
        .to_dtype(t.dtype())?
        .sub(&d.lt_scalar(0.0)?.to_dtype(t.dtype())?)?;
    t.mul(&sign)
}

impl Tensor {
    /// Run the reduction primitive over normalised `dims` and shape the result; no autograd.
    fn reduce_raw(&self, op: ReduceOp, dims: &[usize], keepdim: bool) -> Result<Tensor> {
        let s = self.storage().reduce(self.layout(), op, dims)?;
        let out = Tensor::from_contiguous(s, &keepdim_shape(self.shape(), dims));
        if keepdim {
            return Ok(out);
        }
        out.reshape(&squeezed_shape(self.shape(), dims))
    }

    /// Sum over `dims` (empty: all dims), keeping them as size 1 if `keepdim`
    /// (`x.sum(dims, keepdim)`). Bool and integer inputs sum to i64.
    pub fn sum<D: Dims + ?Sized>(&self, dims: &D, keepdim: bool) -> Result<Tensor> {
        let dims = &*dims.to_isizes();
        let d = normalize_dims("sum", dims, self.ndim())?;
        let out = self.reduce_raw(ReduceOp::Sum, &d, keepdim)?;
        if !needs_grad(&[self]) {
            return Ok(out);
        }
        let in_shape = self.shape().to_vec();
        Ok(out.record("sum", &[self], move |g, _| {
            Ok(vec![Some(expand_grad(g, &in_shape, &d)?)])
        }))
    }

    /// Sum of all elements as a 0-d tensor (`x.sum()`).
    pub fn sum_all(&self) -> Result<Tensor> {
        self.sum(&[], false)
    }

    /// Mean over `dims` (empty: all dims) (`x.mean(dims, keepdim)`). Floats only, as in
    /// PyTorch; f16/bf16 accumulate in f32. The mean of an empty reduction is NaN.
    pub fn mean<D: Dims + ?Sized>(&self, dims: &D, keepdim: bool) -> Result<Tensor> {
        let dims = &*dims.to_isizes();
        self.require_float("mean")?;
        let d = normalize_dims("mean", dims, self.ndim())?;
        let count = reduced_count(self.shape(), &d) as f64;
        if matches!(self.dtype(), DType::F16 | DType::BF16) {
            let wide = self.to_dtype(DType::F32)?;
            return wide
                .sum(dims, keepdim)?
                .div_scalar(count)?
                .to_dtype(self.dtype());
        }
        self.sum(dims, keepdim)?.div_scalar(count)
    }

    /// Mean of all elements as a 0-d tensor (`x.mean()`).
    pub fn mean_all(&self) -> Result<Tensor> {
        self.mean(&[], false)
    }

    /// Product over `dims` (empty: all dims) (`x.prod(dims, keepdim)`; PyTorch's `prod` takes
    /// one dim, this takes several). Bool and integer inputs give i64. The gradient is right
    /// also when the input holds zeros.
    pub fn prod<D: Dims + ?Sized>(&self, dims: &D, keepdim: bool) -> Result<Tensor> {
        let dims = &*dims.to_isizes();
        let d = normalize_dims("prod", dims, self.ndim())?;
        let out = self.reduce_raw(ReduceOp::Prod, &d, keepdim)?;
        if !needs_grad(&[self]) {
            return Ok(out);
        }
        let (x, y) = (self.save("prod"), out.save("prod"));
        let kshape = keepdim_shape(self.shape(), &d);
        Ok(out.record("prod", &[self], move |g, _| {
            let x = &x.get()?;
            let (gk, yk) = (g.reshape(&kshape)?, y.get()?.reshape(&kshape)?);
            // d prod / d x_i = product of the other elements: y / x_i where x_i != 0; where
            // x_i is the only zero of its slice, the product of the rest; else 0.
            let zero = x.eq_scalar(0.0)?;
            let x_safe = x.masked_fill(&zero, 1.0)?;
            let others = yk.div(&x_safe)?;
            let single_zero = zero.sum(&d, true)?.eq_scalar(1.0)?;
            let rest = x_safe
                .prod(&d, true)?
                .masked_fill(&single_zero.logical_not()?, 0.0)?;
            let d = Tensor::where_cond(&zero, &rest, &others)?;
            Ok(vec![Some(gk.mul(&d)?)])
        }))
    }

    /// Max (`MAX`) or min over `dims`, gradient split evenly among ties (`amax`/`amin`).
    fn extreme(
        &self,
        name: &'static str,
        max: bool,
        dims: &[isize],
        keepdim: bool,
    ) -> Result<Tensor> {
        let d = normalize_dims(name, dims, self.ndim())?;
        let kept_numel: usize = squeezed_shape(self.shape(), &d).iter().product();
        if reduced_count(self.shape(), &d) == 0 && kept_numel > 0 {
            return Err(Error::invalid(
                name,
                format!("cannot reduce over dims {d:?} of shape {:?}: the reduction is empty (it has no identity)", self.shape()),
            ));
        }
        let op = if max { ReduceOp::Max } else { ReduceOp::Min };
        let out = self.reduce_raw(op, &d, keepdim)?;
        if !needs_grad(&[self]) {
            return Ok(out);
        }
        let (x, y) = (self.save(name), out.save(name));
        let kshape = keepdim_shape(self.shape(), &d);
        Ok(out.record(name, &[self], move |g, _| {
            let mask = x
                .get()?
                .eq(&y.get()?.reshape(&kshape)?)?
                .to_dtype(g.dtype())?;
            let count = mask.sum(&d, true)?;
            Ok(vec![Some(mask.mul(&g.reshape(&kshape)?.div(&count)?)?)])
        }))
    }

    /// Largest element as a 0-d tensor (`x.max()`); errors on an empty tensor.
    pub fn max_all(&self) -> Result<Tensor> {
        self.extreme("max", true, &[], false)
    }

    /// Smallest element as a 0-d tensor (`x.min()`); errors on an empty tensor.
    pub fn min_all(&self) -> Result<Tensor> {
        self.extreme("min", false, &[], false)
    }

    /// Maximum over `dims` (empty: all) (`torch.amax`); ties share the gradient evenly.
    pub fn amax<D: Dims + ?Sized>(&self, dims: &D, keepdim: bool) -> Result<Tensor> {
        let dims = &*dims.to_isizes();
        self.extreme("amax", true, dims, keepdim)
    }

    /// Minimum over `dims` (empty: all) (`torch.amin`); ties share the gradient evenly.
    pub fn amin<D: Dims + ?Sized>(&self, dims: &D, keepdim: bool) -> Result<Tensor> {
        let dims = &*dims.to_isizes();
        self.extreme("amin", false, dims, keepdim)
    }

    /// Values and i64 indices of the max/min along one dim; the gradient goes to the index.
    fn extreme_dim(
        &self,
        name: &'static str,
        max: bool,
        dim: isize,
        keepdim: bool,
    ) -> Result<(Tensor, Tensor)> {
        if self.ndim() == 0 {
            normalize_dim(name, dim, 0)?;
            return self.reshape(&[1])?.extreme_dim(name, max, 0, false);
        }
        let d = normalize_dim(name, dim, self.ndim())?;
        let n = self.shape()[d];
        if n == 0 {
            return Err(Error::invalid(
                name,
                format!(
                    "expected reduction dim {d} to have non-zero size, got shape {:?}",
                    self.shape()
                ),
            ));
        }
        let op = if max { ReduceOp::Max } else { ReduceOp::Min };
        let values = self.reduce_raw(op, &[d], keepdim)?;
        let arg = if max {
            ArgReduceOp::ArgMax
        } else {
            ArgReduceOp::ArgMin
        };
        let indices = self.arg_raw(arg, d, keepdim)?;
        if !needs_grad(&[self]) {
            return Ok((values, indices));
        }
        let idx = indices.save(name);
        let in_shape = self.shape().to_vec();
        let kshape = keepdim_shape(self.shape(), &[d]);
        let values = values.record(name, &[self], move |g, _| {
            let mask =
                positions_along(&in_shape, d, g.device())?.eq(&idx.get()?.reshape(&kshape)?)?;
            let zero = Tensor::zeros(&[], g.dtype(), g.device())?;
            Ok(vec![Some(Tensor::where_cond(
                &mask,
                &g.reshape(&kshape)?,
                &zero,
            )?)])
        });
        Ok((values, indices))
    }

    /// Max along `dim` with the index of its first occurrence (`torch.max(x, dim, keepdim)`):
    /// `(values, i64 indices)`. The gradient flows to the indexed element.
    pub fn max_dim(&self, dim: impl Dim, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let dim = dim.to_isize();
        self.extreme_dim("max", true, dim, keepdim)
    }

    /// Min along `dim` with the index of its first occurrence (`torch.min(x, dim, keepdim)`).
    pub fn min_dim(&self, dim: impl Dim, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let dim = dim.to_isize();
        self.extreme_dim("min", false, dim, keepdim)
    }

    /// The arg-reduction primitive along normalised `dim` of an n-d tensor; no autograd.
    fn arg_raw(&self, op: ArgReduceOp, dim: usize, keepdim: bool) -> Result<Tensor> {
        let s = self.storage().arg_reduce(self.layout(), op, dim)?;
        let out = Tensor::from_contiguous(s, &keepdim_shape(self.shape(), &[dim]));
        if keepdim {
            return Ok(out);
        }
        out.reshape(&squeezed_shape(self.shape(), &[dim]))
    }

    fn arg_extreme(
        &self,
        name: &'static str,
        op: ArgReduceOp,
        dim: Option<isize>,
        keepdim: bool,
    ) -> Result<Tensor> {
        if self.dtype() == DType::Bool {
            return Err(Error::dtype(
                name,
                format!("{name} does not support bool input (cast to an integer dtype first)"),
            ));
        }
        let x = self.detach();
        let Some(dim) = dim else {
            // Over the flattened tensor; keepdim keeps every dim as size 1.
            if x.numel() == 0 {
                return Err(Error::invalid(
                    name,
                    format!(
                        "cannot take {name} of an empty tensor (shape {:?})",
                        x.shape()
                    ),
                ));
            }
            let flat = x.reshape(&[-1])?.arg_raw(op, 0, false)?;
            return if keepdim {
                flat.reshape(&vec![1; x.ndim()])
            } else {
                Ok(flat)
            };
        };
        if x.ndim() == 0 {
            normalize_dim(name, dim, 0)?;
            return x.reshape(&[1])?.arg_raw(op, 0, false);
        }
        let d = normalize_dim(name, dim, x.ndim())?;
        if x.shape()[d] == 0 {
            return Err(Error::invalid(
                name,
                format!(
                    "expected reduction dim {d} to have non-zero size, got shape {:?}",
                    x.shape()
                ),
            ));
        }
        x.arg_raw(op, d, keepdim)
    }

    /// Index of the first maximum along `dim`, or of the flattened tensor when `dim` is
    /// `None` (`torch.argmax`); i64 output.
    pub fn argmax(&self, dim: Option<isize>, keepdim: bool) -> Result<Tensor> {
        self.arg_extreme("argmax", ArgReduceOp::ArgMax, dim, keepdim)
    }

    /// Index of the first minimum (`torch.argmin`); see [`Tensor::argmax`].
    pub fn argmin(&self, dim: Option<isize>, keepdim: bool) -> Result<Tensor> {
        self.arg_extreme("argmin", ArgReduceOp::ArgMin, dim, keepdim)
    }

    /// Variance over `dims` (empty: all) with `correction` (1 = Bessel's correction, the
    /// PyTorch default) (`torch.var(x, dims, correction=, keepdim=)`). Floats only. A
    /// non-positive `N - correction` divides by zero (inf/NaN), as in PyTorch.
    pub fn var<D: Dims + ?Sized>(
        &self,
        dims: &D,
        correction: f64,
        keepdim: bool,
    ) -> Result<Tensor> {
        let dims = &*dims.to_isizes();
        self.require_float("var")?;
        let d = normalize_dims("var", dims, self.ndim())?;
        let n = reduced_count(self.shape(), &d) as f64;
        let centered = self.sub(&self.mean(&d, true)?)?;
        centered
            .mul(&centered)?
            .sum(&d, keepdim)?
            .div_scalar((n - correction).max(0.0))
    }

    /// Standard deviation: the square root of [`Tensor::var`] (`torch.std`).
    pub fn std<D: Dims + ?Sized>(
        &self,
        dims: &D,
        correction: f64,
        keepdim: bool,
    ) -> Result<Tensor> {
        self.require_float("std")?;
        let var = self.var(dims, correction, keepdim)?;
        let out = {
            let _guard = no_grad();
            var.sqrt()?
        };
        if !needs_grad(&[&var]) {
            return Ok(out);
        }
        let y = out.save("std");
        Ok(out.record("std", &[&var], move |g, _| {
            // d sqrt(v)/dv = 1 / (2 sqrt(v)), defined as 0 where the deviation is 0, as in
            // PyTorch: the inf there would make var's backward 0 * inf = NaN.
            let y = &y.get()?;
            let d = g.div(&y.mul_scalar(2)?)?.masked_fill(&y.eq_scalar(0)?, 0)?;
            Ok(vec![Some(d)])
        }))
    }

    /// `log(sum(exp(x)))` over `dims` (empty: all), computed stably
    /// (`torch.logsumexp`). Integers are computed as f32; an empty reduction gives -inf.
    pub fn logsumexp<D: Dims + ?Sized>(&self, dims: &D, keepdim: bool) -> Result<Tensor> {
        let dims = &*dims.to_isizes();
        let x = self.to_dtype(self.dtype().to_float())?;
        let d = normalize_dims("logsumexp", dims, x.ndim())?;
        let out_shape = if keepdim {
            keepdim_shape(x.shape(), &d)
        } else {
            squeezed_shape(x.shape(), &d)
        };
        if reduced_count(x.shape(), &d) == 0 {
            // Nothing to sum: -inf, with a (zero-size) zero gradient, as in PyTorch.
            let out = Tensor::full(&out_shape, f64::NEG_INFINITY, x.dtype(), x.device())?;
            if !needs_grad(&[&x]) {
                return Ok(out);
            }
            let in_shape = x.shape().to_vec();
            return Ok(out.record("logsumexp", &[&x], move |g, _| {
                Ok(vec![Some(Tensor::zeros(&in_shape, g.dtype(), g.device())?)])
            }));
        }
        let out = {
            let _guard = no_grad();
            // log_softmax is monotone, so its max sits at x's max m and equals
            // -log(sum(exp(x - m))): lse = m - max(log_softmax(x)), using only the fused
            // kernel. Slices whose max is infinite have lse = m (PyTorch), not NaN.
            let rows = x.reduced_last(&d)?;
            let m = rows.amax(&[-1], false)?;
            let lse = m.sub(&rows.log_softmax(-1)?.amax(&[-1], false)?)?;
            let infinite = m
                .eq_scalar(f64::INFINITY)?
                .logical_or(&m.eq_scalar(f64::NEG_INFINITY)?)?;
            Tensor::where_cond(&infinite, &m, &lse)?.reshape(&out_shape)?
        };
        if !needs_grad(&[&x]) {
            return Ok(out);
        }
        let saved = x.save("logsumexp");
        let in_shape = x.shape().to_vec();
        Ok(out.record("logsumexp", &[&x], move |g, _| {
            // d lse / dx = exp(x - lse) = softmax of x over the reduced dims.
            let p = saved.get()?.softmax_over(&d)?;
            Ok(vec![Some(
                p.mul(&g.reshape(&keepdim_shape(&in_shape, &d))?)?,
            )])
        }))
    }

    /// `self` with the dims `d` (normalised, sorted) moved last and flattened into one:
    /// shape `(kept..., prod(d))`.
    fn reduced_last(&self, d: &[usize]) -> Result<Tensor> {
        let kept: Vec<usize> = (0..self.ndim()).filter(|i| !d.contains(i)).collect();
        let perm: Vec<usize> = kept.iter().chain(d).copied().collect();
        let mut shape: Vec<usize> = kept.iter().map(|&i| self.shape()[i]).collect();
        shape.push(reduced_count(self.shape(), d));
        let moved = if self.ndim() == 0 {
            self.clone()
        } else {
            self.permute(&perm)?
        };
        moved.reshape(&shape)
    }

    /// Softmax over several dims jointly (differentiable), in `self`'s shape.
    fn softmax_over(&self, d: &[usize]) -> Result<Tensor> {
        let kept: Vec<usize> = (0..self.ndim()).filter(|i| !d.contains(i)).collect();
        let perm: Vec<usize> = kept.iter().chain(d).copied().collect();
        let moved_shape: Vec<usize> = perm.iter().map(|&i| self.shape()[i]).collect();
        let p = self.reduced_last(d)?.softmax(-1)?.reshape(&moved_shape)?;
        if self.ndim() == 0 {
            return Ok(p);
        }
        p.permute(&inverse_permutation(perm.iter().copied()))
    }

    /// Vector p-norm over `dims` (empty: all) (`torch.linalg.vector_norm(x, p, dims,
    /// keepdim)`): p = 2 (Euclidean, gradient 0 at the zero vector as in PyTorch), 1,
    /// `f64::INFINITY` (max of |x|, ties share the gradient), `-INFINITY` (min of |x|), 0 (count of
    /// non-zeros, no gradient) or any other p (`sum(|x|^p)^(1/p)`). Floats only.
    pub fn norm<D: Dims + ?Sized>(&self, p: f64, dims: &D, keepdim: bool) -> Result<Tensor> {
        let dims = &*dims.to_isizes();
        self.require_float("norm")?;
        if p.is_nan() {
            return Err(Error::invalid("norm", "the order p must not be NaN"));
        }
        let d = normalize_dims("norm", dims, self.ndim())?;
        if p == 2.0 {
            return self.norm2(&d, keepdim);
        }
        if p == 1.0 {
            return abs_of(self)?.sum(&d, keepdim);
        }
        if p == f64::INFINITY {
            return abs_of(self)?.extreme("norm", true, dims, keepdim);
        }
        if p == f64::NEG_INFINITY {
            return abs_of(self)?.extreme("norm", false, dims, keepdim);
        }
        if p == 0.0 {
            return self
                .detach()
                .ne_scalar(0.0)?
                .to_dtype(self.dtype())?
                .sum(&d, keepdim);
        }
        self.norm_p(p, &d, keepdim)
    }

    /// The p-norm for any other p, `sum(|x|^p)^(1/p)`, with PyTorch's backward
    /// (`norm_backward`): `sign(x) |x|^(p-1) * g / ||x||^(p-1)`, with the points where the
    /// formula is 0 * inf defined as 0: elements equal to 0 when p < 1, slices whose norm is
    /// 0 when p > 1.
    fn norm_p(&self, p: f64, d: &[usize], keepdim: bool) -> Result<Tensor> {
        let out = {
            let _guard = no_grad();
            abs_of(self)?
                .pow_scalar(p)?
                .sum(&d, keepdim)?
                .pow_scalar(1.0 / p)?
        };
        if !needs_grad(&[self]) {
            return Ok(out);
        }
        let (x, y) = (self.save("norm"), out.save("norm"));
        let kshape = keepdim_shape(self.shape(), d);
        Ok(out.record("norm", &[self], move |g, _| {
            let (x, yk, g) = (&x.get()?, y.get()?.reshape(&kshape)?, g.reshape(&kshape)?);
            let ax = x.abs()?;
            if p < 1.0 {
                // |x|^(p-1) is inf at x == 0; the norm's factor ||x||^(1-p) is finite.
                let scaled = x
                    .sign()?
                    .mul(&ax.pow_scalar(p - 1.0)?.masked_fill(&x.eq_scalar(0)?, 0)?)?;
                return Ok(vec![Some(scaled.mul(&g)?.mul(&yk.pow_scalar(1.0 - p)?)?)]);
            }
            let scaled = if p < 2.0 {
                x.sign()?.mul(&ax.pow_scalar(p - 1.0)?)?
            } else {
                x.mul(&ax.pow_scalar(p - 2.0)?)?
            };
            let scale = g
                .div(&yk.pow_scalar(p - 1.0)?)?
                .masked_fill(&yk.eq_scalar(0)?, 0)?;
            Ok(vec![Some(scaled.mul(&scale)?)])
        }))
    }

    /// The 2-norm with its own backward `g * x / ||x||`, defined as 0 where the norm is 0.
    fn norm2(&self, d: &[usize], keepdim: bool) -> Result<Tensor> {
        let out = {
            let _guard = no_grad();
            self.mul(self)?.sum(&d, keepdim)?.pow_scalar(0.5)?
        };
        if !needs_grad(&[self]) {
            return Ok(out);
        }
        let (x, y) = (self.save("norm"), out.save("norm"));
        let kshape = keepdim_shape(self.shape(), d);
        Ok(out.record("norm", &[self], move |g, _| {
            let yk = y.get()?.reshape(&kshape)?;
            let zero = yk.eq_scalar(0.0)?;
            let scale = g
                .reshape(&kshape)?
                .div(&yk.masked_fill(&zero, 1.0)?)?
                .masked_fill(&zero, 0.0)?;
            Ok(vec![Some(x.get()?.mul(&scale)?)])
        }))
    }

    /// True when every element is non-zero (`x.all()`); 0-d output, see
    /// [`Tensor::all_dims`] for its dtype.
    pub fn all(&self) -> Result<Tensor> {
        self.all_dims(&[], false)
    }

    /// True when any element is non-zero (`x.any()`); 0-d output, see
    /// [`Tensor::all_dims`] for its dtype.
    pub fn any(&self) -> Result<Tensor> {
        self.any_dims(&[], false)
    }

    /// `all` over `dims` (empty: all dims) (`torch.all(x, dims, keepdim)`). The output is
    /// bool, except for a u8 input, which gives u8 0/1 (PyTorch keeps this legacy rule).
    pub fn all_dims<D: Dims + ?Sized>(&self, dims: &D, keepdim: bool) -> Result<Tensor> {
        let dims = &*dims.to_isizes();
        self.logical_reduce("all", ReduceOp::All, dims, keepdim)
    }

    /// `any` over `dims` (empty: all dims) (`torch.any(x, dims, keepdim)`); the output dtype
    /// as for [`Tensor::all_dims`].
    pub fn any_dims<D: Dims + ?Sized>(&self, dims: &D, keepdim: bool) -> Result<Tensor> {
        let dims = &*dims.to_isizes();
        self.logical_reduce("any", ReduceOp::Any, dims, keepdim)
    }

    /// `all`/`any` with PyTorch's output dtype rule.
    fn logical_reduce(
        &self,
        name: &'static str,
        op: ReduceOp,
        dims: &[isize],
        keepdim: bool,
    ) -> Result<Tensor> {
        let d = normalize_dims(name, dims, self.ndim())?;
        let out = self.detach().reduce_raw(op, &d, keepdim)?;
        if self.dtype() == DType::U8 {
            return out.to_dtype(DType::U8);
        }
        Ok(out)
    }

    /// The scan primitive along `dim`; no autograd.
    fn scan_raw(&self, op: ScanOp, dim: usize) -> Result<Tensor> {
        let s = self.storage().scan(self.layout(), op, dim)?;
        Ok(Tensor::from_contiguous(s, self.shape()))
    }

    /// Cumulative sum along `dim` (`torch.cumsum`); bool and integers give i64.
    pub fn cumsum(&self, dim: impl Dim) -> Result<Tensor> {
        let dim = dim.to_isize();
        let d = normalize_dim("cumsum", dim, self.ndim())?;
        let out = self.scan_raw(ScanOp::CumSum, d)?;
        if !needs_grad(&[self]) {
            return Ok(out);
        }
        Ok(out.record("cumsum", &[self], move |g, _| {
            Ok(vec![Some(g.rev_cumsum(d)?)])
        }))
    }

    /// Suffix sums along `dim` (`x.flip(d).cumsum(d).flip(d)`): the backward of cumsum.
    fn rev_cumsum(&self, d: usize) -> Result<Tensor> {
        let out = self.scan_raw(ScanOp::RevCumSum, d)?;
        Ok(out.record("rev_cumsum", &[self], move |g, _| {
            Ok(vec![Some(g.cumsum(d)?)])
        }))
    }

    /// Cumulative product along `dim` (`torch.cumprod`); bool and integers give i64. The
    /// gradient is right also when the input holds zeros.
    pub fn cumprod(&self, dim: impl Dim) -> Result<Tensor> {
        let dim = dim.to_isize();
        let d = normalize_dim("cumprod", dim, self.ndim())?;
        let out = self.scan_raw(ScanOp::CumProd, d)?;
        if !needs_grad(&[self]) {
            return Ok(out);
        }
        let (x, y) = (self.save("cumprod"), out.save("cumprod"));
        Ok(out.record("cumprod", &[self], move |g, _| {
            let (x, y) = (&x.get()?, &y.get()?);
            // grad_i = sum_{j >= i} g_j * prod_{k <= j, k != i} x_k. Before the first zero of
            // the row this is suffix_sum(g * y)_i / x_i; at the first zero it is
            // suffix_sum(g * y')_i with y' the cumprod with that zero replaced by 1; after
            // it, every term contains the zero.
            let zero = x.eq_scalar(0.0)?;
            let zeros_so_far = zero.cumsum(d)?;
            let before = zeros_so_far.eq_scalar(0.0)?;
            let first = zero.logical_and(&zeros_so_far.eq_scalar(1.0)?)?;
            let x_safe = x.masked_fill(&before.logical_not()?, 1.0)?;
            let g_before = g.mul(y)?.rev_cumsum(d)?.div(&x_safe)?;
            let y_first = x.masked_fill(&first, 1.0)?.cumprod(d)?;
            let g_first = g.mul(&y_first)?.rev_cumsum(d)?;
            let zero_t = Tensor::zeros(&[], g.dtype(), g.device())?;
            let g_at = Tensor::where_cond(&first, &g_first, &zero_t)?;
            Ok(vec![Some(Tensor::where_cond(&before, &g_before, &g_at)?)])
        }))
    }
}

/// i64 tensor broadcastable to `shape` holding each element's index along `dim`.
fn positions_along(shape: &[usize], dim: usize, device: Device) -> Result<Tensor> {
    let mut view = vec![1isize; shape.len()];
    view[dim] = shape[dim] as isize;
    Tensor::arange(0.0, shape[dim] as f64, 1.0, DType::I64, device)?.reshape(&view)
}
