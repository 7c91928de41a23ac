//! `torch.Tensor`: the Python class is the Rust [`Tensor`] handle itself (one `Arc`, no
//! copy of the data). This file holds what a tensor is — attributes, conversions to Python
//! values, printing and autograd; the operations are in ops.rs, indexing in index.rs.

use crate::convert::{device_of, opt_dtype, scalar_of, PyDType, PyDevice};
use crate::error::IntoPyResult;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use tinytorch::{DType, Device, Scalar, Tensor};

/// A tensor (`torch.Tensor`); `nn.Parameter` is a Python subclass.
#[pyclass(module = "tinytorch", name = "Tensor", subclass, weakref)]
#[derive(Clone)]
pub struct PyTensor {
    pub t: Tensor,
}

impl PyTensor {
    /// `float(x)` and `int(x)` of a tensor that is not one element: ValueError, as PyTorch
    /// (where `x.item()` raises RuntimeError).
    fn one_element(&self) -> PyResult<()> {
        if self.t.numel() == 1 {
            return Ok(());
        }
        Err(PyValueError::new_err(format!(
            "only one element tensors can be converted to Python scalars (got {} elements)",
            self.t.numel()
        )))
    }
}

impl From<Tensor> for PyTensor {
    fn from(t: Tensor) -> Self {
        PyTensor { t }
    }
}

/// Run `f` with the GIL released when it is worth it: other Python threads run while a
/// large kernel does, and a tiny op does not pay the release (about 50 ns).
pub fn nogil<T: Send>(
    py: Python<'_>,
    work: usize,
    f: impl FnOnce() -> tinytorch::Result<T> + Send,
) -> PyResult<T> {
    if work >= 1 << 14 {
        py.detach(f).py()
    } else {
        f().py()
    }
}

/// A tensor argument or a Python number (`x + y`, `x + 2`, `x * 2.5`).
pub enum Operand {
    Tensor(Tensor),
    Scalar(Scalar),
}

impl<'a, 'py> FromPyObject<'a, 'py> for Operand {
    type Error = PyErr;
    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(t) = obj.cast::<PyTensor>() {
            return Ok(Operand::Tensor(t.borrow().t.clone()));
        }
        scalar_of(&obj).map(Operand::Scalar)
    }
}

/// Python's value for one element of `dtype` given as f64 (ints and bools as such).
fn element(py: Python<'_>, dtype: DType, v: f64) -> PyResult<Py<PyAny>> {
    Ok(match dtype {
        DType::Bool => (v != 0.0).into_pyobject(py)?.to_owned().into_any().unbind(),
        DType::U8 | DType::I32 | DType::I64 => (v as i64).into_pyobject(py)?.into_any().unbind(),
        _ => v.into_pyobject(py)?.into_any().unbind(),
    })
}

/// Nested lists of `shape` from row-major Python values.
fn nest(
    py: Python<'_>,
    shape: &[usize],
    flat: &mut std::vec::IntoIter<Py<PyAny>>,
) -> PyResult<Py<PyAny>> {
    match shape.split_first() {
        None => Ok(flat.next().expect("one value per element")),
        Some((&n, rest)) => {
            let items = (0..n)
                .map(|_| nest(py, rest, flat))
                .collect::<PyResult<Vec<_>>>()?;
            Ok(PyList::new(py, items)?.into_any().unbind())
        }
    }
}

/// The element values of `t` as Python numbers, row-major (i64 exactly, not via f64).
fn values(py: Python<'_>, t: &Tensor) -> PyResult<Vec<Py<PyAny>>> {
    let t = t.cpu().py()?;
    if t.dtype() == DType::I64 {
        return t
            .to_vec::<i64>()
            .py()?
            .into_iter()
            .map(|v| Ok(v.into_pyobject(py)?.into_any().unbind()))
            .collect();
    }
    t.to_vec_f64()
        .py()?
        .into_iter()
        .map(|v| element(py, t.dtype(), v))
        .collect()
}

impl PyTensor {
    /// The tensor converted to `dtype`, for `.float()` and friends.
    fn cast(&self, dtype: DType) -> PyResult<PyTensor> {
        Ok(self.t.to_dtype(dtype).py()?.into())
    }
}

/// A dtype shorthand (`x.float()`, `x.long()`, ...): [`PyTensor::cast`] to `$dtype`.
macro_rules! cast_method {
    ($name:ident, $dtype:ident) => {
        #[pymethods]
        impl PyTensor {
            fn $name(&self) -> PyResult<PyTensor> {
                self.cast(DType::$dtype)
            }
        }
    };
}
cast_method!(float, F32);
cast_method!(double, F64);
cast_method!(half, F16);
cast_method!(bfloat16, BF16);
cast_method!(long, I64);
cast_method!(int, I32);
cast_method!(byte, U8);
cast_method!(bool, Bool);

#[pymethods]
impl PyTensor {
    /// `Tensor(data)`, mainly for `nn.Parameter(tensor)`: a tensor argument is shared (a
    /// detached handle on the same memory), nested lists are copied as float32. With
    /// `_same_handle`, the new object stands for `data`'s very handle (its gradient slot
    /// included): how a Python Module exposes the parameters of a Rust layer.
    #[new]
    #[pyo3(signature = (data=None, requires_grad=false, _same_handle=false))]
    fn new(
        data: Option<&Bound<'_, PyAny>>,
        requires_grad: bool,
        _same_handle: bool,
    ) -> PyResult<Self> {
        let t = match data {
            None => Tensor::zeros(&[0], DType::F32, Device::Cpu).py()?,
            Some(d) => match d.cast::<PyTensor>() {
                Ok(t) if _same_handle => return Ok(t.borrow().t.clone().into()),
                Ok(t) => t.borrow().t.detach(),
                Err(_) => crate::creation::from_python(d, Some(DType::F32))?,
            },
        };
        let t = if requires_grad {
            t.requires_grad_(true).py()?
        } else {
            t
        };
        Ok(t.into())
    }

    // ---- what it is -----------------------------------------------------------------

    /// The shape, as a tuple (`torch.Size` in PyTorch).
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.t.shape())
    }
    /// `size()` (the shape) or `size(dim)`.
    #[pyo3(signature = (dim=None))]
    fn size<'py>(&self, py: Python<'py>, dim: Option<isize>) -> PyResult<Py<PyAny>> {
        match dim {
            None => Ok(self.shape(py)?.into_any().unbind()),
            Some(d) => Ok(self.t.size(d).py()?.into_pyobject(py)?.into_any().unbind()),
        }
    }
    fn dim(&self) -> usize {
        self.t.ndim()
    }
    #[getter]
    fn ndim(&self) -> usize {
        self.t.ndim()
    }
    fn numel(&self) -> usize {
        self.t.numel()
    }
    fn nelement(&self) -> usize {
        self.t.numel()
    }
    fn element_size(&self) -> usize {
        self.t.dtype().size_in_bytes()
    }
    #[getter]
    fn dtype(&self) -> PyDType {
        PyDType(self.t.dtype())
    }
    #[getter]
    fn device(&self) -> PyDevice {
        PyDevice(self.t.device())
    }
    #[getter]
    fn is_cuda(&self) -> bool {
        self.t.device().is_cuda()
    }
    fn is_floating_point(&self) -> bool {
        self.t.dtype().is_float()
    }
    fn is_contiguous(&self) -> bool {
        self.t.is_contiguous()
    }
    fn stride<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.t.stride())
    }
    fn storage_offset(&self) -> usize {
        self.t.storage_offset()
    }
    fn data_ptr(&self) -> usize {
        self.t.data_ptr()
    }
    fn __len__(&self) -> PyResult<usize> {
        self.t
            .shape()
            .first()
            .copied()
            .ok_or_else(|| PyTypeError::new_err("len() of a 0-d tensor"))
    }
    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        // Identity, as PyTorch: tensors are dict keys (optimizer state) by object.
        slf.as_ptr() as isize
    }

    // ---- to Python and back ---------------------------------------------------------

    fn __repr__(&self) -> String {
        self.t.to_string()
    }
    /// The value of a one-element tensor as a Python number.
    fn item(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if self.t.numel() != 1 {
            return Err(PyRuntimeError::new_err(format!(
                "a Tensor with {} elements cannot be converted to Scalar",
                self.t.numel()
            )));
        }
        Ok(values(py, &self.t)?.remove(0))
    }
    /// `for row in x`: the sub-tensors along dim 0 (`unbind(0)`, as PyTorch iterates).
    /// A 0-d tensor has no dim 0 to iterate: TypeError, as PyTorch, where the default
    /// `__getitem__` protocol would hand out an iterator that fails only when advanced.
    fn __iter__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        if slf.borrow().t.ndim() == 0 {
            return Err(PyTypeError::new_err("iteration over a 0-d tensor"));
        }
        Ok(slf
            .call_method1("unbind", (0,))?
            .try_iter()?
            .into_any()
            .unbind())
    }
    /// Nested lists of Python numbers (a number for a 0-d tensor).
    fn tolist(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let flat = values(py, &self.t)?;
        nest(py, self.t.shape(), &mut flat.into_iter())
    }
    fn __float__(&self, py: Python<'_>) -> PyResult<f64> {
        self.one_element()?;
        self.item(py)?.extract::<f64>(py)
    }
    fn __int__(&self, py: Python<'_>) -> PyResult<i64> {
        self.one_element()?;
        let v = self.item(py)?;
        v.extract::<i64>(py)
            .or_else(|_| v.extract::<f64>(py).map(|f| f.trunc() as i64))
    }
    fn __index__(&self, py: Python<'_>) -> PyResult<i64> {
        if self.t.dtype().is_float() {
            return Err(PyTypeError::new_err(
                "only integer tensors of a single element can be converted to an index",
            ));
        }
        self.item(py)?.extract::<i64>(py)
    }
    fn __bool__(&self) -> PyResult<bool> {
        if self.t.numel() != 1 {
            return Err(PyRuntimeError::new_err(format!(
                "Boolean value of Tensor with {} values is ambiguous",
                self.t.numel()
            )));
        }
        Ok(self.t.item_f64().py()? != 0.0)
    }
    /// NumPy's array interface: `numpy.asarray(t)` (and `t.numpy()`) share this CPU tensor's
    /// memory, strides included, and keep the tensor alive.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if !self.t.device().is_cpu() {
            return Err(PyTypeError::new_err(format!(
                "can't convert {} device type tensor to numpy; use .cpu() first",
                self.t.device()
            )));
        }
        if self.t.requires_grad() {
            return Err(PyRuntimeError::new_err(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.",
            ));
        }
        let typestr = match self.t.dtype() {
            DType::Bool => "|b1",
            DType::U8 => "|u1",
            DType::I32 => "<i4",
            DType::I64 => "<i8",
            DType::F16 => "<f2",
            DType::F32 => "<f4",
            DType::F64 => "<f8",
            DType::BF16 => {
                return Err(PyTypeError::new_err(
                    "Got unsupported ScalarType BFloat16 (NumPy has no bfloat16)",
                ))
            }
        };
        let size = self.t.dtype().size_in_bytes();
        let strides: Vec<usize> = self.t.stride().iter().map(|s| s * size).collect();
        let d = PyDict::new(py);
        d.set_item("version", 3)?;
        d.set_item("shape", PyTuple::new(py, self.t.shape())?)?;
        d.set_item("strides", PyTuple::new(py, strides)?)?;
        d.set_item("typestr", typestr)?;
        d.set_item("data", (self.t.data_ptr(), false))?;
        Ok(d)
    }

    /// `t.numpy()`: a NumPy array sharing this CPU tensor's memory.
    fn numpy<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.py().import("numpy")?.call_method1("asarray", (slf,))
    }

    // ---- copies and conversions -----------------------------------------------------

    /// `t.data`: the same memory without autograd history and with a version counter of its
    /// own, as in PyTorch: in-place writes through it are not seen by autograd's checks
    /// (`detach()` shares the counter, so they are).
    #[getter]
    fn data(&self) -> PyTensor {
        self.t.data_alias().into()
    }
    /// `t._version`: the number of in-place writes to this tensor, its views and its
    /// `detach()`ed handles (autograd compares it with the version saved for backward).
    #[getter]
    fn _version(&self) -> u64 {
        self.t.version()
    }
    /// `t._base`: the tensor this view was made from, or None.
    #[getter]
    fn _base(&self) -> Option<PyTensor> {
        self.t.view_base().map(Into::into)
    }
    /// `t.data = other`: this object now stands for `other`'s memory (how `Module.to` moves
    /// parameters while optimizers keep the same objects); `requires_grad` is kept.
    #[setter(data)]
    fn set_data(&mut self, other: PyRef<'_, PyTensor>) -> PyResult<()> {
        let requires_grad = self.t.requires_grad();
        self.t = other.t.detach().requires_grad_(requires_grad).py()?;
        Ok(())
    }

    /// `copy.deepcopy(t)`: a copy of the values; a leaf that requires grad stays one.
    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let copy = self.t.detach().contiguous_copy().py()?;
        Ok(copy
            .requires_grad_(self.t.requires_grad() && self.t.is_leaf())
            .py()?
            .into())
    }
    fn clone(&self) -> PyResult<PyTensor> {
        Ok(self.t.contiguous_copy().py()?.into())
    }
    fn detach(&self) -> PyTensor {
        self.t.detach().into()
    }
    /// `detach_()`: this object becomes a leaf outside the graph (no grad_fn, no
    /// requires_grad), sharing the same memory; returns it.
    fn detach_(mut slf: PyRefMut<'_, Self>) -> PyRefMut<'_, Self> {
        slf.t = slf.t.detach();
        slf
    }
    /// `contiguous(memory_format=torch.contiguous_format)`: TinyTorch's tensors are
    /// row-major, so every memory format gives the same (row-major) tensor.
    #[pyo3(signature = (memory_format=None))]
    fn contiguous(&self, memory_format: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let _ = memory_format;
        Ok(self.t.contiguous().py()?.into())
    }
    /// `to(dtype)`, `to(device)`, `to(device, dtype)`, `to(other_tensor)`, or keywords.
    /// `non_blocking` changes nothing (copies finish before returning); `memory_format`
    /// neither (TinyTorch's tensors are row-major).
    #[pyo3(signature = (*args, dtype=None, device=None, non_blocking=false, copy=false, memory_format=None))]
    fn to(
        &self,
        args: &Bound<'_, PyTuple>,
        dtype: Option<&Bound<'_, PyAny>>,
        device: Option<&Bound<'_, PyAny>>,
        non_blocking: bool,
        copy: bool,
        memory_format: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let _ = (non_blocking, memory_format);
        let mut to_dtype = opt_dtype(dtype)?;
        let mut to_device = match device {
            Some(d) if !d.is_none() => Some(device_of(d)?),
            _ => None,
        };
        for a in args.iter() {
            // `x.to(None)` and `x.to(None, dtype)`: None leaves the device as it is.
            if a.is_none() {
                continue;
            }
            if let Ok(d) = a.cast::<PyDType>() {
                to_dtype = Some(d.get().0);
            } else if let Ok(t) = a.cast::<PyTensor>() {
                let t = &t.borrow().t;
                to_dtype = Some(t.dtype());
                to_device = Some(t.device());
            } else {
                to_device = Some(device_of(&a)?);
            }
        }
        let mut t = self.t.clone();
        if let Some(d) = to_device {
            t = t.to_device(d).py()?;
        }
        if let Some(dt) = to_dtype {
            t = t.to_dtype(dt).py()?;
        }
        if copy && t.shares_storage(&self.t) {
            t = t.contiguous_copy().py()?;
        }
        Ok(t.into())
    }
    /// `cuda(device=None, non_blocking=False)`; the copy finishes before returning.
    #[pyo3(signature = (device=None, non_blocking=false))]
    fn cuda(&self, device: Option<usize>, non_blocking: bool) -> PyResult<PyTensor> {
        let _ = non_blocking;
        Ok(self
            .t
            .to_device(Device::Cuda(device.unwrap_or(0)))
            .py()?
            .into())
    }
    fn cpu(&self) -> PyResult<PyTensor> {
        Ok(self.t.cpu().py()?.into())
    }
    /// `type_as(other)`: this tensor in `other`'s dtype.
    fn type_as(&self, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        self.cast(other.t.dtype())
    }

    // ---- autograd ---------------------------------------------------------------------

    #[getter]
    fn requires_grad(&self) -> bool {
        self.t.requires_grad()
    }
    #[setter(requires_grad)]
    fn set_requires_grad(&mut self, value: bool) -> PyResult<()> {
        self.t = self.t.requires_grad_(value).py()?;
        Ok(())
    }
    /// `requires_grad_(True)`: in place, returns the tensor.
    #[pyo3(signature = (requires_grad=true))]
    fn requires_grad_(
        mut slf: PyRefMut<'_, Self>,
        requires_grad: bool,
    ) -> PyResult<PyRefMut<'_, Self>> {
        slf.t = slf.t.requires_grad_(requires_grad).py()?;
        Ok(slf)
    }
    #[getter]
    fn is_leaf(&self) -> bool {
        self.t.is_leaf()
    }
    /// The accumulated gradient, or None.
    #[getter]
    fn grad(&self) -> Option<PyTensor> {
        self.t.grad().map(Into::into)
    }
    #[setter(grad)]
    fn set_grad(&self, grad: Option<PyRef<'_, PyTensor>>) -> PyResult<()> {
        if let Some(g) = &grad {
            if g.t.shape() != self.t.shape() {
                return Err(PyRuntimeError::new_err(format!(
                    "assigned grad has data of a different size: {:?} vs the tensor's {:?}",
                    g.t.shape(),
                    self.t.shape()
                )));
            }
        }
        self.t.set_grad(grad.map(|g| g.t.clone()));
        Ok(())
    }
    /// The name of the backward node that made this tensor (None for leaves).
    #[getter]
    fn grad_fn(&self) -> Option<GradFn> {
        self.t.grad_fn_name().map(|name| GradFn { name })
    }
    /// `backward(gradient=None, retain_graph=None)`.
    #[pyo3(signature = (gradient=None, retain_graph=None, create_graph=false))]
    fn backward(
        &self,
        py: Python<'_>,
        gradient: Option<PyRef<'_, PyTensor>>,
        retain_graph: Option<bool>,
        create_graph: bool,
    ) -> PyResult<()> {
        let g = gradient.map(|g| g.t.clone());
        let t = self.t.clone();
        let options = tinytorch::autograd::BackwardOptions {
            retain_graph,
            create_graph,
        };
        py.detach(|| t.backward_with_options(g.as_ref(), options))
            .py()
    }

    /// `register_hook(hook)`: `hook(grad)` runs when backward computes this tensor's
    /// gradient and may return a replacement; returns a handle with `remove()`.
    fn register_hook(&self, hook: Py<PyAny>) -> PyResult<crate::autograd::PyHookHandle> {
        crate::autograd::register_hook(&self.t, hook)
    }

    /// `retain_grad()`: keep this non-leaf's gradient in `.grad`.
    fn retain_grad(&self) -> PyResult<()> {
        self.t.retain_grad().py()
    }

    /// True when this non-leaf keeps its gradient in `.grad`.
    #[getter]
    fn retains_grad(&self) -> bool {
        self.t.retains_grad()
    }
}

/// A tensor's `grad_fn`: the name of the backward node (`<MulBackward0>`).
#[pyclass(module = "tinytorch", name = "GradFn", frozen)]
pub struct GradFn {
    name: &'static str,
}

#[pymethods]
impl GradFn {
    /// PyTorch's node name (`MulBackward0`).
    fn name(&self) -> String {
        tinytorch::tensor::grad_fn_display(self.name)
    }
    fn __repr__(&self) -> String {
        format!("<{} object>", self.name())
    }
}

/// Error for an argument value outside what an op accepts.
pub fn bad_value(msg: impl Into<String>) -> PyErr {
    PyValueError::new_err(msg.into())
}
