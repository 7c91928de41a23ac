//! Making tensors from Python: `tensor(data)`, and the creation functions with PyTorch's
//! `dtype=`, `device=`, `requires_grad=` keywords and defaults (float32 for floats, int64 for
//! ints, a dtype inferred from `full`'s value and `arange`'s bounds).

use crate::convert::{cast_to_opt_dtype, opt_device, opt_dtype, scalar_of, sizes_of};
use crate::error::IntoPyResult;
use crate::tensor::PyTensor;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyFloat, PyInt, PySequence, PyString, PyTuple};
use tinytorch::{DType, Device, Scalar, Tensor};

/// The most levels of nested sequences `tensor()` reads (far more dims than any model uses;
/// a bound keeps a hostile nesting from exhausting the stack).
const MAX_NESTING: usize = 64;

/// The leaves of nested sequences, row-major, and the shape they form.
fn flatten<'py>(
    obj: &Bound<'py, PyAny>,
    depth: usize,
    shape: &mut Vec<usize>,
    out: &mut Vec<Scalar>,
) -> PyResult<()> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        let t = &t.borrow().t;
        if t.numel() != 1 || t.ndim() != 0 {
            return Err(PyValueError::new_err(
                "only 0-d tensors can be elements of a nested list given to tensor()",
            ));
        }
        let v = t.item_f64().py()?;
        out.push(match t.dtype() {
            DType::Bool => Scalar::Bool(v != 0.0),
            d if d.is_float() => Scalar::Float(v),
            _ => Scalar::Int(v as i64),
        });
        return check_leaf_depth(depth, shape);
    }
    if obj.is_instance_of::<PyBool>()
        || obj.is_instance_of::<PyInt>()
        || obj.is_instance_of::<PyFloat>()
    {
        out.push(scalar_of(obj)?);
        return check_leaf_depth(depth, shape);
    }
    let not_a_number = || {
        PyTypeError::new_err(format!(
            "tensor() takes numbers and nested sequences of numbers, got {}",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    };
    // A string is a sequence of strings, each of which is one again: without this check the
    // recursion below would never end.
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
        return Err(not_a_number());
    }
    if depth >= MAX_NESTING {
        return Err(PyValueError::new_err(format!(
            "tensor(): nesting deeper than {MAX_NESTING} levels"
        )));
    }
    let seq = obj.cast::<PySequence>().map_err(|_| not_a_number())?;
    let n = seq.len()?;
    if depth == shape.len() {
        if !out.is_empty() {
            return Err(ragged());
        }
        shape.push(n);
    } else if shape[depth] != n {
        return Err(ragged());
    }
    for item in seq.try_iter()? {
        flatten(&item?, depth + 1, shape, out)?;
    }
    if n == 0 && depth + 1 != shape.len() && shape.len() > depth + 1 {
        return Err(ragged());
    }
    Ok(())
}

fn check_leaf_depth(depth: usize, shape: &[usize]) -> PyResult<()> {
    if depth != shape.len() {
        return Err(ragged());
    }
    Ok(())
}

fn ragged() -> PyErr {
    PyValueError::new_err("expected a sequence of equal-length sequences (the nesting is ragged)")
}

/// A tensor from a Python number or nested sequences, in `dtype` or the one PyTorch infers
/// (bool if every leaf is a bool, int64 if every leaf is an int, float32 otherwise).
pub fn from_python(obj: &Bound<'_, PyAny>, dtype: Option<DType>) -> PyResult<Tensor> {
    let (mut shape, mut leaves) = (Vec::new(), Vec::new());
    flatten(obj, 0, &mut shape, &mut leaves)?;
    let inferred = if leaves.iter().any(|s| s.is_float()) {
        DType::F32
    } else if !leaves.is_empty() && leaves.iter().all(|s| matches!(s, Scalar::Bool(_))) {
        DType::Bool
    } else if leaves.is_empty() {
        DType::F32
    } else {
        DType::I64
    };
    let dtype = dtype.unwrap_or(inferred);
    // Integers exactly through i64, everything else through f64.
    let t = if leaves.iter().all(|s| !s.is_float()) && !leaves.is_empty() {
        let v: Vec<i64> = leaves.iter().map(|s| s.to_f64() as i64).collect();
        let v: Vec<i64> = leaves
            .iter()
            .zip(v)
            .map(|(s, f)| match s {
                Scalar::Int(i) => *i,
                _ => f,
            })
            .collect();
        Tensor::from_vec(v, &shape)
    } else {
        Tensor::from_vec(
            leaves.iter().map(|s| s.to_f64()).collect::<Vec<f64>>(),
            &shape,
        )
    };
    t.and_then(|t| t.to_dtype(dtype)).py()
}

/// True for a NumPy array (by its type's module: NumPy is not a dependency).
fn is_ndarray(obj: &Bound<'_, PyAny>) -> bool {
    let ty = obj.get_type();
    ty.name().is_ok_and(|n| n == "ndarray") && ty.module().is_ok_and(|m| m == "numpy")
}

/// Apply the common keywords: device, then requires_grad.
pub(crate) fn finish(t: Tensor, device: Device, requires_grad: bool) -> PyResult<PyTensor> {
    let t = if device != Device::Cpu {
        t.to_device(device).py()?
    } else {
        t
    };
    let t = if requires_grad {
        t.requires_grad_(true).py()?
    } else {
        t
    };
    Ok(t.into())
}

/// `torch.tensor(data, dtype=None, device=None, requires_grad=False)`: always a copy. A
/// NumPy array keeps its dtype, as in PyTorch (a copy of `torch.from_numpy`'s tensor, taken
/// from a C-contiguous copy of the array when its strides are negative).
#[pyfunction]
#[pyo3(signature = (data, *, dtype=None, device=None, requires_grad=false, pin_memory=false))]
pub fn tensor(
    data: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    pin_memory: bool,
) -> PyResult<PyTensor> {
    let _ = pin_memory; // only speeds up copies to a GPU
    let dtype = opt_dtype(dtype)?;
    let t = match data.cast::<PyTensor>() {
        Ok(t) => {
            let t = t.borrow().t.detach().contiguous_copy().py()?;
            match dtype {
                Some(d) => t.to_dtype(d).py()?,
                None => t,
            }
        }
        Err(_) if is_ndarray(data) => {
            let py = data.py();
            let array = py
                .import("numpy")?
                .call_method1("ascontiguousarray", (data,))?;
            let t = py
                .import("tinytorch")?
                .call_method1("from_numpy", (array,))?
                .cast_into::<PyTensor>()?
                .borrow()
                .t
                .contiguous_copy()
                .py()?;
            match dtype {
                Some(d) => t.to_dtype(d).py()?,
                None => t,
            }
        }
        Err(_) => from_python(data, dtype)?,
    };
    finish(t, opt_device(device)?, requires_grad)
}

macro_rules! filled {
    ($name:ident, $value:expr, $doc:expr) => {
        #[doc = $doc]
        #[pyfunction]
        #[pyo3(signature = (*size, dtype=None, device=None, requires_grad=false, pin_memory=false, memory_format=None))]
        pub fn $name(
            size: &Bound<'_, PyTuple>,
            dtype: Option<&Bound<'_, PyAny>>,
            device: Option<&Bound<'_, PyAny>>,
            requires_grad: bool,
            pin_memory: bool,
            memory_format: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<PyTensor> {
            // Pinned host memory only speeds up copies to a GPU, and TinyTorch's tensors
            // are row-major in every memory format: neither changes the values.
            let _ = (pin_memory, memory_format);
            let dtype = opt_dtype(dtype)?.unwrap_or(DType::F32);
            let device = opt_device(device)?;
            let t = Tensor::full(&sizes_of(size)?, $value, dtype, device).py()?;
            finish(t, device, requires_grad)
        }
    };
}
filled!(
    zeros,
    0.0,
    "`torch.zeros(*size, dtype=None, device=None, requires_grad=False)`."
);
filled!(ones, 1.0, "`torch.ones(*size, ...)`.");
filled!(
    empty,
    0.0,
    "`torch.empty(*size, ...)` (zero-filled: TinyTorch never hands out uninitialised memory)."
);

/// `rand`/`randn`: a tensor of `*size` drawn from the global stream or `generator`,
/// uniform in [0, 1) when `$normal` is false, standard normal when it is true.
macro_rules! random {
    ($name:ident, $normal:expr, $doc:expr) => {
        #[doc = $doc]
        #[pyfunction]
        #[pyo3(signature = (*size, dtype=None, device=None, requires_grad=false, generator=None))]
        pub fn $name(
            size: &Bound<'_, PyTuple>,
            dtype: Option<&Bound<'_, PyAny>>,
            device: Option<&Bound<'_, PyAny>>,
            requires_grad: bool,
            generator: Option<PyRefMut<'_, crate::random::PyGenerator>>,
        ) -> PyResult<PyTensor> {
            let dtype = opt_dtype(dtype)?.unwrap_or(DType::F32);
            let s = sizes_of(size)?;
            let t = match (generator, $normal) {
                (Some(mut g), true) => Tensor::randn_with(&s, dtype, Device::Cpu, &mut g.0),
                (Some(mut g), false) => Tensor::rand_with(&s, dtype, Device::Cpu, &mut g.0),
                (None, true) => Tensor::randn(&s, dtype, Device::Cpu),
                (None, false) => Tensor::rand(&s, dtype, Device::Cpu),
            }
            .py()?;
            finish(t, opt_device(device)?, requires_grad)
        }
    };
}
random!(
    rand,
    false,
    "`torch.rand(*size, dtype=None, device=None, requires_grad=False, generator=None)`:\nuniform in [0, 1)."
);
random!(randn, true, "`torch.randn(*size, ...)`: standard normal.");

/// `torch.randint(low=0, high, size, dtype=int64, ...)`.
#[pyfunction]
#[pyo3(signature = (*args, size=None, low=None, high=None, dtype=None, device=None, requires_grad=false, generator=None))]
#[allow(clippy::too_many_arguments)]
pub fn randint(
    args: &Bound<'_, PyTuple>,
    size: Option<&Bound<'_, PyAny>>,
    low: Option<i64>,
    high: Option<i64>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    generator: Option<PyRefMut<'_, crate::random::PyGenerator>>,
) -> PyResult<PyTensor> {
    // randint(high, size) or randint(low, high, size), size positional or keyword.
    let mut ints: Vec<i64> = Vec::new();
    let mut shape: Option<Vec<usize>> = size.map(|s| s.extract()).transpose()?;
    for a in args.iter() {
        match a.extract::<i64>() {
            Ok(v) if shape.is_none() || ints.len() < 2 => ints.push(v),
            _ => shape = Some(a.extract()?),
        }
    }
    // `randint(0, high=10, size=...)`, `randint(low=2, high=10, size=...)`
    if let Some(h) = high {
        ints = match (low, ints.as_slice()) {
            (Some(l), _) => vec![l, h],
            (None, [l]) => vec![*l, h],
            _ => vec![h],
        };
    }
    let (low, high) = match ints.as_slice() {
        [high] => (0, *high),
        [low, high] => (*low, *high),
        _ => return Err(PyTypeError::new_err("randint(low=0, high, size)")),
    };
    let shape = shape.ok_or_else(|| PyTypeError::new_err("randint() needs a size"))?;
    let t = match generator {
        Some(mut g) => Tensor::randint_with(low, high, &shape, Device::Cpu, &mut g.0),
        None => Tensor::randint(low, high, &shape, Device::Cpu),
    }
    .py()?;
    let t = cast_to_opt_dtype(&t, dtype)?;
    finish(t, opt_device(device)?, requires_grad)
}

/// `torch.full(size, fill_value, dtype=None, ...)`: the dtype follows the value when not
/// given (bool, int64 or float32).
#[pyfunction]
#[pyo3(signature = (size, fill_value, *, dtype=None, device=None, requires_grad=false))]
pub fn full(
    size: Vec<usize>,
    fill_value: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let v = scalar_of(fill_value)?;
    let dtype = opt_dtype(dtype)?.unwrap_or(match v {
        Scalar::Bool(_) => DType::Bool,
        Scalar::Int(_) => DType::I64,
        Scalar::Float(_) => DType::F32,
    });
    let t = Tensor::zeros(&size, dtype, Device::Cpu).py()?;
    t.fill_(v).py()?;
    finish(t, opt_device(device)?, requires_grad)
}

/// `torch.arange(end)`, `arange(start, end, step=1)`, the bounds positional or by keyword
/// (`arange(start=0, end=n)`): int64 when every bound is an int.
#[pyfunction]
#[pyo3(signature = (*args, start=None, end=None, step=None, dtype=None, device=None, requires_grad=false))]
#[allow(clippy::too_many_arguments)]
pub fn arange(
    args: &Bound<'_, PyTuple>,
    start: Option<&Bound<'_, PyAny>>,
    end: Option<&Bound<'_, PyAny>>,
    step: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let nums: Vec<Scalar> = args
        .iter()
        .map(|a| scalar_of(&a))
        .collect::<PyResult<_>>()?;
    let (mut s, mut e, mut st) = (None, None, None);
    match nums.as_slice() {
        [] => {}
        [x] if end.is_none() => e = Some(*x),
        [x] => s = Some(*x),
        [a, b] => (s, e) = (Some(*a), Some(*b)),
        [a, b, c] => (s, e, st) = (Some(*a), Some(*b), Some(*c)),
        _ => return Err(PyTypeError::new_err("arange(start=0, end, step=1)")),
    }
    for (slot, kw) in [(&mut s, start), (&mut e, end), (&mut st, step)] {
        if let Some(v) = kw {
            *slot = Some(scalar_of(v)?);
        }
    }
    let end = e.ok_or_else(|| PyTypeError::new_err("arange() missing required argument 'end'"))?;
    let (start, end, step) = (
        s.unwrap_or(Scalar::Int(0)),
        end,
        st.unwrap_or(Scalar::Int(1)),
    );
    let all_int = [start, end, step].iter().all(|s| !s.is_float());
    let dtype = opt_dtype(dtype)?.unwrap_or(if all_int { DType::I64 } else { DType::F32 });
    let t = Tensor::arange(
        start.to_f64(),
        end.to_f64(),
        step.to_f64(),
        dtype,
        Device::Cpu,
    )
    .py()?;
    finish(t, opt_device(device)?, requires_grad)
}

/// `torch.linspace(start, end, steps, dtype=float32, ...)`.
#[pyfunction]
#[pyo3(signature = (start, end, steps, *, dtype=None, device=None, requires_grad=false))]
pub fn linspace(
    start: f64,
    end: f64,
    steps: usize,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let dtype = opt_dtype(dtype)?.unwrap_or(DType::F32);
    let t = Tensor::linspace(start, end, steps, dtype, Device::Cpu).py()?;
    finish(t, opt_device(device)?, requires_grad)
}

/// `torch.eye(n, m=None, dtype=float32, ...)`.
#[pyfunction]
#[pyo3(signature = (n, m=None, *, dtype=None, device=None, requires_grad=false))]
pub fn eye(
    n: usize,
    m: Option<usize>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let dtype = opt_dtype(dtype)?.unwrap_or(DType::F32);
    let t = Tensor::eye(n, m.unwrap_or(n), dtype, Device::Cpu).py()?;
    finish(t, opt_device(device)?, requires_grad)
}

/// `torch.zeros_like`, `ones_like`, `full_like`, `rand_like`, `randn_like`, `empty_like`:
/// `kind` says which; dtype and device default to the input's.
#[pyfunction]
#[pyo3(signature = (kind, input, fill_value=None, dtype=None, device=None, requires_grad=false))]
pub fn _like(
    kind: &str,
    input: PyRef<'_, PyTensor>,
    fill_value: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let x = &input.t;
    let dtype = opt_dtype(dtype)?.unwrap_or(x.dtype());
    let device = match device {
        Some(d) if !d.is_none() => crate::convert::device_of(d)?,
        _ => x.device(),
    };
    let t = match kind {
        "zeros" | "empty" => Tensor::zeros(x.shape(), dtype, device),
        "ones" => Tensor::ones(x.shape(), dtype, device),
        "full" => {
            let v = scalar_of(
                fill_value.ok_or_else(|| PyTypeError::new_err("full_like needs a fill_value"))?,
            )?;
            Tensor::zeros(x.shape(), dtype, device).and_then(|t| t.fill_(v))
        }
        "rand" => Tensor::rand(x.shape(), dtype, Device::Cpu).and_then(|t| t.to_device(device)),
        "randn" => Tensor::randn(x.shape(), dtype, Device::Cpu).and_then(|t| t.to_device(device)),
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown *_like kind {other}"
            )))
        }
    }
    .py()?;
    finish(t, Device::Cpu, requires_grad)
}

/// A CPU tensor sharing a NumPy array's memory (`torch.from_numpy` checks the array and
/// passes its address, shape, strides in elements and dtype). The tensor holds `array`, so
/// the memory lives as long as any tensor or view over it.
#[pyfunction]
pub fn _from_numpy(
    array: Py<PyAny>,
    address: usize,
    shape: Vec<usize>,
    strides: Vec<usize>,
    dtype: PyRef<'_, crate::convert::PyDType>,
) -> PyResult<PyTensor> {
    // SAFETY: `address` is the array's data pointer (its `__array_interface__`), valid for
    // every element its shape and non-negative strides address while the array lives; the
    // tensor holds the array.
    let t = unsafe {
        Tensor::from_foreign_cpu(
            "from_numpy",
            address as *mut u8,
            dtype.0,
            &shape,
            &strides,
            Box::new(array),
        )
    };
    Ok(t.py()?.into())
}

/// Whether `obj` is a tensor (`torch.is_tensor`).
#[pyfunction]
pub fn is_tensor(obj: &Bound<'_, PyAny>) -> bool {
    obj.cast::<PyTensor>().is_ok()
}
