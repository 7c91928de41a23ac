//! Indexing ops: index_select, gather, scatter (write, value, add), index_add, masked_select,
//! nonzero, sort, argsort, topk and one_hot. Indices are i64 tensors; every index is checked
//! against its dimension before anything is written. Each differentiable op records its
//! backward rule next to its forward; most rules are the "dual" index op (index_select <->
//! index_add, gather <-> scatter_add).

use super::{same_device, with_storages2};
use crate::autograd::needs_grad;
use crate::base::Dim;
use crate::error::{Error, Result};
use crate::tensor::layout::{broadcast_shapes, normalize_dim};
use crate::tensor::{DType, Layout, Scalar, Tensor};

/// Indices must be int64, as PyTorch requires for one_hot.
fn check_index_dtype(op: &'static str, index: &Tensor) -> Result<()> {
    if index.dtype() != DType::I64 {
        return Err(Error::dtype(
            op,
            format!("index must be an int64 tensor, got {}", index.dtype()),
        ));
    }
    Ok(())
}

/// An index that PyTorch takes as int64 or int32 (gather, scatter, index_select,
/// index_add), as int64: int32 is widened, other dtypes are refused. (`embedding` widens
/// int32 too, but refuses the rest with PyTorch's own message.)
pub(crate) fn long_index(op: &'static str, index: &Tensor) -> Result<Tensor> {
    match index.dtype() {
        DType::I32 => index.to_dtype(DType::I64),
        DType::I64 => Ok(index.clone()),
        other => Err(Error::dtype(
            op,
            format!("index must be an int64 or int32 tensor, got {other}"),
        )),
    }
}

/// `src` and `self` must have the same dtype for ops that write `src` into `self`.
fn check_same_dtype(op: &'static str, dst: &Tensor, src: &Tensor) -> Result<()> {
    if dst.dtype() != src.dtype() {
        return Err(Error::dtype(
            op,
            format!(
                "expected self and src to have the same dtype, got {} and {}",
                dst.dtype(),
                src.dtype()
            ),
        ));
    }
    Ok(())
}

/// The shape rule of gather and scatter: `index` has the rank of `input` (a 0-d tensor counts
/// as rank 1) and is no larger in any dim but `dim` (nor, with `src`, in any dim of `src`).
fn check_gather_shapes(
    op: &'static str,
    input: &Tensor,
    dim: usize,
    index: &Tensor,
    src: Option<&Tensor>,
) -> Result<()> {
    let rank = |t: &Tensor| t.ndim().max(1);
    let size = |t: &Tensor, d: usize| t.shape().get(d).copied().unwrap_or(1);
    if rank(index) != rank(input) {
        return Err(Error::shape(
            op,
            format!(
                "index {:?} must have the same number of dimensions as the input {:?}",
                index.shape(),
                input.shape()
            ),
        ));
    }
    for d in 0..rank(index) {
        if d != dim && size(index, d) > size(input, d) {
            return Err(Error::shape(
                op,
                format!(
                    "index {:?} is larger than the input {:?} in dimension {d}",
                    index.shape(),
                    input.shape()
                ),
            ));
        }
        if let Some(src) = src {
            if rank(src) != rank(index) || size(index, d) > size(src, d) {
                return Err(Error::shape(
                    op,
                    format!(
                        "index {:?} does not fit inside src {:?} (dimension {d})",
                        index.shape(),
                        src.shape()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// `t` (no larger than `shape` in any dim) written into the leading corner of zeros of
/// `shape`: the gradient of a `src` that was larger than the index it was scattered by.
fn embed_leading(t: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if t.shape() == shape {
        return Ok(t.clone());
    }
    // A 0-d gradient (0-d index) for a src of shape [1, ..] takes the src's rank.
    let t = if t.ndim() == 0 {
        &t.reshape(&vec![1; shape.len()])?
    } else {
        t
    };
    let z = Tensor::zeros(shape, t.dtype(), t.device())?;
    let mut dst = Layout::contiguous(shape);
    for (d, &n) in t.shape().iter().enumerate() {
        dst = dst.narrow("scatter", d, 0, n)?;
    }
    // An empty `t` writes nothing (and its narrowed layout may point past the end).
    if t.numel() > 0 {
        z.storage_mut()
            .copy_strided_from(&dst, &t.storage(), t.layout())?;
    }
    Ok(z)
}

impl Tensor {
    /// The slices of `dim` listed by the 1-D i64 `index`, in that order
    /// (`torch.index_select(x, dim, index)`); repeats are allowed.
    pub fn index_select(&self, dim: impl Dim, index: &Tensor) -> Result<Tensor> {
        let dim = dim.to_isize();
        const OP: &str = "index_select";
        same_device(OP, &[self, index])?;
        let index = &long_index(OP, index)?;
        if index.ndim() > 1 {
            return Err(Error::shape(
                OP,
                format!("index must be 0-D or 1-D, got shape {:?}", index.shape()),
            ));
        }
        let d = normalize_dim(OP, dim, self.ndim())?;
        let n = index.numel();
        let out_shape = if self.ndim() == 0 {
            if n != 1 {
                return Err(Error::shape(
                    OP,
                    format!("index of a 0-d tensor can have only 1 value, got {n}"),
                ));
            }
            vec![]
        } else {
            let mut s = self.shape().to_vec();
            s[d] = n;
            s
        };
        let s = with_storages2(self, index, |s, i| {
            s.index_select(self.layout(), d, i, index.layout())
        })?;
        let out = Tensor::from_contiguous(s, &out_shape);
        if !needs_grad(&[self]) {
            return Ok(out);
        }
        let idx = index.save(OP);
        let in_shape = self.shape().to_vec();
        Ok(out.record(OP, &[self], move |g, _| {
            let z = Tensor::zeros(&in_shape, g.dtype(), g.device())?;
            Ok(vec![Some(z.index_add(d, &idx.get()?, g)?)])
        }))
    }

    /// `self` with `source`'s slices added at the positions of `dim` listed by the 1-D
    /// `index`; repeated indices accumulate (out-of-place `x.index_add(dim, index, source)`).
    pub fn index_add(&self, dim: impl Dim, index: &Tensor, source: &Tensor) -> Result<Tensor> {
        let dim = dim.to_isize();
        const OP: &str = "index_add";
        same_device(OP, &[self, index, source])?;
        let index = &long_index(OP, index)?;
        check_same_dtype(OP, self, source)?;
        if index.ndim() > 1 {
            return Err(Error::shape(
                OP,
                format!("index must be 0-D or 1-D, got shape {:?}", index.shape()),
            ));
        }
        let d = normalize_dim(OP, dim, self.ndim())?;
        let mut expected = self.shape().to_vec();
        if self.ndim() > 0 {
            expected[d] = index.numel();
        }
        if source.shape() != expected.as_slice() {
            return Err(Error::shape(
                OP,
                format!(
                    "source {:?} must have the shape of self {:?} with dim {d} of size {} (the number of indices)",
                    source.shape(),
                    self.shape(),
                    index.numel()
                ),
            ));
        }
        let out = self.detached_copy();
        with_storages2(index, source, |i, s| {
            out.storage_mut().index_add_inplace(
                out.layout(),
                d,
                i,
                index.layout(),
                s,
                source.layout(),
            )
        })?;
        if !needs_grad(&[self, source]) {
            return Ok(out);
        }
        let idx = index.save(OP);
        let src_shape = source.shape().to_vec();
        Ok(out.record(OP, &[self, source], move |g, need| {
            let gs = if need[1] {
                Some(g.index_select(d, &idx.get()?)?.reshape(&src_shape)?)
            } else {
                None
            };
            Ok(vec![Some(g.clone()), gs])
        }))
    }

    /// `out[i][j] = self[index[i][j]][j]` for `dim = 0` (and so on for other dims): values
    /// picked along `dim` by an i64 index of the same rank (`torch.gather(x, dim, index)`).
    pub fn gather(&self, dim: impl Dim, index: &Tensor) -> Result<Tensor> {
        let dim = dim.to_isize();
        const OP: &str = "gather";
        same_device(OP, &[self, index])?;
        let index = &long_index(OP, index)?;
        let d = normalize_dim(OP, dim, self.ndim())?;
        check_gather_shapes(OP, self, d, index, None)?;
        let s = with_storages2(self, index, |s, i| {
            s.gather(self.layout(), d, i, index.layout())
        })?;
        let out = Tensor::from_contiguous(s, index.shape());
        if !needs_grad(&[self]) {
            return Ok(out);
        }
        let idx = index.save(OP);
        let in_shape = self.shape().to_vec();
        Ok(out.record(OP, &[self], move |g, _| {
            let z = Tensor::zeros(&in_shape, g.dtype(), g.device())?;
            Ok(vec![Some(z.scatter_add(d, &idx.get()?, g)?)])
        }))
    }

    /// The checks and forward that `scatter` and `scatter_add` share (their backward rules
    /// differ): the result, the index as i64 and the normalized `dim`.
    fn scatter_src(
        &self,
        op: &'static str,
        dim: isize,
        index: &Tensor,
        src: &Tensor,
        accumulate: bool,
    ) -> Result<(Tensor, Tensor, usize)> {
        same_device(op, &[self, index, src])?;
        let index = long_index(op, index)?;
        check_same_dtype(op, self, src)?;
        let d = normalize_dim(op, dim, self.ndim())?;
        check_gather_shapes(op, self, d, &index, Some(src))?;
        let out = self.scatter_impl(op, d, &index, src, accumulate)?;
        Ok((out, index, d))
    }

    /// A copy of `self` with the primitive scatter of `src` at `index` applied; a 0-d `src`
    /// stands for the same value at every index position.
    fn scatter_impl(
        &self,
        op: &'static str,
        dim: usize,
        index: &Tensor,
        src: &Tensor,
        accumulate: bool,
    ) -> Result<Tensor> {
        let out = self.detached_copy();
        let src_l = if src.ndim() == 0 && index.ndim() > 0 {
            src.layout().broadcast_as(op, index.shape())?
        } else {
            src.layout().clone()
        };
        with_storages2(index, src, |i, s| {
            out.storage_mut().scatter_inplace(
                out.layout(),
                dim,
                i,
                index.layout(),
                s,
                &src_l,
                accumulate,
            )
        })?;
        Ok(out)
    }

    /// `self` with `src[p]` written at `index[p]` along `dim` (out-of-place
    /// `x.scatter(dim, index, src)`). With repeated indices the result is the last write, which
    /// PyTorch leaves unspecified.
    pub fn scatter(&self, dim: impl Dim, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        let dim = dim.to_isize();
        const OP: &str = "scatter";
        let (out, index, d) = self.scatter_src(OP, dim, index, src, false)?;
        if !needs_grad(&[self, src]) {
            return Ok(out);
        }
        let idx = index.save(OP);
        let src_shape = src.shape().to_vec();
        Ok(out.record(OP, &[self, src], move |g, need| {
            let idx = &idx.get()?;
            // Overwritten positions do not depend on self; src gets the gradient of where it went.
            let gself = if need[0] {
                Some(g.scatter_value(d, idx, 0.0)?)
            } else {
                None
            };
            let gsrc = if need[1] {
                Some(embed_leading(&g.gather(d, idx)?, &src_shape)?)
            } else {
                None
            };
            Ok(vec![gself, gsrc])
        }))
    }

    /// `self` with `value` written at every position of `index` along `dim` (out-of-place
    /// `x.scatter(dim, index, value)`).
    pub fn scatter_value(
        &self,
        dim: impl Dim,
        index: &Tensor,
        value: impl Into<Scalar>,
    ) -> Result<Tensor> {
        const OP: &str = "scatter";
        let dim = dim.to_isize();
        same_device(OP, &[self, index])?;
        let index = &long_index(OP, index)?;
        let d = normalize_dim(OP, dim, self.ndim())?;
        check_gather_shapes(OP, self, d, index, None)?;
        let v = Tensor::scalar_tensor(value, self.dtype(), self.device())?;
        let out = self.scatter_impl(OP, d, index, &v, false)?;
        if !needs_grad(&[self]) {
            return Ok(out);
        }
        let idx = index.save(OP);
        Ok(out.record(OP, &[self], move |g, _| {
            Ok(vec![Some(g.scatter_value(d, &idx.get()?, 0)?)])
        }))
    }

    /// `self` with `src[p]` added at `index[p]` along `dim`; repeated indices accumulate
    /// (out-of-place `x.scatter_add(dim, index, src)`).
    pub fn scatter_add(&self, dim: impl Dim, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        let dim = dim.to_isize();
        const OP: &str = "scatter_add";
        let (out, index, d) = self.scatter_src(OP, dim, index, src, true)?;
        if !needs_grad(&[self, src]) {
            return Ok(out);
        }
        let idx = index.save(OP);
        let src_shape = src.shape().to_vec();
        Ok(out.record(OP, &[self, src], move |g, need| {
            let gsrc = if need[1] {
                Some(embed_leading(&g.gather(d, &idx.get()?)?, &src_shape)?)
            } else {
                None
            };
            Ok(vec![Some(g.clone()), gsrc])
        }))
    }

    /// The elements where the bool `mask` is true, as a 1-D tensor; `self` and `mask`
    /// broadcast together (`torch.masked_select`). Built from index_select, which gives the
    /// backward (a scatter of the gradient back into zeros).
    pub fn masked_select(&self, mask: &Tensor) -> Result<Tensor> {
        const OP: &str = "masked_select";
        same_device(OP, &[self, mask])?;
        if mask.dtype() != DType::Bool {
            return Err(Error::dtype(
                OP,
                format!("mask must be a bool tensor, got {}", mask.dtype()),
            ));
        }
        let shape = broadcast_shapes(OP, self.shape(), mask.shape())?;
        let picked: Vec<i64> = mask
            .broadcast_to(&shape)?
            .to_vec::<bool>()?
            .iter()
            .enumerate()
            .filter(|(_, &m)| m)
            .map(|(i, _)| i as i64)
            .collect();
        let index = Tensor::from_slice(&picked).to_device(self.device())?;
        self.broadcast_to(&shape)?
            .reshape(&[-1])?
            .index_select(0, &index)
    }

    /// The coordinates of every non-zero element (NaN counts as non-zero), as an i64 tensor
    /// of shape `(n, ndim)` in row-major order (`torch.nonzero`).
    pub fn nonzero(&self) -> Result<Tensor> {
        let values = self.to_vec_f64()?;
        let shape = self.shape();
        let mut coords = Vec::new();
        let mut count = 0;
        for (flat, v) in values.iter().enumerate() {
            if *v == 0.0 {
                continue;
            }
            count += 1;
            let start = coords.len();
            let mut rem = flat;
            for &s in shape.iter().rev() {
                coords.push((rem % s) as i64);
                rem /= s;
            }
            coords[start..].reverse();
        }
        let out = Tensor::from_vec(coords, &[count, shape.len()])?;
        out.to_device(self.device())
    }

    /// Stable sort along `dim` (NaN sorts as the largest value): `(values, indices)` with the
    /// indices as i64 (`torch.sort(x, dim, descending, stable=True)`).
    pub fn sort(&self, dim: impl Dim, descending: bool) -> Result<(Tensor, Tensor)> {
        let dim = dim.to_isize();
        const OP: &str = "sort";
        let d = normalize_dim(OP, dim, self.ndim())?;
        let (v, i) = self.storage().sort(self.layout(), d, descending)?;
        let (values, indices) = (
            Tensor::from_contiguous(v, self.shape()),
            Tensor::from_contiguous(i, self.shape()),
        );
        if !needs_grad(&[self]) {
            return Ok((values, indices));
        }
        let idx = indices.save(OP);
        let in_shape = self.shape().to_vec();
        let values = values.record(OP, &[self], move |g, _| {
            let z = Tensor::zeros(&in_shape, g.dtype(), g.device())?;
            Ok(vec![Some(z.scatter_add(d, &idx.get()?, g)?)])
        });
        Ok((values, indices))
    }

    /// The i64 indices that sort `self` along `dim` (stable) (`torch.argsort`).
    pub fn argsort(&self, dim: impl Dim, descending: bool) -> Result<Tensor> {
        let dim = dim.to_isize();
        let d = normalize_dim("argsort", dim, self.ndim())?;
        let (_, i) = self.storage().sort(self.layout(), d, descending)?;
        Ok(Tensor::from_contiguous(i, self.shape()))
    }

    /// The `k` largest (or smallest) elements along `dim` and their i64 indices
    /// (`torch.topk(x, k, dim, largest, sorted)`). The result is always sorted (PyTorch leaves
    /// the order unspecified when `sorted` is false); ties keep the lower index first.
    pub fn topk(
        &self,
        k: usize,
        dim: impl Dim,
        largest: bool,
        sorted: bool,
    ) -> Result<(Tensor, Tensor)> {
        const OP: &str = "topk";
        let dim = dim.to_isize();
        // A sorted result is also a valid answer for `sorted = false`.
        let _ = sorted;
        let d = normalize_dim(OP, dim, self.ndim())?;
        let size = self.shape().get(d).copied().unwrap_or(1);
        if k > size {
            return Err(Error::index(
                OP,
                format!("selected index k={k} out of range for dimension {d} of size {size}"),
            ));
        }
        let order = self.argsort(d, largest)?;
        let indices = if self.ndim() == 0 {
            if k == 0 {
                return Err(Error::invalid(OP, "k=0 is not supported for a 0-d tensor"));
            }
            order
        } else {
            order.narrow(d, 0, k)?.contiguous()?
        };
        // gather records the backward (a scatter of the gradient back to the picked places).
        let values = self.gather(d, &indices)?;
        Ok((values, indices))
    }

    /// One-hot encoding of an i64 tensor of class indices: output shape `self.shape + [C]`,
    /// i64, where `num_classes = -1` infers `C = max + 1` (`torch.nn.functional.one_hot`).
    pub fn one_hot(&self, num_classes: i64) -> Result<Tensor> {
        const OP: &str = "one_hot";
        check_index_dtype(OP, self)?;
        let values = self.to_vec::<i64>()?;
        if let Some(&neg) = values.iter().find(|&&v| v < 0) {
            return Err(Error::invalid(
                OP,
                format!("class values must be non-negative, got {neg}"),
            ));
        }
        let max = values.iter().copied().max();
        let classes = match num_classes {
            -1 => max.map(|m| m + 1).ok_or_else(|| {
                Error::invalid(
                    OP,
                    "cannot infer the number of classes from an empty tensor (num_classes = -1)",
                )
            })?,
            c if c < -1 => {
                return Err(Error::invalid(
                    OP,
                    format!("num_classes must be -1 or non-negative, got {c}"),
                ))
            }
            c => c,
        };
        if let Some(m) = max.filter(|&m| m >= classes) {
            return Err(Error::invalid(
                OP,
                format!("class values must be smaller than num_classes ({classes}), got {m}"),
            ));
        }
        let mut shape = self.shape().to_vec();
        shape.push(classes as usize);
        let z = Tensor::zeros(&shape, DType::I64, self.device())?;
        z.scatter_value(-1, &self.unsqueeze(-1)?, 1.0)
    }
}
