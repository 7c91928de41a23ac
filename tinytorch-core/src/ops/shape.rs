//! Copying shape ops: cat, stack, hstack, vstack, flip, roll, repeat, repeat_interleave, pad,
//! tril and triu. cat and constant pad copy into a new buffer and record their backward (a
//! narrow of the gradient); the others are compositions of index_select, expand, reshape and
//! masked_fill, whose backward rules give theirs.

use super::same_device;
use crate::autograd::needs_grad;
use crate::base::{Dim, Dims};
use crate::error::{Error, Result};
use crate::tensor::layout::{normalize_dim, normalize_dims};
use crate::tensor::{DType, Layout, Tensor};

/// How [`Tensor::pad`] fills the new border (`mode` of `torch.nn.functional.pad`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PadMode {
    /// A constant value (`mode="constant", value=v`).
    Constant(f64),
    /// Mirror without repeating the edge element (`mode="reflect"`); each pad must be smaller
    /// than the padded dimension.
    Reflect,
    /// Repeat the edge element (`mode="replicate"`).
    Replicate,
}

/// A 1-D i64 index tensor on `device`.
fn index_tensor(values: Vec<i64>, tensor: &Tensor) -> Result<Tensor> {
    let n = values.len();
    Tensor::from_vec(values, &[n])?.to_device(tensor.device())
}

/// Where one input of `cat` lands in the output: its start along the cat dim and its length;
/// `None` for the legacy empty 1-D tensors that cat skips.
type CatSlot = Option<(usize, usize)>;

/// The output shape of `cat` and each input's slot, checking ranks and sizes as PyTorch does.
fn cat_plan(tensors: &[&Tensor], dim: isize) -> Result<(Vec<usize>, usize, Vec<CatSlot>)> {
    const OP: &str = "cat";
    if tensors.is_empty() {
        return Err(Error::invalid(OP, "expected a non-empty list of tensors"));
    }
    if let Some(i) = tensors.iter().position(|t| t.ndim() == 0) {
        return Err(Error::shape(
            OP,
            format!("zero-dimensional tensor (at position {i}) cannot be concatenated"),
        ));
    }
    // PyTorch skips 1-D empty tensors so that `cat([empty, x])` works for any `x`.
    let skipped = |t: &Tensor| t.shape() == [0];
    let reference = tensors.iter().find(|t| !skipped(t)).copied();
    let Some(reference) = reference else {
        // Only 1-D empty tensors: an empty 1-D result whatever `dim` says (PyTorch does
        // not check it either).
        return Ok((vec![0], 0, vec![None; tensors.len()]));
    };
    let d = normalize_dim(OP, dim, reference.ndim())?;
    let mut shape = reference.shape().to_vec();
    shape[d] = 0;
    let mut slots = Vec::with_capacity(tensors.len());
    for (i, t) in tensors.iter().enumerate() {
        if skipped(t) {
            slots.push(None);
            continue;
        }
        if t.ndim() != reference.ndim() {
            return Err(Error::shape(
                OP,
                format!(
                    "tensors must have the same number of dimensions: got {:?} and {:?} (tensor number {i})",
                    reference.shape(),
                    t.shape()
                ),
            ));
        }
        for (k, (&a, &b)) in reference.shape().iter().zip(t.shape()).enumerate() {
            if k != d && a != b {
                return Err(Error::shape(
                    OP,
                    format!(
                        "sizes of tensors must match except in dimension {d}: expected size {a} but got size {b} \
                         for tensor number {i} in the list (shapes {:?} and {:?})",
                        reference.shape(),
                        t.shape()
                    ),
                ));
            }
        }
        slots.push(Some((shape[d], t.shape()[d])));
        shape[d] += t.shape()[d];
    }
    Ok((shape, d, slots))
}

/// Add leading size-1 dims until `t` has at least `n` dims (`torch.atleast_1d/2d`).
fn at_least(t: &Tensor, n: usize) -> Result<Tensor> {
    if t.ndim() >= n {
        return Ok(t.clone());
    }
    let mut shape = vec![1usize; n - t.ndim()];
    shape.extend(t.shape());
    t.reshape(&shape)
}

/// Source positions of `pad` along one dim of size `n` padded by `left` and `right`.
fn pad_positions(n: usize, left: usize, right: usize, reflect: bool) -> Vec<i64> {
    let n = n as i64;
    (0..left + n as usize + right)
        .map(|p| {
            let s = p as i64 - left as i64;
            if reflect {
                if s < 0 {
                    -s
                } else if s >= n {
                    2 * (n - 1) - s
                } else {
                    s
                }
            } else {
                s.clamp(0, n - 1)
            }
        })
        .collect()
}

impl Tensor {
    /// Concatenate along `dim` (`torch.cat`). Dtypes are promoted; 1-D empty tensors are
    /// skipped, as in PyTorch; every other tensor must match the others except in `dim`.
    pub fn cat(tensors: &[&Tensor], dim: impl Dim) -> Result<Tensor> {
        let dim = dim.to_isize();
        const OP: &str = "cat";
        let (shape, d, slots) = cat_plan(tensors, dim)?;
        same_device(OP, tensors)?;
        let dtype = tensors
            .iter()
            .map(|t| t.dtype())
            .reduce(DType::promote)
            .expect("non-empty");
        let out = Tensor::zeros(&shape, dtype, tensors[0].device())?;
        let full = Layout::contiguous(&shape);
        for (t, slot) in tensors.iter().zip(&slots) {
            let Some((start, len)) = *slot else { continue };
            // An empty part writes nothing (and its narrowed layout may point past the end).
            if t.numel() == 0 {
                continue;
            }
            let part = t.detach().to_dtype(dtype)?;
            let dst = full.narrow(OP, d, start, len)?;
            out.storage_mut()
                .copy_strided_from(&dst, &part.storage(), part.layout())?;
        }
        if !needs_grad(tensors) {
            return Ok(out);
        }
        Ok(out.record(OP, tensors, move |g, need| {
            slots
                .iter()
                .zip(need)
                .map(|(slot, &need)| match (slot, need) {
                    (_, false) => Ok(None),
                    (Some((start, len)), true) => Ok(Some(g.narrow(d, *start as isize, *len)?)),
                    (None, true) => Ok(Some(Tensor::zeros(&[0], g.dtype(), g.device())?)),
                })
                .collect()
        }))
    }

    /// Join tensors of one shape along a new dimension `dim` (`torch.stack`).
    pub fn stack(tensors: &[&Tensor], dim: impl Dim) -> Result<Tensor> {
        let dim = dim.to_isize();
        const OP: &str = "stack";
        let first = tensors
            .first()
            .ok_or_else(|| Error::invalid(OP, "expected a non-empty list of tensors"))?;
        if let Some((i, t)) = tensors
            .iter()
            .enumerate()
            .find(|(_, t)| t.shape() != first.shape())
        {
            return Err(Error::shape(
                OP,
                format!(
                    "stack expects each tensor to be equal size, but got {:?} at entry 0 and {:?} at entry {i}",
                    first.shape(),
                    t.shape()
                ),
            ));
        }
        let d = normalize_dim(OP, dim, first.ndim() + 1)?;
        let parts: Vec<Tensor> = tensors
            .iter()
            .map(|t| t.unsqueeze(d))
            .collect::<Result<_>>()?;
        Tensor::cat(&parts.iter().collect::<Vec<_>>(), d)
    }

    /// Concatenate column-wise: along dim 0 for 1-D tensors, dim 1 otherwise; 0-d tensors
    /// count as 1-D (`torch.hstack`).
    pub fn hstack(tensors: &[&Tensor]) -> Result<Tensor> {
        let parts: Vec<Tensor> = tensors
            .iter()
            .map(|t| at_least(t, 1))
            .collect::<Result<_>>()?;
        let dim = if parts.first().is_some_and(|t| t.ndim() == 1) {
            0
        } else {
            1
        };
        Tensor::cat(&parts.iter().collect::<Vec<_>>(), dim)
    }

    /// Concatenate row-wise after making every tensor at least 2-D (`[n]` becomes `[1, n]`)
    /// (`torch.vstack`).
    pub fn vstack(tensors: &[&Tensor]) -> Result<Tensor> {
        let parts: Vec<Tensor> = tensors
            .iter()
            .map(|t| at_least(t, 2))
            .collect::<Result<_>>()?;
        Tensor::cat(&parts.iter().collect::<Vec<_>>(), 0)
    }

    /// Reverse the order of elements along each of `dims` (`torch.flip`); a copy.
    pub fn flip<D: Dims + ?Sized>(&self, dims: &D) -> Result<Tensor> {
        let dims = &*dims.to_isizes();
        if dims.is_empty() || self.ndim() == 0 {
            normalize_dims("flip", dims, self.ndim())?;
            return self.contiguous_copy();
        }
        let dims = normalize_dims("flip", dims, self.ndim())?;
        let mut out = self.clone();
        for d in dims {
            let n = self.shape()[d] as i64;
            out = out.index_select(d, &index_tensor((0..n).rev().collect(), self)?)?;
        }
        Ok(out)
    }

    /// Shift elements along `dims` by `shifts`, wrapping around (`torch.roll`); with no dims
    /// the tensor is rolled as if flattened (then `shifts` has one entry).
    pub fn roll<D: Dims + ?Sized>(&self, shifts: &[isize], dims: &D) -> Result<Tensor> {
        let dims = &*dims.to_isizes();
        const OP: &str = "roll";
        if dims.is_empty() {
            if shifts.len() != 1 {
                return Err(Error::invalid(
                    OP,
                    format!("without dims, roll takes exactly one shift, got {shifts:?}"),
                ));
            }
            let flat = self.reshape(&[-1])?.roll(shifts, &[0])?;
            return flat.reshape(self.shape());
        }
        if shifts.len() != dims.len() {
            return Err(Error::invalid(
                OP,
                format!("shifts {shifts:?} and dims {dims:?} must have the same number of entries"),
            ));
        }
        let mut out = self.clone();
        for (&shift, &dim) in shifts.iter().zip(dims) {
            let d = normalize_dim(OP, dim, self.ndim())?;
            let n = self.shape().get(d).copied().unwrap_or(1) as i64;
            if n == 0 {
                continue;
            }
            let s = (shift as i64).rem_euclid(n);
            let idx = (0..n).map(|j| (j - s).rem_euclid(n)).collect();
            out = out.index_select(d, &index_tensor(idx, self)?)?;
        }
        Ok(out)
    }

    /// Tile the tensor `repeats[d]` times along each dim; extra leading repeats add dims
    /// (`x.repeat(*repeats)`). Built as reshape + expand + copy, so the backward sums the
    /// gradient over the repeated blocks.
    pub fn repeat(&self, repeats: &[usize]) -> Result<Tensor> {
        let nd = repeats.len();
        if nd < self.ndim() {
            return Err(Error::shape(
                "repeat",
                format!(
                    "number of repeat dims ({nd}, {repeats:?}) can not be smaller than the number of dims of the tensor ({:?})",
                    self.shape()
                ),
            ));
        }
        let mut shape = vec![1usize; nd - self.ndim()];
        shape.extend_from_slice(self.shape());
        // [s0, s1] -> [1, s0, 1, s1] -> expand [r0, s0, r1, s1] -> [r0*s0, r1*s1]
        let split: Vec<usize> = shape.iter().flat_map(|&s| [1, s]).collect();
        let expanded: Vec<usize> = shape
            .iter()
            .zip(repeats)
            .flat_map(|(&s, &r)| [r, s])
            .collect();
        let merged: Vec<usize> = shape.iter().zip(repeats).map(|(&s, &r)| s * r).collect();
        self.reshape(&split)?
            .expand(&expanded)?
            .contiguous_copy()?
            .reshape(&merged)
    }

    /// Repeat each element `repeats` times along `dim`; with no dim the tensor is flattened
    /// first (`torch.repeat_interleave(x, repeats, dim)`).
    pub fn repeat_interleave(&self, repeats: usize, dim: Option<isize>) -> Result<Tensor> {
        let (src, d) = match dim {
            None => (self.reshape(&[-1])?, 0),
            // PyTorch refuses a dim for a 0-d tensor here (only the flattening form works).
            Some(_) if self.ndim() == 0 => {
                return Err(Error::index(
                    "repeat_interleave",
                    "a 0-d tensor has no dim to repeat along; pass dim None to flatten it",
                ))
            }
            Some(dim) => (
                self.clone(),
                normalize_dim("repeat_interleave", dim, self.ndim())?,
            ),
        };
        let n = src.shape()[d] as i64;
        let r = repeats as i64;
        let idx = (0..n * r).map(|j| j / r).collect();
        src.index_select(d, &index_tensor(idx, self)?)
    }

    /// Pad the trailing dims (`torch.nn.functional.pad`): `pads` lists (left, right) pairs
    /// starting from the last dim, e.g. `[left, right, top, bottom]` for the last two dims.
    /// A negative pad crops that many elements from its side first, as in PyTorch (the
    /// output size `n + left + right` must not be negative). Reflect and replicate accept any
    /// number of padded dims (PyTorch limits them to the last three); reflect needs each pad
    /// smaller than the dim it pads, as in PyTorch.
    pub fn pad(&self, pads: &[isize], mode: PadMode) -> Result<Tensor> {
        const OP: &str = "pad";
        if !pads.len().is_multiple_of(2) || pads.len() / 2 > self.ndim() {
            return Err(Error::invalid(
                OP,
                format!(
                    "padding {pads:?} must have an even length of at most twice the number of dims of the input {:?}",
                    self.shape()
                ),
            ));
        }
        // Crop the negative sides (views), then pad the positive ones.
        let nd = self.ndim();
        let mut cropped = self.clone();
        let mut plan: Vec<(usize, usize, usize)> = Vec::with_capacity(pads.len() / 2);
        for (k, p) in pads.chunks(2).enumerate() {
            let (d, left, right) = (nd - 1 - k, p[0], p[1]);
            let n = self.shape()[d] as isize;
            let (crop_left, crop_right) = ((-left).max(0), (-right).max(0));
            if n + left + right < 0 || crop_left + crop_right > n {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "the input size {n} of dim {d} with padding ({left}, {right}) leaves a negative size (input {:?})",
                        self.shape()
                    ),
                ));
            }
            if crop_left + crop_right > 0 {
                cropped = cropped.narrow(d, crop_left, (n - crop_left - crop_right) as usize)?;
            }
            plan.push((d, left.max(0) as usize, right.max(0) as usize));
        }
        cropped.pad_nonnegative(&plan, mode)
    }

    /// [`Tensor::pad`] once every pad is a (dim, left, right) with no cropping left to do.
    fn pad_nonnegative(&self, plan: &[(usize, usize, usize)], mode: PadMode) -> Result<Tensor> {
        const OP: &str = "pad";
        match mode {
            PadMode::Constant(value) => self.pad_constant(plan, value),
            PadMode::Reflect | PadMode::Replicate => {
                let reflect = mode == PadMode::Reflect;
                let mut out = self.clone();
                for &(d, left, right) in plan {
                    if left == 0 && right == 0 {
                        continue;
                    }
                    let n = self.shape()[d];
                    if reflect && (left >= n || right >= n) {
                        return Err(Error::invalid(
                            OP,
                            format!(
                                "reflect padding ({left}, {right}) must be smaller than dimension {d} of the input {:?}",
                                self.shape()
                            ),
                        ));
                    }
                    if n == 0 {
                        return Err(Error::invalid(
                            OP,
                            format!(
                                "cannot replicate-pad the empty dimension {d} of the input {:?}",
                                self.shape()
                            ),
                        ));
                    }
                    out = out.index_select(
                        d as isize,
                        &index_tensor(pad_positions(n, left, right, reflect), self)?,
                    )?;
                }
                if out.shares_storage(self) {
                    out = out.contiguous_copy()?;
                }
                Ok(out)
            }
        }
    }

    /// Constant padding: the input copied into a buffer full of `value`; the backward narrows
    /// the gradient back to the input's place.
    fn pad_constant(&self, plan: &[(usize, usize, usize)], value: f64) -> Result<Tensor> {
        let mut shape = self.shape().to_vec();
        for &(d, left, right) in plan {
            shape[d] += left + right;
        }
        let out = Tensor::full(&shape, value, self.dtype(), self.device())?;
        let mut dst = Layout::contiguous(&shape);
        for &(d, left, _) in plan {
            dst = dst.narrow("pad", d, left, self.shape()[d])?;
        }
        if self.numel() > 0 {
            out.storage_mut()
                .copy_strided_from(&dst, &self.storage(), self.layout())?;
        }
        if !needs_grad(&[self]) {
            return Ok(out);
        }
        let (plan, in_shape) = (plan.to_vec(), self.shape().to_vec());
        Ok(out.record("pad", &[self], move |g, _| {
            let mut g = g.clone();
            for &(d, left, _) in &plan {
                g = g.narrow(d, left as isize, in_shape[d])?;
            }
            Ok(vec![Some(g)])
        }))
    }

    /// The lower triangle of the last two dims: elements with `col - row <= diagonal` are
    /// kept, the rest set to 0 (`torch.tril`).
    pub fn tril(&self, diagonal: i64) -> Result<Tensor> {
        self.triangle("tril", |row, col| col - row > diagonal)
    }

    /// The upper triangle of the last two dims: elements with `col - row >= diagonal` are
    /// kept, the rest set to 0 (`torch.triu`).
    pub fn triu(&self, diagonal: i64) -> Result<Tensor> {
        self.triangle("triu", |row, col| col - row < diagonal)
    }

    /// Zero the elements of the last two dims where `drop(row, col)`; masked_fill's backward
    /// masks the gradient the same way.
    fn triangle(&self, op: &'static str, drop: impl Fn(i64, i64) -> bool) -> Result<Tensor> {
        if self.ndim() < 2 {
            return Err(Error::shape(
                op,
                format!(
                    "input must have at least 2 dimensions, got shape {:?}",
                    self.shape()
                ),
            ));
        }
        let (rows, cols) = (self.shape()[self.ndim() - 2], self.shape()[self.ndim() - 1]);
        let mask: Vec<bool> = (0..rows * cols)
            .map(|p| drop((p / cols) as i64, (p % cols) as i64))
            .collect();
        let mask = Tensor::from_vec(mask, &[rows, cols])?.to_device(self.device())?;
        self.masked_fill(&mask, 0.0)
    }
}
