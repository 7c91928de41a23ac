//! `x[...]` and `x[...] = v` with NumPy/PyTorch indexing: ints (negative from the end),
//! slices with steps, `None`, `...`, and one advanced index — an integer tensor or list
//! (gather along that dim) or a bool mask (the selected elements). Basic indexing gives views
//! (shared memory, differentiable); an advanced index copies, as in PyTorch. Two or more
//! advanced indices in one subscript are not supported yet (a clear error).

use crate::error::IntoPyResult;
use crate::tensor::{Operand, PyTensor};
use pyo3::exceptions::{PyIndexError, PyNotImplementedError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyEllipsis, PyInt, PyList, PySlice, PyTuple};
use tinytorch::{DType, Tensor};

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
    Err(PyTypeError::new_err(format!(
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

/// Apply the basic items (views) and find the one advanced index, if any.
fn basic(x: &Tensor, items: Vec<Item>) -> PyResult<(Tensor, Option<Advanced>)> {
    let mut x = x.clone();
    let mut dim = 0usize;
    let mut advanced = None;
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
            }
            Item::NewAxis => {
                x = x.unsqueeze(dim as isize).py()?;
                dim += 1;
            }
            Item::Advanced(index) => {
                if advanced.is_some() {
                    return Err(PyNotImplementedError::new_err(
                        "indexing with two or more tensors or lists in one subscript is not supported",
                    ));
                }
                let k = Item::Advanced(index.clone()).consumes();
                advanced = Some(Advanced { dim, index });
                dim += k;
            }
            Item::Ellipsis => unreachable!("expanded by items_of"),
        }
    }
    Ok((x, advanced))
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
    let (view, advanced) = basic(x, items_of(x, key)?)?;
    let Some(a) = advanced else { return Ok(view) };
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
    let (view, advanced) = basic(x, items_of(x, key)?)?;
    let as_tensor = |like: &Tensor| -> PyResult<Tensor> {
        match &value {
            Operand::Tensor(t) => Ok(t.clone()),
            Operand::Scalar(s) => Tensor::scalar_tensor(*s, like.dtype(), like.device()).py(),
        }
    };
    let Some(a) = advanced else {
        let v = as_tensor(&view)?;
        view.copy_(&v).py()?;
        return Ok(());
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

#[pymethods]
impl PyTensor {
    fn __getitem__(&self, key: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        Ok(getitem(&self.t, key)?.into())
    }
    fn __setitem__(&self, key: &Bound<'_, PyAny>, value: Operand) -> PyResult<()> {
        setitem(&self.t, key, value)
    }
}
