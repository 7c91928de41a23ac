//! Python values to TinyTorch's and back: `torch.dtype` and `torch.device` objects, Python
//! numbers as [`Scalar`]s (`2` and `2.0` stay distinct, as PyTorch needs), shapes given as
//! `*sizes` or one sequence, and dims given as an int or a sequence.

use crate::error::IntoPyResult;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PySequence, PyString, PyTuple};
use tinytorch::{DType, Device, Scalar, Tensor};

/// `torch.dtype`: prints as `torch.float32`, compares and hashes by value.
#[pyclass(module = "tinytorch", name = "dtype", frozen, eq, hash)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDType(pub DType);

#[pymethods]
impl PyDType {
    fn __repr__(&self) -> String {
        format!("torch.{}", self.0.torch_name())
    }
    /// True for float16, bfloat16, float32 and float64.
    #[getter]
    fn is_floating_point(&self) -> bool {
        self.0.is_float()
    }
    /// True for the dtypes with negative values: the floats, int32 and int64.
    #[getter]
    fn is_signed(&self) -> bool {
        !matches!(self.0, DType::Bool | DType::U8)
    }
    /// Bytes per element.
    #[getter]
    fn itemsize(&self) -> usize {
        self.0.size_in_bytes()
    }
}

/// `torch.device`: `device("cpu")`, `device("cuda:1")`, `device("cuda", 1)`.
#[pyclass(module = "tinytorch", name = "device", frozen, eq, hash)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDevice(pub Device);

#[pymethods]
impl PyDevice {
    #[new]
    #[pyo3(signature = (kind, index=None))]
    fn new(kind: &str, index: Option<usize>) -> PyResult<Self> {
        let d: Device = kind
            .parse()
            .map_err(|e: tinytorch::Error| PyRuntimeError::new_err(e.to_string()))?;
        Ok(PyDevice(match (d, index) {
            (Device::Cuda(_), Some(i)) => Device::Cuda(i),
            (Device::Cpu, Some(_)) => {
                return Err(PyValueError::new_err("the cpu device takes no index"))
            }
            (d, None) => d,
        }))
    }
    /// `"cpu"` or `"cuda"`.
    #[getter]
    fn r#type(&self) -> &'static str {
        match self.0 {
            Device::Cpu => "cpu",
            Device::Cuda(_) => "cuda",
        }
    }
    /// The CUDA ordinal, None for the CPU.
    #[getter]
    fn index(&self) -> Option<usize> {
        match self.0 {
            Device::Cpu => None,
            Device::Cuda(i) => Some(i),
        }
    }
    fn __repr__(&self) -> String {
        match self.0 {
            Device::Cpu => "device(type='cpu')".into(),
            Device::Cuda(i) => format!("device(type='cuda', index={i})"),
        }
    }
    fn __str__(&self) -> String {
        self.0.to_string()
    }
}

/// A device argument: a `torch.device` or a string such as `"cuda:0"`.
pub fn device_of(obj: &Bound<'_, PyAny>) -> PyResult<Device> {
    if let Ok(d) = obj.cast::<PyDevice>() {
        return Ok(d.get().0);
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return s
            .extract::<String>()?
            .parse()
            .map_err(|e: tinytorch::Error| PyRuntimeError::new_err(e.to_string()));
    }
    Err(PyTypeError::new_err(format!(
        "expected a torch.device or a string, got {}",
        obj.get_type().name()?
    )))
}

/// An optional device argument (None: the CPU).
pub fn opt_device(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Device> {
    match obj {
        Some(o) if !o.is_none() => device_of(o),
        _ => Ok(Device::Cpu),
    }
}

/// A Python number as a TinyTorch scalar: bool, int or float (bool first: it is an int).
pub fn scalar_of(obj: &Bound<'_, PyAny>) -> PyResult<Scalar> {
    if obj.is_instance_of::<PyBool>() {
        return Ok(Scalar::Bool(obj.extract()?));
    }
    if obj.is_instance_of::<PyInt>() {
        return Ok(Scalar::Int(obj.extract()?));
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(Scalar::Float(obj.extract()?));
    }
    Err(PyTypeError::new_err(format!(
        "expected a number, got {}",
        obj.get_type().name()?
    )))
}

/// A Python number (bool, int or float) as a [`Scalar`] argument.
pub struct PyScalar(pub Scalar);

impl<'a, 'py> FromPyObject<'a, 'py> for PyScalar {
    type Error = PyErr;
    /// A Python number, or a one-element tensor's value (`add_(t, alpha=lr_tensor)`, as
    /// PyTorch converts a tensor argument to a Scalar).
    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(t) = obj.cast::<crate::tensor::PyTensor>() {
            let t = t.borrow().t.clone();
            if t.numel() != 1 {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                    "a Tensor with {} elements cannot be converted to Scalar",
                    t.numel()
                )));
            }
            let v = t.item_f64().py()?;
            return Ok(PyScalar(match t.dtype() {
                DType::Bool => Scalar::Bool(v != 0.0),
                DType::I64 => Scalar::Int(t.item::<i64>().py()?),
                DType::U8 | DType::I32 => Scalar::Int(v as i64),
                _ => Scalar::Float(v),
            }));
        }
        scalar_of(&obj).map(PyScalar)
    }
}

/// A shape: `(2, 3)`, `[2, 3]`, or the `*sizes` of `zeros(2, 3)` (one sequence argument is
/// the shape itself).
pub fn shape_of(args: &Bound<'_, PyTuple>) -> PyResult<Vec<isize>> {
    if args.len() == 1 {
        let first = args.get_item(0)?;
        if let Ok(seq) = first.cast::<PySequence>() {
            return seq.extract();
        }
    }
    args.extract()
}

/// [`shape_of`] for sizes that must be non-negative.
pub fn sizes_of(args: &Bound<'_, PyTuple>) -> PyResult<Vec<usize>> {
    shape_of(args)?
        .into_iter()
        .map(|d| {
            usize::try_from(d).map_err(|_| {
                PyRuntimeError::new_err(format!(
                    "Trying to create tensor with negative dimension {d}: {:?}",
                    shape_of(args).unwrap_or_default()
                ))
            })
        })
        .collect()
}

/// A `dim` argument: None (all dims: an empty list), an int, or a sequence of ints.
pub fn dims_of(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<isize>> {
    match obj {
        None => Ok(vec![]),
        Some(o) if o.is_none() => Ok(vec![]),
        Some(o) => match o.extract::<isize>() {
            Ok(d) => Ok(vec![d]),
            Err(_) => o.extract(),
        },
    }
}

/// An optional dtype argument.
pub fn opt_dtype(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<DType>> {
    match obj {
        Some(o) if !o.is_none() => Ok(Some(
            o.cast::<PyDType>()
                .map_err(|_| {
                    PyTypeError::new_err("dtype must be a torch.dtype such as torch.float32")
                })?
                .get()
                .0,
        )),
        _ => Ok(None),
    }
}

/// `t` cast to the `dtype=` argument of an op (`sum(dtype=...)`, `softmax(dtype=...)`), or
/// `t` itself when the argument is absent or None.
pub fn cast_to_opt_dtype(t: &Tensor, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Tensor> {
    match opt_dtype(dtype)? {
        Some(d) => t.to_dtype(d).py(),
        None => Ok(t.clone()),
    }
}

/// The module attributes `torch.float32`, `torch.long`, ... (name, dtype).
pub const DTYPE_NAMES: &[(&str, DType)] = &[
    ("float32", DType::F32),
    ("float", DType::F32),
    ("float64", DType::F64),
    ("double", DType::F64),
    ("float16", DType::F16),
    ("half", DType::F16),
    ("bfloat16", DType::BF16),
    ("int64", DType::I64),
    ("long", DType::I64),
    ("int32", DType::I32),
    ("int", DType::I32),
    ("uint8", DType::U8),
    ("bool", DType::Bool),
];
