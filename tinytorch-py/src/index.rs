//! `x[...]` and `x[...] = v` with NumPy/PyTorch indexing: ints (negative from the end),
//! slices with steps, `None`, `...`, and advanced indices — integer tensors or lists (gather
//! along their dims) and bool masks (the selected elements). Basic indexing gives views
//! (shared memory, differentiable); advanced indexing copies, as in PyTorch. Several advanced
//! indices broadcast together; their result dims stand where they were when nothing but ints
//! separates them in the subscript, else first (NumPy's and PyTorch's rule).

use crate::error::IntoPyResult;
use crate::tensor::{Operand, PyTensor};
use pyo3::exceptions::{PyIndexError, PyNotImplementedError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyEllipsis, PyInt, PyList, PySlice, PyTuple};
use tinytorch::{DType, Device, Tensor};

/// One item of a subscript.
enum Item {
    Int(isize),
    Slice(Option<isize>, Option<isize>, isize),
    NewAxis,
    Ellipsis,
    Advanced(Tensor),
}

impl Item {
    /// How many dims of the tensor this item consumes.
    fn consumes(&self) -> usize {
        match self {
            Item::Int(_) | Item::Slice(..) => 1,
            Item::Advanced(t) if t.dtype() == DType::Bool => t.ndim(),
            Item::Advanced(_) => 1,
            Item::NewAxis | Item::Ellipsis => 0,
        }
    }
}

fn item_of(obj: &Bound<'_, PyAny>) -> PyResult<Item> {
    if obj.is_none() {
        return Ok(Item::NewAxis);
    }
    if obj.is_instance_of::<PyEllipsis>() {
        return Ok(Item::Ellipsis);
    }
    if let Ok(t) = obj.cast::<PyTensor>() {
        let t = t.borrow().t.clone();
        if t.ndim() == 0 && t.dtype() != DType::Bool && !t.dtype().is_float() {
            return Ok(Item::Int(
                t.item::<i64>()
                    .or_else(|_| t.item_f64().map(|v| v as i64))
                    .py()? as isize,
            ));
        }
        return Ok(Item::Advanced(t));
    }
    if obj.is_instance_of::<PyInt>() && !obj.is_instance_of::<pyo3::types::PyBool>() {
        return Ok(Item::Int(obj.extract()?));
    }
    if let Ok(s) = obj.cast::<PySlice>() {
        let get = |name: &str| -> PyResult<Option<isize>> {
            let v = s.getattr(name)?;
            if v.is_none() {
                Ok(None)
            } else {
                v.extract().map(Some)
            }
        };
        let step = get("step")?.unwrap_or(1);
        if step <= 0 {
            return Err(PyValueError::new_err("step must be greater than zero"));
        }
        return Ok(Item::Slice(get("start")?, get("stop")?, step));
    }
    if obj.is_instance_of::<PyList>() {
        return Ok(Item::Advanced(crate::creation::from_python(obj, None)?));
    }
    if obj.get_type().name()? == "range" {
        // `x[range(n), target]`: a range indexes as the list of its values.
        let values: Vec<i64> = obj.extract()?;
        let n = values.len();
        return Ok(Item::Advanced(Tensor::from_vec(values, &[n]).py()?));
    }
    // IndexError, as PyTorch (`x[1.5]`), though Python itself would say TypeError.
    Err(PyIndexError::new_err(format!(
        "only integers, slices (`:`), ellipsis (`...`), None and integer or boolean tensors \
         are valid indices (got {})",
        obj.get_type().name()?
    )))
}

/// The items of a subscript with `...` expanded into full slices.
fn items_of(x: &Tensor, key: &Bound<'_, PyAny>) -> PyResult<Vec<Item>> {
    let raw: Vec<Item> = match key.cast::<PyTuple>() {
        Ok(t) => t.iter().map(|k| item_of(&k)).collect::<PyResult<_>>()?,
        Err(_) => vec![item_of(key)?],
    };
    let used: usize = raw.iter().map(Item::consumes).sum();
    if used > x.ndim() {
        return Err(PyIndexError::new_err(format!(
            "too many indices for tensor of dimension {} (got {used})",
            x.ndim()
        )));
    }
    let mut out = Vec::with_capacity(raw.len() + x.ndim());
    let mut seen_ellipsis = false;
    for item in raw {
        if let Item::Ellipsis = item {
            if seen_ellipsis {
                return Err(PyIndexError::new_err(
                    "an index can only have a single ellipsis ('...')",
                ));
            }
            seen_ellipsis = true;
            out.extend((0..x.ndim() - used).map(|_| Item::Slice(None, None, 1)));
        } else {
            out.push(item);
        }
    }
    Ok(out)
}

/// Where an advanced index sits after the basic items are applied: (dim, index).
struct Advanced {
    dim: usize,
    index: Tensor,
}

/// The basic items applied (views), and the advanced indices found, with whether they are
/// adjacent (nothing but ints between them in the subscript).
struct Subscript {
    view: Tensor,
    advanced: Vec<Advanced>,
    adjacent: bool,
}

/// Apply the basic items (views) and find the advanced indices.
fn basic(x: &Tensor, items: Vec<Item>) -> PyResult<Subscript> {
    let mut x = x.clone();
    let mut dim = 0usize;
    let mut advanced = Vec::new();
    // A slice or new axis after an advanced index ends its run; another advanced index after
    // that makes them not adjacent.
    let (mut run_ended, mut adjacent) = (false, true);
    for item in items {
        match item {
            Item::Int(i) => {
                let n = x.shape()[dim] as isize;
                if i < -n || i >= n {
                    return Err(PyIndexError::new_err(format!(
                        "index {i} is out of bounds for dimension {dim} with size {n}"
                    )));
                }
                x = x.select(dim as isize, i).py()?;
            }
            Item::Slice(start, end, step) => {
                x = x.slice(dim as isize, start, end, step as usize).py()?;
                dim += 1;
                run_ended |= !advanced.is_empty();
            }
            Item::NewAxis => {
                x = x.unsqueeze(dim as isize).py()?;
                dim += 1;
                run_ended |= !advanced.is_empty();
            }
            Item::Advanced(index) => {
                // Lists become CPU tensors, and PyTorch takes CPU indices for a tensor on
                // any device.
                let index = if index.device() == Device::Cpu {
                    index.to_device(x.device()).py()?
                } else {
                    index
                };
                adjacent &= !run_ended;
                let k = Item::Advanced(index.clone()).consumes();
                advanced.push(Advanced { dim, index });
                dim += k;
            }
            Item::Ellipsis => unreachable!("expanded by items_of"),
        }
    }
    Ok(Subscript {
        view: x,
        advanced,
        adjacent,
    })
}

/// The advanced index as positions along one dim of `x` with dims `dim..dim + k` merged
/// (a bool mask covers k dims): (x with those dims merged, 1-D int64 positions, the shape
/// the positions take in the result).
fn positions(x: &Tensor, a: &Advanced) -> PyResult<(Tensor, Tensor, Vec<usize>)> {
    let idx = &a.index;
    if idx.dtype() == DType::Bool {
        let k = idx.ndim();
        let covered = &x.shape()[a.dim..a.dim + k];
        if covered != idx.shape() {
            return Err(PyIndexError::new_err(format!(
                "the shape of the mask {:?} does not match the shape of the indexed tensor {:?} at dims {}..{}",
                idx.shape(),
                x.shape(),
                a.dim,
                a.dim + k
            )));
        }
        let merged = if k == 1 {
            x.clone()
        } else if k == 0 {
            x.unsqueeze(a.dim as isize).py()?
        } else {
            x.flatten(a.dim as isize, (a.dim + k - 1) as isize).py()?
        };
        let pos = idx
            .reshape(&[-1])
            .and_then(|m| m.nonzero())
            .and_then(|n| n.reshape(&[-1]))
            .py()?;
        let n = pos.numel();
        return Ok((merged, pos, vec![n]));
    }
    if idx.dtype().is_float() {
        return Err(PyIndexError::new_err(
            "tensors used as indices must be long, int, byte or bool tensors",
        ));
    }
    let flat = idx
        .to_dtype(DType::I64)
        .and_then(|i| i.reshape(&[-1]))
        .py()?;
    // Negative positions count from the end, as for ints.
    let n = x.shape()[a.dim] as i64;
    let flat =
        Tensor::where_cond(&flat.lt_scalar(0).py()?, &flat.add_scalar(n).py()?, &flat).py()?;
    Ok((x.clone(), flat, idx.shape().to_vec()))
}

/// `x[key]`.
pub fn getitem(x: &Tensor, key: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let sub = basic(x, items_of(x, key)?)?;
    let view = sub.view;
    let a = match sub.advanced.len() {
        0 => return Ok(view),
        1 => sub.advanced.into_iter().next().expect("one"),
        _ => return several(&view, &sub.advanced, sub.adjacent)?.gather(&view),
    };
    let (merged, pos, pos_shape) = positions(&view, &a)?;
    let picked = merged.index_select(a.dim as isize, &pos).py()?;
    // The picked positions take the index's shape in place of the indexed dim.
    let mut shape: Vec<isize> = picked.shape()[..a.dim]
        .iter()
        .map(|&d| d as isize)
        .collect();
    shape.extend(pos_shape.iter().map(|&d| d as isize));
    shape.extend(picked.shape()[a.dim + 1..].iter().map(|&d| d as isize));
    picked.reshape(&shape).py()
}

/// `x[key] = value`: a view's elements overwritten (basic indices), or the selected
/// elements (one advanced index) replaced through a scatter along its dim.
pub fn setitem(x: &Tensor, key: &Bound<'_, PyAny>, value: Operand) -> PyResult<()> {
    let sub = basic(x, items_of(x, key)?)?;
    let view = sub.view;
    let as_tensor = |like: &Tensor| -> PyResult<Tensor> {
        match &value {
            Operand::Tensor(t) => Ok(t.clone()),
            Operand::Scalar(s) => Tensor::scalar_tensor(*s, like.dtype(), like.device()).py(),
        }
    };
    let a = match sub.advanced.len() {
        0 => {
            let v = as_tensor(&view)?;
            view.copy_(&v).py()?;
            return Ok(());
        }
        1 => sub.advanced.into_iter().next().expect("one"),
        _ => {
            let v = as_tensor(&view)?;
            return several(&view, &sub.advanced, sub.adjacent)?.scatter(&view, &v);
        }
    };
    let (merged, pos, pos_shape) = positions(&view, &a)?;
    // The target `merged[..., pos, ...]` has the picked shape; the value broadcasts to it.
    let mut picked_shape = merged.shape().to_vec();
    picked_shape[a.dim] = pos.numel();
    let v = as_tensor(&merged)?;
    let mut v_shape: Vec<usize> = merged.shape()[..a.dim].to_vec();
    v_shape.extend(&pos_shape);
    v_shape.extend(&merged.shape()[a.dim + 1..]);
    let v = v
        .broadcast_to(&v_shape)
        .and_then(|v| v.reshape(&picked_shape.iter().map(|&d| d as isize).collect::<Vec<_>>()))
        .and_then(|v| v.to_dtype(merged.dtype()))
        .py()?;
    // Positions along `dim`, broadcast over the other dims, for scatter.
    let mut idx_shape = vec![1isize; merged.ndim()];
    idx_shape[a.dim] = pos.numel() as isize;
    let idx = pos
        .reshape(&idx_shape)
        .and_then(|i| i.broadcast_to(&picked_shape))
        .py()?;
    if !merged.shares_storage(x) {
        return Err(PyNotImplementedError::new_err(
            "assigning through a mask over several dims of a non-contiguous tensor is not supported",
        ));
    }
    let updated = merged.scatter(a.dim as isize, &idx, &v).py()?;
    merged.copy_(&updated).py()?;
    Ok(())
}

/// Several advanced indices as one: every indexed dim of the view with the positions along
/// it (bool masks as their nonzero coordinates), broadcast to one shape `batch`, checked and
/// wrapped (negative from the end), and where the `batch` dims go in the result.
struct Several {
    /// The indexed dims, ascending, and the broadcast positions along each.
    entries: Vec<(usize, Tensor)>,
    batch: Vec<usize>,
    /// Where the batch dims stand in the result: at the first indexed dim, or first.
    at: usize,
}

fn several(x: &Tensor, advanced: &[Advanced], adjacent: bool) -> PyResult<Several> {
    let mut entries: Vec<(usize, Tensor)> = Vec::new();
    for a in advanced {
        let idx = &a.index;
        if idx.dtype() == DType::Bool {
            let covered = &x.shape()[a.dim..a.dim + idx.ndim()];
            if covered != idx.shape() {
                return Err(PyIndexError::new_err(format!(
                    "the shape of the mask {:?} does not match the shape of the indexed tensor {:?} at dim {}",
                    idx.shape(),
                    x.shape(),
                    a.dim
                )));
            }
            let nz = idx.nonzero().py()?; // (count, mask dims)
            for j in 0..idx.ndim() {
                entries.push((a.dim + j, nz.select(1, j as isize).py()?));
            }
        } else if idx.dtype().is_float() {
            return Err(PyIndexError::new_err(
                "tensors used as indices must be long, int, byte or bool tensors",
            ));
        } else {
            entries.push((a.dim, idx.to_dtype(DType::I64).py()?));
        }
    }
    let mut batch: Vec<usize> = Vec::new();
    for (_, t) in &entries {
        batch = tinytorch::tensor::layout::broadcast_shapes("index", &batch, t.shape())
            .map_err(|_| {
                PyIndexError::new_err(format!(
                    "shape mismatch: indexing tensors could not be broadcast together with shapes {:?}",
                    entries.iter().map(|(_, t)| t.shape().to_vec()).collect::<Vec<_>>()
                ))
            })?;
    }
    for (dim, t) in &mut entries {
        let n = x.shape()[*dim] as i64;
        let bad = t
            .lt_scalar(-n)
            .py()?
            .logical_or(&t.ge_scalar(n).py()?)
            .py()?;
        if bad.any().py()?.item::<bool>().py()? {
            let first = t.masked_select(&bad).py()?.to_vec::<i64>().py()?[0];
            return Err(PyIndexError::new_err(format!(
                "index {first} is out of bounds for dimension {dim} with size {n}"
            )));
        }
        // Negative positions count from the end, as for ints.
        let wrapped = Tensor::where_cond(&t.lt_scalar(0).py()?, &t.add_scalar(n).py()?, t).py()?;
        *t = wrapped.broadcast_to(&batch).py()?;
    }
    let at = if adjacent { entries[0].0 } else { 0 };
    Ok(Several { entries, batch, at })
}

impl Several {
    /// The indexed dims first, merged into one of `prod(sizes)` positions, and each element's
    /// position in it: `x` permuted and flattened, and the `batch`-shaped linear index.
    fn merged(&self, x: &Tensor) -> PyResult<(Tensor, Tensor, Vec<usize>)> {
        let dims: Vec<usize> = self.entries.iter().map(|(d, _)| *d).collect();
        let rest: Vec<usize> = (0..x.ndim()).filter(|d| !dims.contains(d)).collect();
        let perm: Vec<isize> = dims.iter().chain(&rest).map(|&d| d as isize).collect();
        let mut linear: Option<Tensor> = None;
        for (d, t) in &self.entries {
            let n = x.shape()[*d] as i64;
            linear = Some(match linear {
                None => t.clone(),
                Some(l) => l.mul_scalar(n).py()?.add(t).py()?,
            });
        }
        let k = dims.len() as isize;
        let moved = x.permute(&perm).py()?.flatten(0, k - 1).py()?;
        let rest_shape = rest.iter().map(|&d| x.shape()[d]).collect();
        Ok((moved, linear.expect("two or more entries"), rest_shape))
    }

    /// The result's order from `(batch..., rest...)`: the batch dims moved to `at`.
    fn placed(&self, t: Tensor) -> PyResult<Tensor> {
        let (nb, nd) = (self.batch.len(), t.ndim());
        let mut perm: Vec<isize> = (nb..nb + self.at).map(|d| d as isize).collect();
        perm.extend((0..nb).map(|d| d as isize));
        perm.extend((nb + self.at..nd).map(|d| d as isize));
        t.permute(&perm).py()
    }

    /// `x[indices]`: a gather of the merged positions (differentiable).
    fn gather(&self, x: &Tensor) -> PyResult<Tensor> {
        let (moved, linear, rest) = self.merged(x)?;
        let picked = moved.index_select(0, &linear.reshape(&[-1]).py()?).py()?;
        let shape: Vec<isize> = self
            .batch
            .iter()
            .chain(&rest)
            .map(|&d| d as isize)
            .collect();
        self.placed(picked.reshape(&shape).py()?)
    }

    /// `x[indices] = v`: the value broadcast to the result's shape and scattered at each
    /// result element's offset in `x`'s row-major order (the indexed dims' positions times
    /// their strides plus the other dims' own), then copied back into `x` (any view).
    fn scatter(&self, x: &Tensor, v: &Tensor) -> PyResult<()> {
        let shape = x.shape();
        let strides = tinytorch::tensor::layout::contiguous_strides(shape);
        let dims: Vec<usize> = self.entries.iter().map(|(d, _)| *d).collect();
        let rest: Vec<usize> = (0..x.ndim()).filter(|d| !dims.contains(d)).collect();
        let nb = self.batch.len();
        let mut result_shape: Vec<usize> = rest[..self.at].iter().map(|&d| shape[d]).collect();
        result_shape.extend(&self.batch);
        result_shape.extend(rest[self.at..].iter().map(|&d| shape[d]));
        // The indexed dims' part of the offset, its batch dims placed at `at`.
        let mut off: Option<Tensor> = None;
        for (d, t) in &self.entries {
            let part = t.mul_scalar(strides[*d] as i64).py()?;
            off = Some(match off {
                None => part,
                Some(o) => o.add(&part).py()?,
            });
        }
        let mut placed = vec![1isize; result_shape.len()];
        for (j, &b) in self.batch.iter().enumerate() {
            placed[self.at + j] = b as isize;
        }
        let mut off = off.expect("two or more entries").reshape(&placed).py()?;
        // Each other dim adds its own positions times its stride, along its result dim.
        for (j, &d) in rest.iter().enumerate() {
            let at = if j < self.at { j } else { j + nb };
            let mut along = vec![1isize; result_shape.len()];
            along[at] = shape[d] as isize;
            let positions = Tensor::arange(0.0, shape[d] as f64, 1.0, DType::I64, x.device())
                .and_then(|a| a.mul_scalar(strides[d] as i64))
                .and_then(|a| a.reshape(&along))
                .py()?;
            off = off.add(&positions).py()?;
        }
        let off = off
            .broadcast_to(&result_shape)
            .and_then(|o| o.reshape(&[-1]))
            .py()?;
        let v = v
            .to_dtype(x.dtype())
            .and_then(|v| v.broadcast_to(&result_shape))
            .and_then(|v| v.reshape(&[-1]))
            .py()?;
        let dims_of = |s: &[usize]| s.iter().map(|&d| d as isize).collect::<Vec<_>>();
        // From `x` itself, not detached: the elements not written keep their gradient.
        let updated = x
            .contiguous()
            .and_then(|c| c.reshape(&[-1]))
            .and_then(|flat| flat.scatter(0, &off, &v))
            .and_then(|u| u.reshape(&dims_of(shape)))
            .py()?;
        x.copy_(&updated).py()?;
        Ok(())
    }
}

#[pymethods]
impl PyTensor {
    fn __getitem__(&self, key: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        Ok(getitem(&self.t, key)?.into())
    }
    fn __setitem__(&self, key: &Bound<'_, PyAny>, value: Operand) -> PyResult<()> {
        setitem(&self.t, key, value)
    }
}
