//! Views: ops that build a new layout over the same storage and copy nothing (reshape copies
//! only when the layout cannot be viewed, as in PyTorch). Each records a backward rule that
//! maps the gradient back to the input's layout.

use crate::autograd::needs_grad;
use crate::base::{Dim, Dims};
use crate::error::{Error, Result};
use crate::tensor::layout::{normalize_dim, normalize_dims, numel};
use crate::tensor::{Layout, Tensor};

/// One dimension's index in [`Tensor::slice`]-style indexing, as Python's `start:end:step`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SliceArg {
    /// First index (negative counts from the end); `None` means the start.
    pub start: Option<isize>,
    /// One past the last index (negative counts from the end); `None` means the end.
    pub end: Option<isize>,
    /// Step, at least 1.
    pub step: usize,
}

/// The permutation that undoes `perm` (valid, normalised dims): `x.permute(perm)` permuted
/// by it is `x` again.
pub(crate) fn inverse_permutation(perm: impl ExactSizeIterator<Item = usize>) -> Vec<isize> {
    let mut inverse = vec![0isize; perm.len()];
    for (pos, d) in perm.enumerate() {
        inverse[d] = pos as isize;
    }
    inverse
}

/// Error for a 0-d tensor: chunk and split need a dim to cut (PyTorch's rule).
fn require_dims(op: &'static str, t: &Tensor) -> Result<()> {
    if t.ndim() == 0 {
        return Err(Error::shape(
            op,
            format!("{op} expects at least a 1-dimensional tensor, got a 0-d one"),
        ));
    }
    Ok(())
}

/// Resolve a shape with at most one `-1` against `numel` elements.
fn infer_shape(op: &'static str, shape: &[isize], n: usize, from: &[usize]) -> Result<Vec<usize>> {
    let mut infer = None;
    let mut known = 1usize;
    for (i, &d) in shape.iter().enumerate() {
        if d == -1 {
            if infer.replace(i).is_some() {
                return Err(Error::invalid(
                    op,
                    format!("only one dimension can be inferred in {shape:?}"),
                ));
            }
        } else if d < 0 {
            return Err(Error::invalid(
                op,
                format!("invalid shape dimension {d} in {shape:?}"),
            ));
        } else {
            known *= d as usize;
        }
    }
    let mut out: Vec<usize> = shape.iter().map(|&d| d.max(0) as usize).collect();
    if let Some(i) = infer {
        if known == 0 || !n.is_multiple_of(known) {
            return Err(Error::shape(
                op,
                format!("shape {shape:?} is invalid for input of shape {from:?} ({n} elements)"),
            ));
        }
        out[i] = n / known;
    } else if known != n {
        return Err(Error::shape(
            op,
            format!("shape {shape:?} is invalid for input of shape {from:?} ({n} elements)"),
        ));
    }
    Ok(out)
}

/// The gradient of a view that picks `part` of its input (narrow, slice, select): zeros of
/// the input's shape with `g` written where the view looked.
pub(crate) fn embed_grad(g: &Tensor, in_shape: &[usize], part: &Layout) -> Result<Tensor> {
    let z = Tensor::zeros(in_shape, g.dtype(), g.device())?;
    z.storage_mut()
        .copy_strided_from(part, &g.storage(), g.layout())?;
    Ok(z)
}

/// The layout of the `offset` diagonal of dims `(d1, d2)` of `l` (distinct, in range): the
/// other dims in order, then the diagonal with the stride of one step along both.
fn diagonal_layout(l: &Layout, offset: isize, d1: usize, d2: usize) -> Layout {
    let (n1, n2) = (l.shape()[d1] as isize, l.shape()[d2] as isize);
    // Row and column of the diagonal's first element, and its length (0 when off the plane).
    let (r, c) = if offset >= 0 {
        (0, offset)
    } else {
        (-offset, 0)
    };
    let len = (n1 - r).min(n2 - c).max(0) as usize;
    let (s1, s2) = (l.strides()[d1], l.strides()[d2]);
    let start = if len > 0 {
        l.offset() + r as usize * s1 + c as usize * s2
    } else {
        l.offset()
    };
    let mut shape = Vec::with_capacity(l.ndim() - 1);
    let mut strides = Vec::with_capacity(l.ndim() - 1);
    for d in (0..l.ndim()).filter(|&d| d != d1 && d != d2) {
        shape.push(l.shape()[d]);
        strides.push(l.strides()[d]);
    }
    shape.push(len);
    strides.push(s1 + s2);
    Layout::from_parts(shape, strides, start)
}

impl Tensor {
    /// The same storage under `layout`, recording `rule` as the backward.
    fn make_view(
        &self,
        name: &'static str,
        layout: Layout,
        rule: impl Fn(&Tensor) -> Result<Tensor> + Send + Sync + 'static,
    ) -> Tensor {
        let out = self.view_of_base(layout);
        if !needs_grad(&[self]) {
            return out;
        }
        out.record(name, &[self], move |g, _| Ok(vec![Some(rule(g)?)]))
    }

    /// A view under `layout` that picks part of `self`: `part_of` gives the same view of a
    /// row-major tensor of `self`'s shape, which is where the gradient goes.
    fn make_part_view(
        &self,
        name: &'static str,
        layout: Layout,
        part_of: impl Fn(&Layout) -> Layout,
    ) -> Tensor {
        let out = self.view_of_base(layout);
        if !needs_grad(&[self]) {
            return out;
        }
        let in_shape = self.shape().to_vec();
        let part = part_of(&Layout::contiguous(&in_shape));
        let region = part.clone();
        out.record_part(name, self, part, move |g, _| {
            Ok(vec![Some(embed_grad(g, &in_shape, &region)?)])
        })
    }

    /// A view with `shape` (one entry may be -1); errors when the strides do not allow a view
    /// (`x.view(shape)`).
    pub fn view<S: Dims + ?Sized>(&self, shape: &S) -> Result<Tensor> {
        let shape = shape.to_isizes();
        let new = infer_shape("view", &shape, self.numel(), self.shape())?;
        let layout = self.layout().view_as(&new).ok_or_else(|| {
            Error::invalid(
                "view",
                format!(
                    "view size {new:?} is not compatible with input size {:?} and stride {:?}; use reshape instead",
                    self.shape(),
                    self.stride()
                ),
            )
        })?;
        let in_shape = self.shape().to_vec();
        Ok(self.make_view("view", layout, move |g| g.reshape(&in_shape)))
    }

    /// `shape` (one entry may be -1): a view when possible, otherwise a contiguous copy
    /// (`x.reshape(shape)`).
    pub fn reshape<S: Dims + ?Sized>(&self, shape: &S) -> Result<Tensor> {
        let shape = shape.to_isizes();
        let new = infer_shape("reshape", &shape, self.numel(), self.shape())?;
        if self.layout().view_as(&new).is_some() {
            return self.view(&new);
        }
        self.contiguous_copy()?.view(&new)
    }

    /// Reorder dimensions (`x.permute(dims)`).
    pub fn permute<D: Dims + ?Sized>(&self, dims: &D) -> Result<Tensor> {
        let dims = dims.to_isizes();
        let layout = self.layout().permute("permute", &dims)?;
        let n = self.ndim();
        let mut inverse = vec![0isize; n];
        for (i, &d) in dims.iter().enumerate() {
            inverse[normalize_dim("permute", d, n)?] = i as isize;
        }
        Ok(self.make_view("permute", layout, move |g| g.permute(&inverse)))
    }

    /// Swap two dimensions (`x.transpose(d0, d1)`).
    pub fn transpose(&self, d0: impl Dim, d1: impl Dim) -> Result<Tensor> {
        let a = normalize_dim("transpose", d0.to_isize(), self.ndim())?;
        let b = normalize_dim("transpose", d1.to_isize(), self.ndim())?;
        if self.ndim() == 0 {
            return Ok(self.clone());
        }
        let layout = self.layout().transpose(a, b);
        Ok(self.make_view("transpose", layout, move |g| g.transpose(a, b)))
    }

    /// Transpose of a matrix; 0-d and 1-d tensors are returned as is (`x.t()`).
    pub fn t(&self) -> Result<Tensor> {
        match self.ndim() {
            0 | 1 => Ok(self.clone()),
            2 => self.transpose(0, 1),
            n => Err(Error::shape(
                "t",
                format!("t() expects a tensor with <= 2 dimensions, but self is {n}D"),
            )),
        }
    }

    /// Remove all size-1 dimensions (`x.squeeze()`).
    pub fn squeeze(&self) -> Result<Tensor> {
        self.squeeze_dims(&[])
    }

    /// Remove dimension `dim` if it has size 1 (`x.squeeze(dim)`).
    pub fn squeeze_dim(&self, dim: impl Dim) -> Result<Tensor> {
        self.squeeze_dims(&[dim.to_isize()])
    }

    /// Remove the listed dimensions that have size 1; an empty list means all.
    pub fn squeeze_dims<D: Dims + ?Sized>(&self, dims: &D) -> Result<Tensor> {
        let dims = normalize_dims("squeeze", &dims.to_isizes(), self.ndim())?;
        let layout = self.layout().squeeze(&dims);
        let in_shape = self.shape().to_vec();
        Ok(self.make_view("squeeze", layout, move |g| g.reshape(&in_shape)))
    }

    /// Insert a size-1 dimension at `dim` (`x.unsqueeze(dim)`; -1 appends).
    pub fn unsqueeze(&self, dim: impl Dim) -> Result<Tensor> {
        let d = normalize_dim("unsqueeze", dim.to_isize(), self.ndim() + 1)?;
        let layout = self.layout().unsqueeze(d);
        Ok(self.make_view("unsqueeze", layout, move |g| g.squeeze_dim(d)))
    }

    /// Merge dimensions `start..=end` into one (`x.flatten(start, end)`).
    pub fn flatten(&self, start: impl Dim, end: impl Dim) -> Result<Tensor> {
        if self.ndim() == 0 {
            return self.reshape(&[1]);
        }
        let (start, end) = (start.to_isize(), end.to_isize());
        let s = normalize_dim("flatten", start, self.ndim())?;
        let e = normalize_dim("flatten", end, self.ndim())?;
        if s > e {
            return Err(Error::invalid(
                "flatten",
                format!("start_dim {start} comes after end_dim {end}"),
            ));
        }
        let mut shape = self.shape()[..s].to_vec();
        shape.push(numel(&self.shape()[s..=e]));
        shape.extend(&self.shape()[e + 1..]);
        self.reshape(&shape)
    }

    /// Split dimension `dim` into `sizes` (one may be -1) (`x.unflatten(dim, sizes)`).
    pub fn unflatten<S: Dims + ?Sized>(&self, dim: impl Dim, sizes: &S) -> Result<Tensor> {
        let d = normalize_dim("unflatten", dim.to_isize(), self.ndim())?;
        let sizes = sizes.to_isizes();
        let inner = infer_shape("unflatten", &sizes, self.shape()[d], &self.shape()[d..=d])?;
        let mut shape = self.shape()[..d].to_vec();
        shape.extend(inner);
        shape.extend(&self.shape()[d + 1..]);
        self.reshape(&shape)
    }

    /// Broadcast to `shape` without copying; -1 keeps a dimension (`x.expand(shape)`).
    pub fn expand<S: Dims + ?Sized>(&self, shape: &S) -> Result<Tensor> {
        let shape = &*shape.to_isizes();
        let n = shape.len();
        if n < self.ndim() {
            return Err(Error::shape(
                "expand",
                format!(
                    "the number of sizes provided ({n}) must be >= the number of dims ({})",
                    self.ndim()
                ),
            ));
        }
        let extra = n - self.ndim();
        let mut target = Vec::with_capacity(n);
        for (i, &d) in shape.iter().enumerate() {
            if d == -1 {
                if i < extra {
                    return Err(Error::invalid(
                        "expand",
                        format!("-1 is not allowed in a new leading dimension ({shape:?})"),
                    ));
                }
                target.push(self.shape()[i - extra]);
            } else if d < 0 {
                return Err(Error::invalid(
                    "expand",
                    format!("invalid size {d} in {shape:?}"),
                ));
            } else {
                target.push(d as usize);
            }
        }
        self.broadcast_to(&target)
    }

    /// Broadcast to `shape` without copying (`torch.broadcast_to`).
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Tensor> {
        if self.shape() == shape {
            return Ok(self.clone());
        }
        let layout = self.layout().broadcast_as("expand", shape)?;
        let in_shape = self.shape().to_vec();
        Ok(self.make_view("expand", layout, move |g| g.sum_to_shape(&in_shape)))
    }

    /// Elements `start..start+length` of `dim` (`x.narrow(dim, start, length)`).
    pub fn narrow(&self, dim: impl Dim, start: isize, length: usize) -> Result<Tensor> {
        let dim = dim.to_isize();
        let d = normalize_dim("narrow", dim, self.ndim())?;
        if self.ndim() == 0 {
            return Err(Error::index("narrow", "cannot narrow a 0-d tensor"));
        }
        let size = self.shape()[d] as isize;
        let s = if start < 0 { start + size } else { start };
        if s < 0 {
            return Err(Error::index(
                "narrow",
                format!("start {start} out of range for dim {d} of size {size}"),
            ));
        }
        let s = s as usize;
        let layout = self.layout().narrow("narrow", d, s, length)?;
        Ok(self.make_part_view("narrow", layout, |l| {
            l.narrow("narrow", d, s, length)
                .expect("checked in forward")
        }))
    }

    /// Python-style slicing `x[.., start:end:step, ..]` on `dim`: out-of-range bounds are
    /// clamped, negative bounds count from the end, `step` must be positive.
    pub fn slice(
        &self,
        dim: impl Dim,
        start: Option<isize>,
        end: Option<isize>,
        step: usize,
    ) -> Result<Tensor> {
        let dim = dim.to_isize();
        if step == 0 {
            return Err(Error::invalid("slice", "slice step must be positive"));
        }
        if self.ndim() == 0 {
            return Err(Error::index("slice", "cannot slice a 0-d tensor"));
        }
        let d = normalize_dim("slice", dim, self.ndim())?;
        let size = self.shape()[d] as isize;
        let clamp =
            |v: isize| -> usize { (if v < 0 { v + size } else { v }).clamp(0, size) as usize };
        let s = start.map_or(0, clamp);
        let e = end.map_or(size as usize, clamp);
        let layout = self.layout().slice_step(d, s, e.max(s), step);
        Ok(self.make_part_view("slice", layout, |l| l.slice_step(d, s, e.max(s), step)))
    }

    /// Apply several [`SliceArg`]s, one per leading dimension (`x[a:b, c:d:e]`).
    pub fn slices(&self, args: &[SliceArg]) -> Result<Tensor> {
        let mut t = self.clone();
        for (d, a) in args.iter().enumerate() {
            t = t.slice(d, a.start, a.end, a.step)?;
        }
        Ok(t)
    }

    /// Index `index` of `dim`, removing that dimension (`x.select(dim, index)`, `x[i]`).
    pub fn select(&self, dim: impl Dim, index: isize) -> Result<Tensor> {
        let dim = dim.to_isize();
        if self.ndim() == 0 {
            return Err(Error::index(
                "select",
                "select() cannot be applied to a 0-dim tensor",
            ));
        }
        let d = normalize_dim("select", dim, self.ndim())?;
        let size = self.shape()[d] as isize;
        let i = if index < 0 { index + size } else { index };
        if i < 0 || i >= size {
            return Err(Error::index(
                "select",
                format!("index {index} is out of bounds for dimension {d} with size {size}"),
            ));
        }
        let i = i as usize;
        let layout = self.layout().select(d, i);
        Ok(self.make_part_view("select", layout, |l| l.select(d, i)))
    }

    /// The diagonal of the plane `(dim1, dim2)` shifted by `offset` (above the main diagonal
    /// when positive), as a view (`torch.diagonal(x, offset, dim1, dim2)`): both dims are
    /// removed and the diagonal becomes the last dim (empty when `offset` is past the plane).
    pub fn diagonal(&self, offset: isize, dim1: impl Dim, dim2: impl Dim) -> Result<Tensor> {
        let dim1 = dim1.to_isize();
        let dim2 = dim2.to_isize();
        const OP: &str = "diagonal";
        if self.ndim() < 2 {
            return Err(Error::shape(
                OP,
                format!(
                    "diagonal needs at least 2 dims, got a {}-d tensor of shape {:?}",
                    self.ndim(),
                    self.shape()
                ),
            ));
        }
        let d1 = normalize_dim(OP, dim1, self.ndim())?;
        let d2 = normalize_dim(OP, dim2, self.ndim())?;
        if d1 == d2 {
            return Err(Error::invalid(
                OP,
                format!("diagonal dimensions cannot be identical {dim1}, {dim2}"),
            ));
        }
        let layout = diagonal_layout(self.layout(), offset, d1, d2);
        Ok(self.make_part_view(OP, layout, move |l| diagonal_layout(l, offset, d1, d2)))
    }

    /// Split into `chunks` views of equal size along `dim` (the last may be smaller), as
    /// `torch.chunk`.
    pub fn chunk(&self, chunks: usize, dim: impl Dim) -> Result<Vec<Tensor>> {
        let dim = dim.to_isize();
        if chunks == 0 {
            return Err(Error::invalid(
                "chunk",
                "chunk expects `chunks` to be greater than 0",
            ));
        }
        require_dims("chunk", self)?;
        let d = normalize_dim("chunk", dim, self.ndim())?;
        let size = self.shape()[d];
        if size == 0 {
            // PyTorch gives `chunks` empty pieces here (split would give one).
            return (0..chunks).map(|_| self.narrow(dim, 0, 0)).collect();
        }
        self.split(size.div_ceil(chunks), dim)
    }

    /// Split into views of `split_size` along `dim` (the last may be smaller) (`torch.split`).
    pub fn split(&self, split_size: usize, dim: impl Dim) -> Result<Vec<Tensor>> {
        let dim = dim.to_isize();
        require_dims("split", self)?;
        let d = normalize_dim("split", dim, self.ndim())?;
        let size = self.shape()[d];
        if split_size == 0 && size > 0 {
            return Err(Error::invalid(
                "split",
                "split_size must be positive for a non-empty dimension",
            ));
        }
        if size == 0 {
            return Ok(vec![self.narrow(dim, 0, 0)?]);
        }
        let sizes: Vec<usize> = (0..size)
            .step_by(split_size)
            .map(|s| split_size.min(size - s))
            .collect();
        self.split_sizes(&sizes, dim)
    }

    /// Split into views with the given sizes along `dim`, which must sum to its size.
    pub fn split_sizes(&self, sizes: &[usize], dim: impl Dim) -> Result<Vec<Tensor>> {
        let dim = dim.to_isize();
        require_dims("split", self)?;
        let d = normalize_dim("split", dim, self.ndim())?;
        let total: usize = sizes.iter().sum();
        if total != self.shape()[d] {
            return Err(Error::shape(
                "split",
                format!(
                    "split sizes {sizes:?} sum to {total} but dim {d} has size {}",
                    self.shape()[d]
                ),
            ));
        }
        let mut start = 0;
        let mut out = Vec::with_capacity(sizes.len());
        for &s in sizes {
            out.push(self.narrow(d, start as isize, s)?);
            start += s;
        }
        Ok(out)
    }

    /// Sum a broadcast gradient back to `shape`: sums the leading dims that broadcasting added
    /// and the dims where `shape` has size 1.
    pub fn sum_to_shape(&self, shape: &[usize]) -> Result<Tensor> {
        if self.shape() == shape {
            return Ok(self.clone());
        }
        let extra = self.ndim().checked_sub(shape.len()).ok_or_else(|| {
            Error::shape(
                "sum_to_shape",
                format!("cannot sum shape {:?} to {shape:?}", self.shape()),
            )
        })?;
        let mut dims: Vec<usize> = (0..extra).collect();
        for (i, &d) in shape.iter().enumerate() {
            if d == 1 && self.shape()[extra + i] != 1 {
                dims.push(extra + i);
            } else if d != self.shape()[extra + i] {
                return Err(Error::shape(
                    "sum_to_shape",
                    format!("cannot sum shape {:?} to {shape:?}", self.shape()),
                ));
            }
        }
        let summed = if dims.is_empty() {
            self.clone()
        } else {
            self.sum(&dims, true)?
        };
        let target = shape.to_vec();
        summed.reshape(&target)
    }
}
