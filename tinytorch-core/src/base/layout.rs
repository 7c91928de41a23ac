//! `Layout`: how a tensor's elements sit in its storage (shape, strides in elements, offset).
//! Every view (permute, narrow, expand, ...) is a function from one layout to another; no data
//! moves. Kernels receive layouts and walk them with the CPU backend's strided walker
//! (`backend/cpu/strided.rs`).

use super::DType;
use crate::error::{Error, Result};
use smallvec::SmallVec;

/// Sizes or strides of the dims of a layout: inline up to 6 dims, so that creating the
/// layout of an op's output does not touch the heap (per-op overhead matters for small
/// tensors).
pub type Dims = SmallVec<[usize; 6]>;

/// Shape, strides (in elements) and starting offset of a tensor inside its storage.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    shape: Dims,
    strides: Dims,
    offset: usize,
}

/// Row-major (C-contiguous) strides for `shape`.
pub fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    contiguous_dims(shape).into_vec()
}

/// [`contiguous_strides`] without a heap allocation for up to 6 dims.
fn contiguous_dims(shape: &[usize]) -> Dims {
    let mut strides: Dims = smallvec::smallvec![0; shape.len()];
    let mut acc = 1;
    for i in (0..shape.len()).rev() {
        strides[i] = acc;
        // Saturating: only a shape with a zero dim can overflow here (any other would need
        // more memory than exists), and the strides of an empty tensor address nothing.
        acc = acc.saturating_mul(shape[i].max(1));
    }
    strides
}

/// Number of elements of a shape (1 for a 0-d shape).
///
/// Panics when the count overflows `usize` (a release build would otherwise wrap it, and a
/// kernel would size its output by the wrapped count). No such tensor can be allocated:
/// creation goes through [`storage_numel`], which returns the error instead, so only a view
/// such as `expand(2**40, 2**40)` can get here; the Python bindings turn the panic into a
/// `RuntimeError`.
pub fn numel(shape: &[usize]) -> usize {
    checked_numel(shape)
        .unwrap_or_else(|| panic!("numel: the shape {shape:?} has more elements than usize holds"))
}

/// Number of elements of a shape, or `None` when the product overflows `usize`. A shape
/// with a zero dim has none, whatever the other dims multiply to.
pub fn checked_numel(shape: &[usize]) -> Option<usize> {
    if shape.contains(&0) {
        return Some(0);
    }
    shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

/// Number of elements of a new tensor of `shape` and `dtype`, or PyTorch's error
/// (`Storage size calculation overflowed with sizes=[...]`) when the element count or its
/// size in bytes does not fit in an address. Whether that many bytes are free is the
/// allocator's question (`Error::OutOfMemory`).
pub fn storage_numel(op: &'static str, shape: &[usize], dtype: DType) -> Result<usize> {
    checked_numel(shape)
        .filter(|n| {
            n.checked_mul(dtype.size_in_bytes())
                .is_some_and(|b| b <= isize::MAX as usize)
        })
        .ok_or_else(|| {
            Error::invalid(
                op,
                format!("Storage size calculation overflowed with sizes={shape:?} ({dtype})"),
            )
        })
}

/// The broadcast shape of two shapes under NumPy rules.
pub fn broadcast_shapes(op: &'static str, a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::shape(
                op,
                format!("shapes {a:?} and {b:?} cannot be broadcast (dim {i}: {da} vs {db})"),
            ));
        };
    }
    Ok(out)
}

/// Normalise a possibly negative dimension index against `ndim` dimensions.
pub fn normalize_dim(op: &'static str, dim: isize, ndim: usize) -> Result<usize> {
    // A 0-d tensor accepts dim 0 and -1, as in PyTorch.
    let n = ndim.max(1) as isize;
    let d = if dim < 0 { dim + n } else { dim };
    if d < 0 || d >= n {
        return Err(Error::index(
            op,
            format!("dimension {dim} out of range for a tensor with {ndim} dimensions"),
        ));
    }
    Ok(d as usize)
}

/// Normalise a list of dims, rejecting repeats. An empty list means "all dims".
pub fn normalize_dims(op: &'static str, dims: &[isize], ndim: usize) -> Result<Vec<usize>> {
    if dims.is_empty() {
        return Ok((0..ndim).collect());
    }
    let mut out = Vec::with_capacity(dims.len());
    for &d in dims {
        let d = normalize_dim(op, d, ndim)?;
        if ndim == 0 {
            continue;
        }
        if out.contains(&d) {
            return Err(Error::invalid(
                op,
                format!("dim {d} appears more than once in {dims:?}"),
            ));
        }
        out.push(d);
    }
    out.sort_unstable();
    Ok(out)
}

impl Layout {
    /// A contiguous row-major layout of `shape` starting at offset 0.
    pub fn contiguous(shape: &[usize]) -> Self {
        Layout {
            shape: Dims::from_slice(shape),
            strides: contiguous_dims(shape),
            offset: 0,
        }
    }

    /// A layout from raw parts. The caller guarantees that every element is inside the storage.
    pub fn from_parts(shape: Vec<usize>, strides: Vec<usize>, offset: usize) -> Self {
        debug_assert_eq!(shape.len(), strides.len());
        Layout {
            shape: Dims::from_slice(&shape),
            strides: Dims::from_slice(&strides),
            offset,
        }
    }

    /// The sizes of each dimension.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }
    /// The stride of each dimension, in elements.
    pub fn strides(&self) -> &[usize] {
        &self.strides
    }
    /// Offset of element `[0, 0, ...]` in the storage, in elements.
    pub fn offset(&self) -> usize {
        self.offset
    }
    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }
    /// Number of elements.
    pub fn numel(&self) -> usize {
        numel(&self.shape)
    }

    /// True when the elements are laid out row-major without gaps (offset may be non-zero).
    pub fn is_contiguous(&self) -> bool {
        let mut expected = 1;
        for i in (0..self.shape.len()).rev() {
            if self.shape[i] != 1 && self.strides[i] != expected {
                return false;
            }
            expected *= self.shape[i];
        }
        true
    }

    /// `Some((start, end))` of the storage range when the layout is contiguous.
    pub fn contiguous_range(&self) -> Option<(usize, usize)> {
        if self.numel() == 0 {
            // An empty view may sit at any offset, even past the end of its (possibly
            // empty) storage: `select(0, 1)` of a [2, 0, 3] tensor has offset 3.
            return Some((0, 0));
        }
        self.is_contiguous()
            .then(|| (self.offset, self.offset + self.numel()))
    }

    /// The same storage locations, each once: every broadcast (stride-0) dim shrunk to
    /// size 1, so a write through the result touches no location twice.
    pub fn without_broadcast_dims(&self) -> Layout {
        let mut l = self.clone();
        for (d, &s) in l.shape.iter_mut().zip(&self.strides) {
            if s == 0 && *d > 1 {
                *d = 1;
            }
        }
        l
    }

    /// One past the largest storage index this layout touches (0 when empty).
    pub fn storage_extent(&self) -> usize {
        if self.numel() == 0 {
            return 0;
        }
        self.offset
            + self
                .shape
                .iter()
                .zip(&self.strides)
                .map(|(&d, &s)| (d - 1) * s)
                .sum::<usize>()
            + 1
    }

    /// Swap two dimensions.
    pub fn transpose(&self, d0: usize, d1: usize) -> Layout {
        let mut l = self.clone();
        l.shape.swap(d0, d1);
        l.strides.swap(d0, d1);
        l
    }

    /// Reorder dimensions; `dims` must be a permutation of `0..ndim`.
    pub fn permute(&self, op: &'static str, dims: &[isize]) -> Result<Layout> {
        let n = self.ndim();
        if dims.len() != n {
            return Err(Error::shape(
                op,
                format!(
                    "permutation {dims:?} has {} dims but the tensor has {n}",
                    dims.len()
                ),
            ));
        }
        let mut seen = vec![false; n];
        let (mut shape, mut strides) = (Dims::new(), Dims::new());
        for &d in dims {
            let d = normalize_dim(op, d, n)?;
            if seen[d] {
                return Err(Error::invalid(op, format!("{dims:?} repeats dim {d}")));
            }
            seen[d] = true;
            shape.push(self.shape[d]);
            strides.push(self.strides[d]);
        }
        Ok(Layout {
            shape,
            strides,
            offset: self.offset,
        })
    }

    /// Elements `start..start+len` of dimension `dim`.
    pub fn narrow(&self, op: &'static str, dim: usize, start: usize, len: usize) -> Result<Layout> {
        let size = self.shape[dim];
        if start > size || start + len > size {
            return Err(Error::index(
                op,
                format!(
                    "range {start}..{} out of bounds for dim {dim} of size {size} (shape {:?})",
                    start + len,
                    self.shape
                ),
            ));
        }
        let mut l = self.clone();
        l.shape[dim] = len;
        if len > 0 {
            l.offset += start * self.strides[dim];
        }
        Ok(l)
    }

    /// Every `step`-th element of `start..end` along `dim` (`step >= 1`, bounds already clamped).
    pub fn slice_step(&self, dim: usize, start: usize, end: usize, step: usize) -> Layout {
        let mut l = self.clone();
        let len = if end > start {
            (end - start).div_ceil(step)
        } else {
            0
        };
        l.shape[dim] = len;
        if len > 0 {
            l.offset += start * self.strides[dim];
        }
        l.strides[dim] = self.strides[dim] * step;
        l
    }

    /// Remove dimension `dim` by fixing its index.
    pub fn select(&self, dim: usize, index: usize) -> Layout {
        let mut l = self.clone();
        l.offset += index * self.strides[dim];
        l.shape.remove(dim);
        l.strides.remove(dim);
        l
    }

    /// Insert a dimension of size 1 at `dim` (0..=ndim).
    pub fn unsqueeze(&self, dim: usize) -> Layout {
        let mut l = self.clone();
        // Any stride works for a size-1 dim; this one keeps contiguous layouts contiguous.
        let stride = if dim < self.ndim() {
            self.strides[dim] * self.shape[dim]
        } else {
            1
        };
        l.shape.insert(dim, 1);
        l.strides.insert(dim, stride);
        l
    }

    /// Remove size-1 dimensions among `dims`.
    pub fn squeeze(&self, dims: &[usize]) -> Layout {
        let (mut shape, mut strides) = (Dims::new(), Dims::new());
        for i in 0..self.ndim() {
            if self.shape[i] == 1 && dims.contains(&i) {
                continue;
            }
            shape.push(self.shape[i]);
            strides.push(self.strides[i]);
        }
        Layout {
            shape,
            strides,
            offset: self.offset,
        }
    }

    /// View this layout with `shape` by broadcasting (stride 0 on expanded dims).
    pub fn broadcast_as(&self, op: &'static str, shape: &[usize]) -> Result<Layout> {
        let n = shape.len();
        if n < self.ndim() {
            return Err(Error::shape(
                op,
                format!(
                    "cannot expand shape {:?} to {shape:?}: the target has fewer dims",
                    self.shape
                ),
            ));
        }
        let extra = n - self.ndim();
        let mut strides: Dims = smallvec::smallvec![0; n];
        for i in 0..n {
            if i < extra {
                continue;
            }
            let (d, s) = (self.shape[i - extra], self.strides[i - extra]);
            if d == shape[i] {
                strides[i] = s;
            } else if d == 1 {
                strides[i] = 0;
            } else {
                return Err(Error::shape(
                    op,
                    format!(
                        "cannot expand shape {:?} to {shape:?} (dim {i}: {d} vs {})",
                        self.shape, shape[i]
                    ),
                ));
            }
        }
        Ok(Layout {
            shape: Dims::from_slice(shape),
            strides,
            offset: self.offset,
        })
    }

    /// Strides that view this layout with `new_shape` without copying, if they exist
    /// (PyTorch's `computeStride`): each group of old dims that merges into contiguous
    /// memory can be split any way.
    pub fn view_as(&self, new_shape: &[usize]) -> Option<Layout> {
        if self.numel() == 0 || new_shape.is_empty() || self.ndim() == 0 {
            // Empty tensors and scalars reshape freely.
            return Some(Layout {
                shape: Dims::from_slice(new_shape),
                strides: contiguous_dims(new_shape),
                offset: self.offset,
            });
        }
        let old_shape = &self.shape;
        let old_strides = &self.strides;
        let mut new_strides: Dims = smallvec::smallvec![0; new_shape.len()];
        let mut view_d = new_shape.len() as isize - 1;
        let mut chunk_base_stride = *old_strides.last().unwrap();
        let mut tensor_numel = 1usize;
        let mut view_numel = 1usize;
        for tensor_d in (0..old_shape.len()).rev() {
            tensor_numel *= old_shape[tensor_d];
            let boundary = tensor_d == 0
                || (old_shape[tensor_d - 1] != 1
                    && old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride);
            if boundary {
                while view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d as usize] == 1)
                {
                    new_strides[view_d as usize] = view_numel * chunk_base_stride;
                    view_numel *= new_shape[view_d as usize];
                    view_d -= 1;
                }
                if view_numel != tensor_numel {
                    return None;
                }
                if tensor_d > 0 {
                    chunk_base_stride = old_strides[tensor_d - 1];
                    tensor_numel = 1;
                    view_numel = 1;
                }
            }
        }
        if view_d != -1 {
            return None;
        }
        Some(Layout {
            shape: Dims::from_slice(new_shape),
            strides: new_strides,
            offset: self.offset,
        })
    }

    /// Merge adjacent dimensions that are contiguous with each other and drop size-1 dims.
    /// Returns (shape, strides) with at least one dimension. Kernels iterate the result.
    pub fn merged(&self) -> (Vec<usize>, Vec<usize>) {
        merge_dims(&self.shape, [&self.strides[..]]).map_or_else(
            || (vec![0], vec![1]),
            |(shape, [strides])| (shape.into_vec(), strides.into_vec()),
        )
    }
}

/// Merge dims of `shape` that are mergeable in every one of `strides` (same shape, `K`
/// layouts), dropping size-1 dims. Returns None when the shape is empty (numel 0).
/// The result always has at least one dim.
pub fn merge_dims<const K: usize>(
    shape: &[usize],
    strides: [&[usize]; K],
) -> Option<(Dims, [Dims; K])> {
    if shape.contains(&0) {
        return None;
    }
    let mut out_shape = Dims::new();
    let mut out_strides: [Dims; K] = std::array::from_fn(|_| Dims::new());
    for i in 0..shape.len() {
        if shape[i] == 1 {
            continue;
        }
        let can_merge = !out_shape.is_empty()
            && strides
                .iter()
                .zip(&out_strides)
                .all(|(s, o)| *o.last().unwrap() == s[i] * shape[i]);
        if can_merge {
            *out_shape.last_mut().unwrap() *= shape[i];
            for (s, o) in strides.iter().zip(out_strides.iter_mut()) {
                *o.last_mut().unwrap() = s[i];
            }
        } else {
            out_shape.push(shape[i]);
            for (s, o) in strides.iter().zip(out_strides.iter_mut()) {
                o.push(s[i]);
            }
        }
    }
    if out_shape.is_empty() {
        out_shape.push(1);
        for o in out_strides.iter_mut() {
            o.push(1);
        }
    }
    Some((out_shape, out_strides))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_counts_that_overflow_are_caught() {
        assert_eq!(checked_numel(&[]), Some(1));
        assert_eq!(checked_numel(&[3, 4]), Some(12));
        assert_eq!(checked_numel(&[1 << 40, 1 << 40]), None);
        assert_eq!(checked_numel(&[1 << 40, 1 << 40, 0]), Some(0));
        assert_eq!(storage_numel("t", &[2, 3], DType::F64).unwrap(), 6);
        // 2^61 elements fit in usize, their 2^64 bytes of f64 do not.
        let e = storage_numel("t", &[1 << 61], DType::F64).unwrap_err();
        assert!(e
            .to_string()
            .contains("overflowed with sizes=[2305843009213693952]"));
        assert!(std::panic::catch_unwind(|| numel(&[usize::MAX, 2])).is_err());
    }

    #[test]
    fn view_of_transposed_needs_copy() {
        let l = Layout::contiguous(&[2, 3]).transpose(0, 1);
        assert!(l.view_as(&[6]).is_none());
        assert!(l.view_as(&[3, 2]).is_some());
        assert!(l.view_as(&[3, 1, 2]).is_some());
    }

    #[test]
    fn view_splits_and_merges_contiguous() {
        let l = Layout::contiguous(&[4, 6]);
        let v = l.view_as(&[2, 2, 3, 2]).unwrap();
        assert_eq!(v.strides(), &[12, 6, 2, 1]);
        let n = Layout::contiguous(&[4, 6]).narrow("t", 1, 0, 3).unwrap();
        assert!(n.view_as(&[12]).is_none());
        assert_eq!(n.view_as(&[4, 3, 1]).unwrap().strides(), &[6, 1, 1]);
    }

    #[test]
    fn merge_dims_merges_contiguous_runs() {
        let l = Layout::contiguous(&[2, 3, 4]);
        assert_eq!(l.merged(), (vec![24], vec![1]));
        let t = l.transpose(1, 2);
        assert_eq!(t.merged(), (vec![2, 4, 3], vec![12, 1, 4]));
        let b = Layout::contiguous(&[3]).broadcast_as("t", &[2, 3]).unwrap();
        assert_eq!(b.merged(), (vec![2, 3], vec![0, 1]));
    }

    #[test]
    fn broadcast_shapes_follows_numpy() {
        assert_eq!(
            broadcast_shapes("t", &[2, 1, 3], &[4, 1]).unwrap(),
            vec![2, 4, 3]
        );
        assert_eq!(broadcast_shapes("t", &[], &[5]).unwrap(), vec![5]);
        assert!(broadcast_shapes("t", &[2, 3], &[4]).is_err());
    }
}
