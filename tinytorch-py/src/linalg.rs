//! `torch.linalg`'s native half (the `_linalg` submodule): one function per TinyTorch op,
//! with the GIL released while it runs. `python/tinytorch/linalg.py` gives them PyTorch's
//! signatures (keyword names, `ord` strings, named-tuple results) and the aliases.

use crate::error::IntoPyResult;
use crate::tensor::{nogil, PyTensor};
use pyo3::prelude::*;
use tinytorch::ops::{MatrixNormOrd, QrMode};
use tinytorch::Tensor;

fn work(t: &Tensor) -> usize {
    // Factorisations are O(n^3): release the GIL for any matrix of some size.
    t.numel() * 16
}

type T<'a> = PyRef<'a, PyTensor>;

/// `f` of the matrix (or batch) `a`, with the GIL released while it runs when `a` is of some
/// size (see [`work`]).
fn linalg<R: Send>(
    py: Python<'_>,
    a: T<'_>,
    f: impl FnOnce(&Tensor) -> tinytorch::Result<R> + Send,
) -> PyResult<R> {
    let a = a.t.clone();
    nogil(py, work(&a), || f(&a))
}

/// `linalg.inv(A)`.
#[pyfunction]
fn inv(py: Python<'_>, a: T<'_>) -> PyResult<PyTensor> {
    linalg(py, a, Tensor::linalg_inv).map(Into::into)
}

/// `linalg.solve(A, B, left)`.
#[pyfunction]
fn solve(py: Python<'_>, a: T<'_>, b: T<'_>, left: bool) -> PyResult<PyTensor> {
    let b = b.t.clone();
    linalg(py, a, |a| a.linalg_solve(&b, left)).map(Into::into)
}

/// `linalg.solve_triangular(A, B, upper, left, unitriangular)`.
#[pyfunction]
fn solve_triangular(
    py: Python<'_>,
    a: T<'_>,
    b: T<'_>,
    upper: bool,
    left: bool,
    unitriangular: bool,
) -> PyResult<PyTensor> {
    let b = b.t.clone();
    linalg(py, a, |a| {
        a.linalg_solve_triangular(&b, upper, left, unitriangular)
    })
    .map(Into::into)
}

/// `linalg.det(A)`.
#[pyfunction]
fn det(py: Python<'_>, a: T<'_>) -> PyResult<PyTensor> {
    linalg(py, a, Tensor::linalg_det).map(Into::into)
}

/// `linalg.slogdet(A)` as `(sign, logabsdet)`.
#[pyfunction]
fn slogdet(py: Python<'_>, a: T<'_>) -> PyResult<(PyTensor, PyTensor)> {
    let (s, l) = linalg(py, a, Tensor::linalg_slogdet)?;
    Ok((s.into(), l.into()))
}

/// `linalg.cholesky(A, upper)`.
#[pyfunction]
fn cholesky(py: Python<'_>, a: T<'_>, upper: bool) -> PyResult<PyTensor> {
    linalg(py, a, |a| a.linalg_cholesky(upper)).map(Into::into)
}

/// `linalg.qr(A, mode)` as `(Q, R)`.
#[pyfunction]
fn qr(py: Python<'_>, a: T<'_>, mode: &str) -> PyResult<(PyTensor, PyTensor)> {
    let mode = QrMode::parse(mode).py()?;
    let (q, r) = linalg(py, a, |a| a.linalg_qr(mode))?;
    Ok((q.into(), r.into()))
}

/// `linalg.eigh(A, UPLO)` as `(eigenvalues, eigenvectors)`.
#[pyfunction]
fn eigh(py: Python<'_>, a: T<'_>, upper: bool) -> PyResult<(PyTensor, PyTensor)> {
    let (w, v) = linalg(py, a, |a| a.linalg_eigh(upper))?;
    Ok((w.into(), v.into()))
}

/// `linalg.svd(A, full_matrices)` as `(U, S, Vh)`.
#[pyfunction]
fn svd(py: Python<'_>, a: T<'_>, full_matrices: bool) -> PyResult<(PyTensor, PyTensor, PyTensor)> {
    let (u, s, vh) = linalg(py, a, |a| a.linalg_svd(full_matrices))?;
    Ok((u.into(), s.into(), vh.into()))
}

/// `linalg.vector_norm(x, ord, dim, keepdim)` (`dims` empty: all).
#[pyfunction]
fn vector_norm(
    py: Python<'_>,
    x: T<'_>,
    ord: f64,
    dims: Vec<isize>,
    keepdim: bool,
) -> PyResult<PyTensor> {
    let x = x.t.clone();
    nogil(py, x.numel(), || x.linalg_vector_norm(ord, &dims, keepdim)).map(Into::into)
}

/// `linalg.matrix_norm(A, ord, dim, keepdim)`; `ord` is `"fro"`, `"nuc"` or a number.
#[pyfunction]
fn matrix_norm(
    py: Python<'_>,
    a: T<'_>,
    ord: &Bound<'_, PyAny>,
    dims: (isize, isize),
    keepdim: bool,
) -> PyResult<PyTensor> {
    let ord = match ord.extract::<String>() {
        Ok(s) if s == "fro" => MatrixNormOrd::Fro,
        Ok(s) if s == "nuc" => MatrixNormOrd::Nuc,
        Ok(s) => {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                "linalg.matrix_norm: Order {s} not supported."
            )))
        }
        Err(_) => MatrixNormOrd::P(ord.extract::<f64>()?),
    };
    linalg(py, a, |a| {
        a.linalg_matrix_norm(ord, [dims.0, dims.1], keepdim)
    })
    .map(Into::into)
}

/// `linalg.matrix_power(A, n)`.
#[pyfunction]
fn matrix_power(py: Python<'_>, a: T<'_>, n: i64) -> PyResult<PyTensor> {
    linalg(py, a, |a| a.linalg_matrix_power(n)).map(Into::into)
}

/// `linalg.pinv(A, rtol)`.
#[pyfunction]
#[pyo3(signature = (a, rtol=None))]
fn pinv(py: Python<'_>, a: T<'_>, rtol: Option<f64>) -> PyResult<PyTensor> {
    linalg(py, a, |a| a.linalg_pinv(rtol)).map(Into::into)
}

/// The solution of `linalg.lstsq(A, B, rcond)`.
#[pyfunction]
#[pyo3(signature = (a, b, rcond=None))]
fn lstsq(py: Python<'_>, a: T<'_>, b: T<'_>, rcond: Option<f64>) -> PyResult<PyTensor> {
    let b = b.t.clone();
    linalg(py, a, |a| a.linalg_lstsq(&b, rcond)).map(Into::into)
}

/// Add the functions to the `_linalg` submodule.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    macro_rules! add {
        ($($f:ident),* $(,)?) => { $( m.add_function(wrap_pyfunction!($f, m)?)?; )* };
    }
    add!(
        inv,
        solve,
        solve_triangular,
        det,
        slogdet,
        cholesky,
        qr,
        eigh,
        svd,
        vector_norm,
        matrix_norm,
        matrix_power,
        pinv,
        lstsq
    );
    m.add(
        "LinAlgError",
        m.py().get_type::<crate::error::LinAlgError>(),
    )?;
    Ok(())
}
