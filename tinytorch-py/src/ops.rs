//! The operations of `torch.Tensor` with PyTorch's Python signatures (`dim=`, `keepdim=`,
//! `*sizes`, `alpha=`, named `(values, indices)` results) and its operators, reflected and
//! in place. Each binds one TinyTorch op; none is reimplemented here.

use crate::convert::{cast_to_opt_dtype, dims_of, scalar_of, shape_of, sizes_of, PyScalar};
use crate::error::IntoPyResult;
use crate::tensor::{bad_value, nogil, Operand, PyTensor};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pyclass::CompareOp;
use pyo3::types::PyTuple;
use tinytorch::tensor::ResultType;
use tinytorch::{DType, Scalar, Tensor};

/// PyTorch's `torch.return_types.*`: a `(values, indices)` pair that also unpacks.
#[pyclass(
    module = "tinytorch.return_types",
    name = "return_type",
    frozen,
    sequence
)]
pub struct ValuesIndices {
    name: &'static str,
    #[pyo3(get)]
    values: Py<PyTensor>,
    #[pyo3(get)]
    indices: Py<PyTensor>,
}

#[pymethods]
impl ValuesIndices {
    fn __len__(&self) -> usize {
        2
    }
    fn __getitem__(&self, py: Python<'_>, i: isize) -> PyResult<Py<PyTensor>> {
        match i {
            0 | -2 => Ok(self.values.clone_ref(py)),
            1 | -1 => Ok(self.indices.clone_ref(py)),
            _ => Err(pyo3::exceptions::PyIndexError::new_err(
                "tuple index out of range",
            )),
        }
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "torch.return_types.{}(\nvalues={},\nindices={})",
            self.name,
            self.values.borrow(py).t,
            self.indices.borrow(py).t
        )
    }
}

fn pair(py: Python<'_>, name: &'static str, (v, i): (Tensor, Tensor)) -> PyResult<ValuesIndices> {
    Ok(ValuesIndices {
        name,
        values: Py::new(py, PyTensor::from(v))?,
        indices: Py::new(py, PyTensor::from(i))?,
    })
}

/// A list of tensors (`chunk`, `split`) as a Python tuple.
fn tuple_of(py: Python<'_>, ts: Vec<Tensor>) -> PyResult<Bound<'_, PyTuple>> {
    PyTuple::new(py, ts.into_iter().map(PyTensor::from))
}

/// A tensor-tensor op (`Tensor::add`).
type TensorFn = fn(&Tensor, &Tensor) -> tinytorch::Result<Tensor>;
/// Its tensor-number form (`Tensor::add_scalar`).
type ScalarFn = fn(&Tensor, Scalar) -> tinytorch::Result<Tensor>;

/// `x op other` for a tensor or a number.
fn binary(x: &Tensor, other: Operand, tt: TensorFn, ts: ScalarFn) -> PyResult<PyTensor> {
    match other {
        Operand::Tensor(o) => tt(x, &o),
        Operand::Scalar(s) => ts(x, s),
    }
    .py()
    .map(Into::into)
}

/// Whether an integer divisor holds a zero (PyTorch raises `ZeroDivisionError` as a
/// RuntimeError for an integer `//` or `%` by zero). A float divisor never counts.
fn has_integer_zero(other: &Operand) -> PyResult<bool> {
    Ok(match other {
        Operand::Scalar(Scalar::Int(0)) | Operand::Scalar(Scalar::Bool(false)) => true,
        Operand::Scalar(_) => false,
        Operand::Tensor(t) if t.dtype().is_float() => false,
        Operand::Tensor(t) => {
            t.eq_scalar(0)
                .and_then(|z| z.any())
                .and_then(|a| a.item_f64())
                .py()?
                != 0.0
        }
    })
}

/// Multiply by `alpha` unless it is 1 (`add(other, alpha=2)`).
fn scaled(other: Operand, alpha: Option<Scalar>) -> PyResult<Operand> {
    let Some(alpha) = alpha else { return Ok(other) };
    if alpha == Scalar::Int(1) || alpha == Scalar::Float(1.0) {
        return Ok(other);
    }
    Ok(match other {
        Operand::Tensor(t) => Operand::Tensor(t.mul_scalar(alpha).py()?),
        Operand::Scalar(s) => Operand::Scalar(match (s, alpha) {
            (Scalar::Int(a), Scalar::Int(b)) => Scalar::Int(a * b),
            (a, b) => Scalar::Float(a.to_f64() * b.to_f64()),
        }),
    })
}

/// The correction of `var`/`std`: `correction=` wins, else `unbiased` (default True).
fn correction_of(unbiased: Option<bool>, correction: Option<f64>) -> f64 {
    correction.unwrap_or(if unbiased.unwrap_or(true) { 1.0 } else { 0.0 })
}

/// The order of `norm(p)`: a number, `"fro"` (2) or `inf`.
fn norm_order(p: Option<&Bound<'_, PyAny>>) -> PyResult<f64> {
    match p {
        None => Ok(2.0),
        Some(p) if p.is_none() => Ok(2.0),
        Some(p) => match p.extract::<String>() {
            Ok(s) if s == "fro" => Ok(2.0),
            Ok(s) => Err(PyValueError::new_err(format!(
                "norm: unsupported order {s:?}"
            ))),
            Err(_) => p.extract::<f64>(),
        },
    }
}

macro_rules! unary_methods {
    ($($name:ident),* $(,)?) => {
        #[pymethods]
        impl PyTensor {
            $(
                #[doc = concat!("`torch.", stringify!($name), "`.")]
                fn $name(&self, py: Python<'_>) -> PyResult<PyTensor> {
                    let t = self.t.clone();
                    nogil(py, t.numel(), || t.$name()).map(Into::into)
                }
            )*
        }
    };
}
unary_methods!(
    neg,
    abs,
    sign,
    exp,
    log,
    log2,
    log1p,
    expm1,
    sqrt,
    rsqrt,
    square,
    reciprocal,
    sin,
    cos,
    tan,
    tanh,
    sigmoid,
    relu,
    erf,
    erfc,
    erfinv,
    lgamma,
    digamma,
    i0,
    floor,
    ceil,
    round,
    logical_not,
    isnan,
    isinf,
    isfinite
);

/// A reduction over `dim` (`None`: all dims) that takes `dim`, `keepdim` and NumPy's
/// `axis`/`keepdims` aliases, binding the TinyTorch op `$op` of `(dims, keepdim)`.
macro_rules! dim_reduction {
    ($name:ident, $op:ident) => {
        #[pymethods]
        impl PyTensor {
            #[pyo3(signature = (dim=None, keepdim=false, *, axis=None, keepdims=None))]
            fn $name<'py>(
                &self,
                dim: Option<&Bound<'py, PyAny>>,
                keepdim: bool,
                axis: Option<&Bound<'py, PyAny>>,
                keepdims: Option<bool>,
            ) -> PyResult<PyTensor> {
                let (dim, keepdim) = (dim.or(axis), keepdims.unwrap_or(keepdim));
                Ok(self.t.$op(&dims_of(dim)?, keepdim).py()?.into())
            }
        }
    };
}
/// A reduction that also takes `dtype=` (the input is cast to it first), as
/// [`dim_reduction`] otherwise; `$doc` its docstring.
macro_rules! dtype_reduction {
    ($name:ident $(, $doc:expr)?) => {
        #[pymethods]
        impl PyTensor {
                $(#[doc = $doc])?
                #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None, axis=None, keepdims=None))]
                fn $name<'py>(
                    &self,
                    dim: Option<&Bound<'py, PyAny>>,
                    keepdim: bool,
                    dtype: Option<&Bound<'py, PyAny>>,
                    axis: Option<&Bound<'py, PyAny>>,
                    keepdims: Option<bool>,
                ) -> PyResult<PyTensor> {
                    let (dim, keepdim) = (dim.or(axis), keepdims.unwrap_or(keepdim));
                    let x = cast_to_opt_dtype(&self.t, dtype)?;
                    Ok(x.$name(&dims_of(dim)?, keepdim).py()?.into())
                }
        }
    };
}
dtype_reduction!(
    sum,
    "`sum(dim=None, keepdim=False, *, dtype=None)`; NumPy's `axis=`/`keepdims=` are\naliases, as in PyTorch (also for the other reductions)."
);
dtype_reduction!(mean);
dim_reduction!(prod, prod);
dim_reduction!(amax, amax);
dim_reduction!(amin, amin);
dim_reduction!(all, all_dims);
dim_reduction!(any, any_dims);

/// The argument-free in-place ops (`x.relu_()`): each runs TinyTorch's op of the same name
/// on the tensor and returns it.
macro_rules! inplace_methods {
    ($($name:ident),* $(,)?) => {
        #[pymethods]
        impl PyTensor {
            $(
                fn $name(slf: PyRef<'_, Self>) -> PyResult<PyRef<'_, Self>> {
                    slf.t.$name().py()?;
                    Ok(slf)
                }
            )*
        }
    };
}
inplace_methods!(relu_, sigmoid_, tanh_, exp_, neg_, zero_);

#[pymethods]
impl PyTensor {
    // ---- arithmetic -------------------------------------------------------------------

    #[pyo3(signature = (other, *, alpha=None))]
    fn add(&self, other: Operand, alpha: Option<PyScalar>) -> PyResult<PyTensor> {
        let other = scaled(other, alpha.map(|a| a.0))?;
        binary(&self.t, other, Tensor::add, |x, s| x.add_scalar(s))
    }
    #[pyo3(signature = (other, *, alpha=None))]
    fn sub(&self, other: Operand, alpha: Option<PyScalar>) -> PyResult<PyTensor> {
        let other = scaled(other, alpha.map(|a| a.0))?;
        binary(&self.t, other, Tensor::sub, |x, s| x.sub_scalar(s))
    }
    fn mul(&self, other: Operand) -> PyResult<PyTensor> {
        binary(&self.t, other, Tensor::mul, |x, s| x.mul_scalar(s))
    }
    /// True division, or with `rounding_mode="floor"`/`"trunc"` the rounded quotient (in
    /// the inputs' integer dtype when both are integers, as PyTorch).
    #[pyo3(signature = (other, *, rounding_mode=None))]
    fn div(&self, other: Operand, rounding_mode: Option<&str>) -> PyResult<PyTensor> {
        if rounding_mode.is_some() && !self.t.dtype().is_float() && has_integer_zero(&other)? {
            // An integer quotient has no value for x // 0 (a float one is inf or nan).
            return Err(PyRuntimeError::new_err("ZeroDivisionError"));
        }
        let q = binary(&self.t, other, Tensor::div, |x, s| x.div_scalar(s))?;
        let Some(mode) = rounding_mode else {
            return Ok(q);
        };
        let r = match mode {
            "floor" => q.t.floor(),
            "trunc" => q.t.abs().and_then(|a| a.floor()).and_then(|a| a.mul(&q.t.sign()?)),
            other => return Err(PyValueError::new_err(format!("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{other}'"))),
        }
        .py()?;
        let r = if self.t.dtype().is_float() {
            r
        } else {
            r.to_dtype(self.t.dtype()).py()?
        };
        Ok(r.into())
    }
    /// Python's modulo (`torch.remainder`): `x - floor(x / y) * y`, the sign of `y`.
    fn remainder(&self, other: Operand) -> PyResult<PyTensor> {
        let y = match &other {
            Operand::Tensor(t) => Operand::Tensor(t.clone()),
            Operand::Scalar(s) => Operand::Scalar(*s),
        };
        let q = self.div(other, Some("floor"))?;
        let qy = q.mul(y)?;
        Ok(self.t.sub(&qy.t).py()?.into())
    }
    fn __mod__(&self, other: Operand) -> PyResult<PyTensor> {
        self.remainder(other)
    }
    fn true_divide(&self, other: Operand) -> PyResult<PyTensor> {
        self.div(other, None)
    }
    fn pow(&self, exponent: Operand) -> PyResult<PyTensor> {
        binary(&self.t, exponent, Tensor::pow, |x, s| x.pow_scalar(s))
    }
    fn maximum(&self, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(self.t.maximum(&other.t).py()?.into())
    }
    fn minimum(&self, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(self.t.minimum(&other.t).py()?.into())
    }
    fn __add__(&self, other: Operand) -> PyResult<PyTensor> {
        self.add(other, None)
    }
    fn __radd__(&self, other: Operand) -> PyResult<PyTensor> {
        self.add(other, None)
    }
    fn __sub__(&self, other: Operand) -> PyResult<PyTensor> {
        self.sub(other, None)
    }
    fn __rsub__(&self, other: PyScalar) -> PyResult<PyTensor> {
        Ok(self.t.rsub_scalar(other.0).py()?.into())
    }
    fn __mul__(&self, other: Operand) -> PyResult<PyTensor> {
        self.mul(other)
    }
    fn __rmul__(&self, other: Operand) -> PyResult<PyTensor> {
        self.mul(other)
    }
    fn __truediv__(&self, other: Operand) -> PyResult<PyTensor> {
        self.div(other, None)
    }
    fn __rtruediv__(&self, other: PyScalar) -> PyResult<PyTensor> {
        Ok(self.t.rdiv_scalar(other.0).py()?.into())
    }
    fn __floordiv__(&self, other: Operand) -> PyResult<PyTensor> {
        self.div(other, Some("floor"))
    }
    fn __pow__(&self, exponent: Operand, modulo: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        if modulo.is_some_and(|m| !m.is_none()) {
            return Err(PyTypeError::new_err("pow() with a modulo is not supported"));
        }
        self.pow(exponent)
    }
    fn __rpow__(&self, base: PyScalar, modulo: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let _ = modulo;
        Ok(self.t.rpow_scalar(base.0).py()?.into())
    }
    fn __neg__(&self) -> PyResult<PyTensor> {
        Ok(self.t.neg().py()?.into())
    }
    fn __pos__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }
    fn __abs__(&self) -> PyResult<PyTensor> {
        Ok(self.t.abs().py()?.into())
    }
    fn __invert__(&self) -> PyResult<PyTensor> {
        if self.t.dtype() != DType::Bool {
            return Err(PyTypeError::new_err(
                "~ (bitwise not) is supported for bool tensors only",
            ));
        }
        Ok(self.t.logical_not().py()?.into())
    }
    fn __and__(&self, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(self.t.logical_and(&other.t).py()?.into())
    }
    fn __or__(&self, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(self.t.logical_or(&other.t).py()?.into())
    }
    fn __xor__(&self, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(self.t.logical_xor(&other.t).py()?.into())
    }
    fn __richcmp__(&self, other: Operand, op: CompareOp) -> PyResult<PyTensor> {
        use CompareOp::*;
        let (tt, ts): (TensorFn, ScalarFn) = match op {
            Lt => (Tensor::lt, |x, s| x.lt_scalar(s)),
            Le => (Tensor::le, |x, s| x.le_scalar(s)),
            Gt => (Tensor::gt, |x, s| x.gt_scalar(s)),
            Ge => (Tensor::ge, |x, s| x.ge_scalar(s)),
            Eq => (Tensor::eq, |x, s| x.eq_scalar(s)),
            Ne => (Tensor::ne, |x, s| x.ne_scalar(s)),
        };
        binary(&self.t, other, tt, ts)
    }
    fn eq(&self, other: Operand) -> PyResult<PyTensor> {
        self.__richcmp__(other, CompareOp::Eq)
    }
    fn ne(&self, other: Operand) -> PyResult<PyTensor> {
        self.__richcmp__(other, CompareOp::Ne)
    }
    fn lt(&self, other: Operand) -> PyResult<PyTensor> {
        self.__richcmp__(other, CompareOp::Lt)
    }
    fn le(&self, other: Operand) -> PyResult<PyTensor> {
        self.__richcmp__(other, CompareOp::Le)
    }
    fn gt(&self, other: Operand) -> PyResult<PyTensor> {
        self.__richcmp__(other, CompareOp::Gt)
    }
    fn ge(&self, other: Operand) -> PyResult<PyTensor> {
        self.__richcmp__(other, CompareOp::Ge)
    }
    fn logical_and(&self, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        self.__and__(other)
    }
    fn logical_or(&self, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        self.__or__(other)
    }
    fn logical_xor(&self, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        self.__xor__(other)
    }
    /// `x.equal(y)`: same shape and the same values.
    fn equal(&self, other: PyRef<'_, PyTensor>) -> PyResult<bool> {
        if self.t.shape() != other.t.shape() {
            return Ok(false);
        }
        Ok(self
            .t
            .eq(&other.t)
            .and_then(|e| e.all())
            .and_then(|a| a.item_f64())
            .py()?
            != 0.0)
    }
    /// `x.allclose(y, rtol=1e-5, atol=1e-8)`.
    #[pyo3(signature = (other, rtol=1e-5, atol=1e-8, equal_nan=false))]
    fn allclose(
        &self,
        other: PyRef<'_, PyTensor>,
        rtol: f64,
        atol: f64,
        equal_nan: bool,
    ) -> PyResult<bool> {
        let (a, b) = (
            self.t.to_vec_f64().py()?,
            other
                .t
                .broadcast_to(self.t.shape())
                .and_then(|b| b.to_vec_f64())
                .py()?,
        );
        Ok(a.iter().zip(&b).all(|(x, y)| {
            (equal_nan && x.is_nan() && y.is_nan()) || (x - y).abs() <= atol + rtol * y.abs()
        }))
    }

    // ---- linear algebra ---------------------------------------------------------------

    fn matmul(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (a, b) = (self.t.clone(), other.t.clone());
        nogil(py, usize::MAX, || a.matmul(&b)).map(Into::into)
    }
    fn __matmul__(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        self.matmul(py, other)
    }
    fn __rmatmul__(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (a, b) = (other.t.clone(), self.t.clone());
        nogil(py, usize::MAX, || a.matmul(&b)).map(Into::into)
    }
    fn mm(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (a, b) = (self.t.clone(), other.t.clone());
        nogil(py, usize::MAX, || a.mm(&b)).map(Into::into)
    }
    fn bmm(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let (a, b) = (self.t.clone(), other.t.clone());
        nogil(py, usize::MAX, || a.bmm(&b)).map(Into::into)
    }
    fn dot(&self, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(self.t.dot(&other.t).py()?.into())
    }
    fn outer(&self, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(self.t.outer(&other.t).py()?.into())
    }

    // ---- elementwise with arguments ---------------------------------------------------

    /// `clamp(min=None, max=None)` with numbers or tensors as bounds.
    #[pyo3(signature = (min=None, max=None))]
    fn clamp(&self, min: Option<Operand>, max: Option<Operand>) -> PyResult<PyTensor> {
        let scalar = |o: &Option<Operand>| match o {
            None => Some(None),
            Some(Operand::Scalar(s)) => Some(Some(*s)),
            Some(Operand::Tensor(_)) => None,
        };
        if let (Some(lo), Some(hi)) = (scalar(&min), scalar(&max)) {
            return Ok(self.t.clamp(lo, hi).py()?.into());
        }
        // Tensor bounds: numbers become 0-d tensors beside them.
        let tensor = |o: Option<Operand>| -> PyResult<Option<Tensor>> {
            Ok(match o {
                None => None,
                Some(Operand::Tensor(t)) => Some(t),
                Some(Operand::Scalar(s)) => {
                    Some(Tensor::scalar_tensor(s, self.t.dtype(), self.t.device()).py()?)
                }
            })
        };
        let (lo, hi) = (tensor(min)?, tensor(max)?);
        Ok(self.t.clamp_tensor(lo.as_ref(), hi.as_ref()).py()?.into())
    }
    #[pyo3(signature = (min=None, max=None))]
    fn clip(&self, min: Option<Operand>, max: Option<Operand>) -> PyResult<PyTensor> {
        self.clamp(min, max)
    }
    fn clamp_min(&self, min: Operand) -> PyResult<PyTensor> {
        self.clamp(Some(min), None)
    }
    fn clamp_max(&self, max: Operand) -> PyResult<PyTensor> {
        self.clamp(None, Some(max))
    }
    /// `softmax(dim, dtype=None)`: with a dtype, the input is cast to it first.
    #[pyo3(signature = (dim, dtype=None))]
    pub(crate) fn softmax(
        &self,
        py: Python<'_>,
        dim: isize,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let t = cast_to_opt_dtype(&self.t, dtype)?;
        nogil(py, t.numel(), || t.softmax(dim)).map(Into::into)
    }
    /// `log_softmax(dim, dtype=None)`: with a dtype, the input is cast to it first.
    #[pyo3(signature = (dim, dtype=None))]
    pub(crate) fn log_softmax(
        &self,
        py: Python<'_>,
        dim: isize,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let t = cast_to_opt_dtype(&self.t, dtype)?;
        nogil(py, t.numel(), || t.log_softmax(dim)).map(Into::into)
    }

    // ---- reductions -------------------------------------------------------------------

    /// `max()` (the largest element), `max(dim, keepdim=False)` (values and indices), or
    /// `max(other)` (elementwise).
    #[pyo3(signature = (dim=None, keepdim=false, *, axis=None, keepdims=None))]
    fn max<'py>(
        &self,
        py: Python<'py>,
        dim: Option<&Bound<'py, PyAny>>,
        keepdim: bool,
        axis: Option<&Bound<'py, PyAny>>,
        keepdims: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
        self.extreme(py, dim.or(axis), keepdims.unwrap_or(keepdim), true)
    }
    #[pyo3(signature = (dim=None, keepdim=false, *, axis=None, keepdims=None))]
    fn min<'py>(
        &self,
        py: Python<'py>,
        dim: Option<&Bound<'py, PyAny>>,
        keepdim: bool,
        axis: Option<&Bound<'py, PyAny>>,
        keepdims: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
        self.extreme(py, dim.or(axis), keepdims.unwrap_or(keepdim), false)
    }
    #[pyo3(signature = (dim=None, keepdim=false, *, axis=None, keepdims=None))]
    fn argmax(
        &self,
        dim: Option<isize>,
        keepdim: bool,
        axis: Option<isize>,
        keepdims: Option<bool>,
    ) -> PyResult<PyTensor> {
        let (dim, keepdim) = (dim.or(axis), keepdims.unwrap_or(keepdim));
        Ok(self.t.argmax(dim, keepdim).py()?.into())
    }
    #[pyo3(signature = (dim=None, keepdim=false, *, axis=None, keepdims=None))]
    fn argmin(
        &self,
        dim: Option<isize>,
        keepdim: bool,
        axis: Option<isize>,
        keepdims: Option<bool>,
    ) -> PyResult<PyTensor> {
        let (dim, keepdim) = (dim.or(axis), keepdims.unwrap_or(keepdim));
        Ok(self.t.argmin(dim, keepdim).py()?.into())
    }
    /// `var(dim=None, unbiased=True, keepdim=False, *, correction=None)`.
    #[pyo3(signature = (dim=None, unbiased=None, keepdim=false, *, correction=None))]
    fn var(
        &self,
        dim: Option<&Bound<'_, PyAny>>,
        unbiased: Option<bool>,
        keepdim: bool,
        correction: Option<f64>,
    ) -> PyResult<PyTensor> {
        let c = correction_of(unbiased, correction);
        Ok(self.t.var(&dims_of(dim)?, c, keepdim).py()?.into())
    }
    #[pyo3(signature = (dim=None, unbiased=None, keepdim=false, *, correction=None))]
    fn std(
        &self,
        dim: Option<&Bound<'_, PyAny>>,
        unbiased: Option<bool>,
        keepdim: bool,
        correction: Option<f64>,
    ) -> PyResult<PyTensor> {
        let c = correction_of(unbiased, correction);
        Ok(self.t.std(&dims_of(dim)?, c, keepdim).py()?.into())
    }
    #[pyo3(signature = (dim, keepdim=false))]
    fn logsumexp(&self, dim: &Bound<'_, PyAny>, keepdim: bool) -> PyResult<PyTensor> {
        Ok(self.t.logsumexp(&dims_of(Some(dim))?, keepdim).py()?.into())
    }
    /// `norm(p="fro", dim=None, keepdim=False)`: vector norms over `dim` (all by default).
    #[pyo3(signature = (p=None, dim=None, keepdim=false))]
    fn norm(
        &self,
        p: Option<&Bound<'_, PyAny>>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        Ok(self
            .t
            .norm(norm_order(p)?, &dims_of(dim)?, keepdim)
            .py()?
            .into())
    }
    /// `cumsum(dim, *, dtype=None)`: with a dtype, the input is cast to it first.
    #[pyo3(signature = (dim, *, dtype=None))]
    fn cumsum(&self, dim: isize, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        Ok(cast_to_opt_dtype(&self.t, dtype)?.cumsum(dim).py()?.into())
    }
    /// `cumprod(dim, *, dtype=None)`: with a dtype, the input is cast to it first.
    #[pyo3(signature = (dim, *, dtype=None))]
    fn cumprod(&self, dim: isize, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        Ok(cast_to_opt_dtype(&self.t, dtype)?.cumprod(dim).py()?.into())
    }

    // ---- shapes -----------------------------------------------------------------------

    #[pyo3(signature = (*shape))]
    fn view(&self, shape: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        Ok(self.t.view(&shape_of(shape)?).py()?.into())
    }
    fn view_as(&self, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(self.t.view(&isizes(other.t.shape())).py()?.into())
    }
    #[pyo3(signature = (*shape))]
    fn reshape(&self, shape: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        Ok(self.t.reshape(&shape_of(shape)?).py()?.into())
    }
    fn reshape_as(&self, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(self.t.reshape(&isizes(other.t.shape())).py()?.into())
    }
    #[pyo3(signature = (*dims))]
    fn permute(&self, dims: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        Ok(self.t.permute(&shape_of(dims)?).py()?.into())
    }
    fn transpose(&self, dim0: isize, dim1: isize) -> PyResult<PyTensor> {
        Ok(self.t.transpose(dim0, dim1).py()?.into())
    }
    fn swapaxes(&self, dim0: isize, dim1: isize) -> PyResult<PyTensor> {
        self.transpose(dim0, dim1)
    }
    fn t(&self) -> PyResult<PyTensor> {
        Ok(self.t.t().py()?.into())
    }
    /// `x.T`: all dims reversed.
    #[getter(T)]
    fn reversed_dims(&self) -> PyResult<PyTensor> {
        let dims: Vec<isize> = (0..self.t.ndim() as isize).rev().collect();
        Ok(self.t.permute(&dims).py()?.into())
    }
    /// `x.mT`: the last two dims swapped.
    #[getter(mT)]
    fn matrix_transpose(&self) -> PyResult<PyTensor> {
        self.transpose(-2, -1)
    }
    #[pyo3(signature = (dim=None))]
    fn squeeze(&self, dim: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        Ok(match dim {
            Some(d) if !d.is_none() => self.t.squeeze_dims(&dims_of(Some(d))?),
            _ => self.t.squeeze(),
        }
        .py()?
        .into())
    }
    fn unsqueeze(&self, dim: isize) -> PyResult<PyTensor> {
        Ok(self.t.unsqueeze(dim).py()?.into())
    }
    #[pyo3(signature = (start_dim=0, end_dim=-1))]
    fn flatten(&self, start_dim: isize, end_dim: isize) -> PyResult<PyTensor> {
        Ok(self.t.flatten(start_dim, end_dim).py()?.into())
    }
    fn unflatten(&self, dim: isize, sizes: Vec<isize>) -> PyResult<PyTensor> {
        Ok(self.t.unflatten(dim, &sizes).py()?.into())
    }
    #[pyo3(signature = (*sizes))]
    fn expand(&self, sizes: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        Ok(self.t.expand(&shape_of(sizes)?).py()?.into())
    }
    fn expand_as(&self, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(self.t.broadcast_to(other.t.shape()).py()?.into())
    }
    fn broadcast_to(&self, shape: Vec<usize>) -> PyResult<PyTensor> {
        Ok(self.t.broadcast_to(&shape).py()?.into())
    }
    #[pyo3(signature = (*sizes))]
    fn repeat(&self, sizes: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        Ok(self.t.repeat(&sizes_of(sizes)?).py()?.into())
    }
    /// `repeat_interleave(repeats, dim=None, *, output_size=None)`; `output_size` (a hint
    /// that spares PyTorch a device sync) is checked against the result.
    #[pyo3(signature = (repeats, dim=None, *, output_size=None))]
    fn repeat_interleave(
        &self,
        repeats: usize,
        dim: Option<isize>,
        output_size: Option<usize>,
    ) -> PyResult<PyTensor> {
        let out = self.t.repeat_interleave(repeats, dim).py()?;
        if let Some(n) = output_size {
            let got = match dim {
                // the op succeeded, so `d` is a valid (possibly negative) dim
                Some(d) => out.shape()[d.rem_euclid(out.ndim() as isize) as usize],
                None => out.numel(),
            };
            if got != n {
                return Err(PyValueError::new_err(format!(
                    "repeat_interleave: output_size={n} but the result has {got} elements along the dim"
                )));
            }
        }
        Ok(out.into())
    }
    fn narrow(&self, dim: isize, start: isize, length: usize) -> PyResult<PyTensor> {
        Ok(self.t.narrow(dim, start, length).py()?.into())
    }
    fn select(&self, dim: isize, index: isize) -> PyResult<PyTensor> {
        Ok(self.t.select(dim, index).py()?.into())
    }
    /// `diagonal(offset=0, dim1=0, dim2=1)`: a view.
    #[pyo3(signature = (offset=0, dim1=0, dim2=1))]
    fn diagonal(&self, offset: isize, dim1: isize, dim2: isize) -> PyResult<PyTensor> {
        Ok(self.t.diagonal(offset, dim1, dim2).py()?.into())
    }
    #[pyo3(signature = (chunks, dim=0))]
    fn chunk<'py>(
        &self,
        py: Python<'py>,
        chunks: usize,
        dim: isize,
    ) -> PyResult<Bound<'py, PyTuple>> {
        tuple_of(py, self.t.chunk(chunks, dim).py()?)
    }
    /// `split(split_size_or_sections, dim=0)`: an int size or a list of sizes.
    #[pyo3(signature = (split_size_or_sections=None, dim=0, *, split_size=None))]
    fn split<'py>(
        &self,
        py: Python<'py>,
        split_size_or_sections: Option<&Bound<'py, PyAny>>,
        dim: isize,
        split_size: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let split_size_or_sections = split_size_or_sections.or(split_size).ok_or_else(|| {
            PyTypeError::new_err("split() missing required argument 'split_size_or_sections'")
        })?;
        let parts = match split_size_or_sections.extract::<usize>() {
            Ok(size) => self.t.split(size, dim),
            Err(_) => self
                .t
                .split_sizes(&split_size_or_sections.extract::<Vec<usize>>()?, dim),
        };
        tuple_of(py, parts.py()?)
    }
    #[pyo3(signature = (dim=0))]
    fn unbind<'py>(&self, py: Python<'py>, dim: isize) -> PyResult<Bound<'py, PyTuple>> {
        let n = self.t.size(dim).py()? as isize;
        let parts = (0..n)
            .map(|i| self.t.select(dim, i))
            .collect::<tinytorch::Result<Vec<_>>>()
            .py()?;
        tuple_of(py, parts)
    }
    /// `flip(dims)`, `flip(*dims)` or `flip(dims=...)`.
    #[pyo3(signature = (*args, dims=None))]
    fn flip(
        &self,
        args: &Bound<'_, PyTuple>,
        dims: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let dims = match (dims, args.len()) {
            (Some(d), 0) => dims_of(Some(d))?,
            (None, 1) => dims_of(Some(&args.get_item(0)?))?,
            (None, n) if n > 1 => dims_of(Some(args.as_any()))?,
            _ => return Err(PyTypeError::new_err("flip() takes the dims to flip, once")),
        };
        Ok(self.t.flip(&dims).py()?.into())
    }
    /// `roll(shifts, dims=None)`: without dims, over the flattened tensor.
    #[pyo3(signature = (shifts, dims=None))]
    fn roll(
        &self,
        shifts: &Bound<'_, PyAny>,
        dims: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let shifts = dims_of(Some(shifts))?;
        let dims = dims_of(dims)?;
        if dims.is_empty() {
            let rolled = self
                .t
                .reshape(&[-1])
                .and_then(|f| f.roll(&shifts, &[0]))
                .and_then(|r| r.reshape(&isizes(self.t.shape())));
            return Ok(rolled.py()?.into());
        }
        Ok(self.t.roll(&shifts, &dims).py()?.into())
    }
    #[pyo3(signature = (diagonal=0))]
    fn tril(&self, diagonal: i64) -> PyResult<PyTensor> {
        Ok(self.t.tril(diagonal).py()?.into())
    }
    #[pyo3(signature = (diagonal=0))]
    fn triu(&self, diagonal: i64) -> PyResult<PyTensor> {
        Ok(self.t.triu(diagonal).py()?.into())
    }

    // ---- indexing ops -----------------------------------------------------------------

    fn index_select(&self, dim: isize, index: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(self.t.index_select(dim, &index.t).py()?.into())
    }
    fn gather(&self, dim: isize, index: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(self.t.gather(dim, &index.t).py()?.into())
    }
    /// `scatter(dim, index, src)` or `scatter(dim, index, value=)`.
    #[pyo3(signature = (dim, index, src=None, *, value=None))]
    pub(crate) fn scatter(
        &self,
        dim: isize,
        index: PyRef<'_, PyTensor>,
        src: Option<Operand>,
        value: Option<PyScalar>,
    ) -> PyResult<PyTensor> {
        Ok(match (src, value) {
            (Some(Operand::Tensor(s)), None) => self.t.scatter(dim, &index.t, &s),
            (Some(Operand::Scalar(v)), None) | (None, Some(PyScalar(v))) => {
                self.t.scatter_value(dim, &index.t, v)
            }
            _ => return Err(PyTypeError::new_err("scatter() takes either src or value")),
        }
        .py()?
        .into())
    }
    fn scatter_add(
        &self,
        dim: isize,
        index: PyRef<'_, PyTensor>,
        src: PyRef<'_, PyTensor>,
    ) -> PyResult<PyTensor> {
        Ok(self.t.scatter_add(dim, &index.t, &src.t).py()?.into())
    }
    #[pyo3(signature = (dim, index, source, *, alpha=None))]
    pub(crate) fn index_add(
        &self,
        dim: isize,
        index: PyRef<'_, PyTensor>,
        source: PyRef<'_, PyTensor>,
        alpha: Option<PyScalar>,
    ) -> PyResult<PyTensor> {
        let src = match alpha {
            Some(a) => source.t.mul_scalar(a.0).py()?,
            None => source.t.clone(),
        };
        Ok(self.t.index_add(dim, &index.t, &src).py()?.into())
    }
    /// `masked_fill(mask, value)`, the value a number or a 0-d tensor.
    pub(crate) fn masked_fill(
        &self,
        mask: PyRef<'_, PyTensor>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let v = match value.cast::<PyTensor>() {
            Ok(t) => {
                let t = &t.borrow().t;
                let x = t.item_f64().py()?;
                if t.dtype().is_float() {
                    Scalar::Float(x)
                } else {
                    Scalar::Int(x as i64)
                }
            }
            Err(_) => scalar_of(value)?,
        };
        Ok(self.t.masked_fill(&mask.t, v).py()?.into())
    }
    fn masked_select(&self, mask: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(self.t.masked_select(&mask.t).py()?.into())
    }
    /// `nonzero()` (an `(n, ndim)` index tensor) or `nonzero(as_tuple=True)` (one index
    /// tensor per dim).
    #[pyo3(signature = (*, as_tuple=false))]
    fn nonzero(&self, py: Python<'_>, as_tuple: bool) -> PyResult<Py<PyAny>> {
        let nz = self.t.nonzero().py()?;
        if !as_tuple {
            return Ok(Py::new(py, PyTensor::from(nz))?.into_any());
        }
        let cols = (0..self.t.ndim().max(1) as isize)
            .map(|d| {
                if self.t.ndim() == 0 {
                    nz.reshape(&[-1])
                } else {
                    nz.select(1, d)
                }
            })
            .collect::<tinytorch::Result<Vec<_>>>()
            .py()?;
        Ok(tuple_of(py, cols)?.into_any().unbind())
    }
    /// `x.where(condition, y)`: `x` where the condition holds, `y` elsewhere.
    fn r#where(&self, condition: PyRef<'_, PyTensor>, other: Operand) -> PyResult<PyTensor> {
        let y = match other {
            Operand::Tensor(t) => t,
            Operand::Scalar(s) => Tensor::scalar_tensor(s, self.t.dtype(), self.t.device()).py()?,
        };
        Ok(Tensor::where_cond(&condition.t, &self.t, &y).py()?.into())
    }
    #[pyo3(signature = (k, dim=-1, largest=true, sorted=true))]
    fn topk(
        &self,
        py: Python<'_>,
        k: usize,
        dim: isize,
        largest: bool,
        sorted: bool,
    ) -> PyResult<ValuesIndices> {
        pair(py, "topk", self.t.topk(k, dim, largest, sorted).py()?)
    }
    /// `sort(dim=-1, descending=False)`; TinyTorch's sort is always stable.
    #[pyo3(signature = (dim=-1, descending=false, *, stable=false))]
    fn sort(
        &self,
        py: Python<'_>,
        dim: isize,
        descending: bool,
        stable: bool,
    ) -> PyResult<ValuesIndices> {
        let _ = stable;
        pair(py, "sort", self.t.sort(dim, descending).py()?)
    }
    #[pyo3(signature = (dim=-1, descending=false, *, stable=false))]
    fn argsort(&self, dim: isize, descending: bool, stable: bool) -> PyResult<PyTensor> {
        let _ = stable;
        Ok(self.t.argsort(dim, descending).py()?.into())
    }

    // ---- in place ---------------------------------------------------------------------

    #[pyo3(signature = (other, *, alpha=None))]
    fn add_<'py>(
        slf: PyRef<'py, Self>,
        other: Operand,
        alpha: Option<PyScalar>,
    ) -> PyResult<PyRef<'py, Self>> {
        match (other, alpha) {
            (Operand::Tensor(o), Some(PyScalar(a))) => slf.t.add_scaled_(&o, a.to_f64()),
            (Operand::Tensor(o), None) => slf.t.add_(&o),
            (s @ Operand::Scalar(_), a) => match scaled(s, a.map(|a| a.0))? {
                Operand::Scalar(s) => slf.t.add_scalar_(s),
                Operand::Tensor(_) => unreachable!("a scaled number stays a number"),
            },
        }
        .py()?;
        Ok(slf)
    }
    #[pyo3(signature = (other, *, alpha=None))]
    fn sub_<'py>(
        slf: PyRef<'py, Self>,
        other: Operand,
        alpha: Option<PyScalar>,
    ) -> PyResult<PyRef<'py, Self>> {
        match scaled(other, alpha.map(|a| a.0))? {
            Operand::Tensor(o) => slf.t.sub_(&o),
            Operand::Scalar(s) => slf.t.add_scalar_(negated(s)),
        }
        .py()?;
        Ok(slf)
    }
    fn mul_<'py>(slf: PyRef<'py, Self>, other: Operand) -> PyResult<PyRef<'py, Self>> {
        match other {
            Operand::Tensor(o) => slf.t.mul_(&o),
            Operand::Scalar(s) => slf.t.mul_scalar_(s),
        }
        .py()?;
        Ok(slf)
    }
    fn div_<'py>(slf: PyRef<'py, Self>, other: Operand) -> PyResult<PyRef<'py, Self>> {
        let o = match other {
            Operand::Tensor(o) => o,
            Operand::Scalar(s) => {
                let dtype = if slf.t.dtype().is_float() {
                    slf.t.dtype()
                } else {
                    DType::F32
                };
                Tensor::scalar_tensor(s, dtype, slf.t.device()).py()?
            }
        };
        slf.t.div_(&o).py()?;
        Ok(slf)
    }
    fn __iadd__(slf: PyRef<'_, Self>, other: Operand) -> PyResult<()> {
        Self::add_(slf, other, None).map(drop)
    }
    fn __isub__(slf: PyRef<'_, Self>, other: Operand) -> PyResult<()> {
        Self::sub_(slf, other, None).map(drop)
    }
    fn __imul__(slf: PyRef<'_, Self>, other: Operand) -> PyResult<()> {
        Self::mul_(slf, other).map(drop)
    }
    fn __itruediv__(slf: PyRef<'_, Self>, other: Operand) -> PyResult<()> {
        Self::div_(slf, other).map(drop)
    }
    /// `copy_(src, non_blocking=False)`: copies finish before returning either way.
    #[pyo3(signature = (src, non_blocking=false))]
    fn copy_<'py>(
        slf: PyRef<'py, Self>,
        src: PyRef<'_, PyTensor>,
        non_blocking: bool,
    ) -> PyResult<PyRef<'py, Self>> {
        let _ = non_blocking;
        slf.t.copy_(&src.t).py()?;
        Ok(slf)
    }
    fn clamp_min_<'py>(slf: PyRef<'py, Self>, min: PyScalar) -> PyResult<PyRef<'py, Self>> {
        slf.t.clamp_min_(min.0).py()?;
        Ok(slf)
    }
    fn clamp_max_<'py>(slf: PyRef<'py, Self>, max: PyScalar) -> PyResult<PyRef<'py, Self>> {
        slf.t.clamp_max_(max.0).py()?;
        Ok(slf)
    }
    fn fill_<'py>(slf: PyRef<'py, Self>, value: PyScalar) -> PyResult<PyRef<'py, Self>> {
        slf.t.fill_(value.0).py()?;
        Ok(slf)
    }
    #[pyo3(signature = (min=None, max=None))]
    fn clamp_<'py>(
        slf: PyRef<'py, Self>,
        min: Option<PyScalar>,
        max: Option<PyScalar>,
    ) -> PyResult<PyRef<'py, Self>> {
        slf.t.clamp_(min.map(|m| m.0), max.map(|m| m.0)).py()?;
        Ok(slf)
    }
    #[pyo3(signature = (a=0.0, b=1.0))]
    fn uniform_(slf: PyRef<'_, Self>, a: f64, b: f64) -> PyResult<PyRef<'_, Self>> {
        tinytorch::nn::init::uniform_(&slf.t, a, b).py()?;
        Ok(slf)
    }
    #[pyo3(signature = (mean=0.0, std=1.0))]
    fn normal_(slf: PyRef<'_, Self>, mean: f64, std: f64) -> PyResult<PyRef<'_, Self>> {
        tinytorch::nn::init::normal_(&slf.t, mean, std).py()?;
        Ok(slf)
    }
}

/// `-s`, keeping its kind.
fn negated(s: Scalar) -> Scalar {
    match s {
        Scalar::Int(i) => Scalar::Int(-i),
        s => Scalar::Float(-s.to_f64()),
    }
}

/// A shape as the `isize` list the view ops take.
fn isizes(shape: &[usize]) -> Vec<isize> {
    shape.iter().map(|&d| d as isize).collect()
}

impl PyTensor {
    /// `max`/`min` in their three forms: the extreme element, per dim with indices, or
    /// elementwise against another tensor.
    fn extreme(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        largest: bool,
    ) -> PyResult<Py<PyAny>> {
        let one = |t: tinytorch::Result<Tensor>| -> PyResult<Py<PyAny>> {
            Ok(Py::new(py, PyTensor::from(t.py()?))?.into_any())
        };
        match dim {
            Some(d) if !d.is_none() => {
                if let Ok(o) = d.cast::<PyTensor>() {
                    let o = o.borrow().t.clone();
                    return one(if largest {
                        self.t.maximum(&o)
                    } else {
                        self.t.minimum(&o)
                    });
                }
                let d: isize = d.extract()?;
                let (name, vi) = if largest {
                    ("max", self.t.max_dim(d, keepdim))
                } else {
                    ("min", self.t.min_dim(d, keepdim))
                };
                Ok(Py::new(py, pair(py, name, vi.py()?)?)?.into_any())
            }
            _ => one(if largest {
                self.t.max_all()
            } else {
                self.t.min_all()
            }),
        }
    }
}

/// Tensors from a Python sequence of tensors (`cat`, `stack`).
pub fn tensor_list(seq: &Bound<'_, PyAny>) -> PyResult<Vec<Tensor>> {
    seq.try_iter()?
        .map(|t| {
            let t = t?;
            let t = t
                .cast::<PyTensor>()
                .map_err(|_| bad_value("expected a sequence of tensors"))?;
            Ok(t.borrow().t.clone())
        })
        .collect()
}

/// `torch.cat(tensors, dim=0)`.
#[pyfunction]
#[pyo3(signature = (tensors, dim=0, *, axis=None))]
pub fn cat(tensors: &Bound<'_, PyAny>, dim: isize, axis: Option<isize>) -> PyResult<PyTensor> {
    let dim = axis.unwrap_or(dim);
    let ts = tensor_list(tensors)?;
    if ts.is_empty() {
        // ValueError, as PyTorch's Python layer (torch.stack([]) is a RuntimeError there).
        return Err(PyValueError::new_err(
            "torch.cat(): expected a non-empty list of Tensors",
        ));
    }
    Ok(Tensor::cat(&ts.iter().collect::<Vec<_>>(), dim)
        .py()?
        .into())
}

/// `torch.stack(tensors, dim=0)`.
#[pyfunction]
#[pyo3(signature = (tensors, dim=0, *, axis=None))]
pub fn stack(tensors: &Bound<'_, PyAny>, dim: isize, axis: Option<isize>) -> PyResult<PyTensor> {
    let dim = axis.unwrap_or(dim);
    let ts = tensor_list(tensors)?;
    Ok(Tensor::stack(&ts.iter().collect::<Vec<_>>(), dim)
        .py()?
        .into())
}

/// `torch.einsum(equation, *operands)`; the operands may also come as one list.
#[pyfunction]
#[pyo3(signature = (equation, *operands))]
pub fn einsum(py: Python<'_>, equation: &str, operands: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
    let ts = match operands.len() {
        1 if operands.get_item(0)?.cast::<PyTensor>().is_err() => {
            tensor_list(&operands.get_item(0)?)?
        }
        _ => tensor_list(operands.as_any())?,
    };
    let eq = equation.to_string();
    nogil(py, usize::MAX, || {
        Tensor::einsum(&eq, &ts.iter().collect::<Vec<_>>())
    })
    .map(Into::into)
}

/// `torch.where(condition, x, y)` (numbers allowed for x and y), or `torch.where(condition)`
/// (the indices of the true elements, one tensor per dim).
#[pyfunction]
#[pyo3(signature = (condition, x=None, y=None))]
pub fn r#where(
    py: Python<'_>,
    condition: PyRef<'_, PyTensor>,
    x: Option<Operand>,
    y: Option<Operand>,
) -> PyResult<Py<PyAny>> {
    let (x, y) = match (x, y) {
        (None, None) => return condition.nonzero(py, true),
        (Some(x), Some(y)) => (x, y),
        _ => {
            return Err(PyTypeError::new_err(
                "where() takes a condition alone or with both x and y",
            ))
        }
    };
    // A number promotes with the other operand as a Python number does (or is a default
    // float when both are numbers).
    let (dtype, device) = match (&x, &y) {
        (Operand::Tensor(t), _) | (_, Operand::Tensor(t)) => (t.dtype(), t.device()),
        _ => (DType::F32, condition.t.device()),
    };
    let as_tensor = |o: Operand| -> PyResult<Tensor> {
        match o {
            Operand::Tensor(t) => Ok(t),
            Operand::Scalar(s) => {
                let d = ResultType::new().tensor(dtype, 1).scalar(s).finish();
                Tensor::scalar_tensor(s, d, device).py()
            }
        }
    };
    let out = Tensor::where_cond(&condition.t, &as_tensor(x)?, &as_tensor(y)?).py()?;
    Ok(Py::new(py, PyTensor::from(out))?.into_any())
}
