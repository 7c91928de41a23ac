//! `torch.nn.functional`: activations, linear and convolution layers, pooling, norms,
//! dropout, embedding, padding, attention and the losses, with PyTorch's signatures and
//! defaults. The heavy ones release the GIL while they run.

use crate::error::IntoPyResult;
use crate::tensor::{nogil, PyTensor};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use tinytorch::nn::functional as nnf;
use tinytorch::nn::{KlDivReduction, Reduction};
use tinytorch::ops::{ConvPadding, PadMode};
use tinytorch::Tensor;

type T<'a> = PyRef<'a, PyTensor>;
type OptT<'a> = Option<PyRef<'a, PyTensor>>;

fn opt(t: &OptT<'_>) -> Option<Tensor> {
    t.as_ref().map(|t| t.t.clone())
}

fn reduction(r: &str) -> PyResult<Reduction> {
    match r {
        "mean" => Ok(Reduction::Mean),
        "sum" => Ok(Reduction::Sum),
        "none" => Ok(Reduction::None),
        other => Err(PyValueError::new_err(format!(
            "{other} is not a valid value for reduction"
        ))),
    }
}

/// An int or a pair of ints (`kernel_size=3` or `(3, 5)`).
fn pair(obj: &Bound<'_, PyAny>) -> PyResult<[usize; 2]> {
    if let Ok(v) = obj.extract::<usize>() {
        return Ok([v, v]);
    }
    let v: Vec<usize> = obj.extract()?;
    match v.as_slice() {
        [a, b] => Ok([*a, *b]),
        [a] => Ok([*a, *a]),
        _ => Err(PyValueError::new_err(format!(
            "expected an int or a pair of ints, got {v:?}"
        ))),
    }
}

fn opt_pair(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<[usize; 2]>> {
    match obj {
        Some(o) if !o.is_none() => pair(o).map(Some),
        _ => Ok(None),
    }
}

/// `padding=`: an int, a pair, `"same"` or `"valid"`.
fn conv_padding(obj: &Bound<'_, PyAny>) -> PyResult<ConvPadding> {
    if let Ok(s) = obj.extract::<String>() {
        return match s.as_str() {
            "same" => Ok(ConvPadding::Same),
            "valid" => Ok(ConvPadding::Valid),
            other => Err(PyValueError::new_err(format!(
                "invalid padding string '{other}'"
            ))),
        };
    }
    let [a, b] = pair(obj)?;
    Ok(ConvPadding::Explicit(a, b))
}

macro_rules! activation {
    ($name:ident, $inplace:ident, $doc:expr) => {
        #[doc = $doc]
        #[pyfunction]
        #[pyo3(signature = (input, inplace=false))]
        pub fn $name(py: Python<'_>, input: T<'_>, inplace: bool) -> PyResult<PyTensor> {
            let x = input.t.clone();
            if inplace {
                // Written into `input` (its history rebased when it is in the graph).
                return nogil(py, x.numel(), || x.$inplace()).map(Into::into);
            }
            nogil(py, x.numel(), || x.$name()).map(Into::into)
        }
    };
}
activation!(relu, relu_, "`F.relu(input, inplace=False)`.");
activation!(sigmoid, sigmoid_, "`F.sigmoid(input)`.");
activation!(tanh, tanh_, "`F.tanh(input)`.");
activation!(silu, silu_, "`F.silu(input, inplace=False)`.");

/// `F.gelu(input, approximate="none")`.
#[pyfunction]
#[pyo3(signature = (input, approximate="none"))]
pub fn gelu(py: Python<'_>, input: T<'_>, approximate: &str) -> PyResult<PyTensor> {
    let x = input.t.clone();
    match approximate {
        "none" => nogil(py, x.numel(), || x.gelu()),
        "tanh" => nogil(py, x.numel(), || x.gelu_tanh()),
        other => {
            return Err(PyValueError::new_err(format!(
                "approximate must be 'none' or 'tanh', got '{other}'"
            )))
        }
    }
    .map(Into::into)
}

#[pyfunction]
#[pyo3(signature = (input, negative_slope=0.01, inplace=false))]
pub fn leaky_relu(input: T<'_>, negative_slope: f64, inplace: bool) -> PyResult<PyTensor> {
    if inplace {
        return Ok(input.t.leaky_relu_(negative_slope).py()?.into());
    }
    Ok(input.t.leaky_relu(negative_slope).py()?.into())
}

#[pyfunction]
#[pyo3(signature = (input, alpha=1.0, inplace=false))]
pub fn elu(input: T<'_>, alpha: f64, inplace: bool) -> PyResult<PyTensor> {
    if inplace {
        return Ok(input.t.elu_(alpha).py()?.into());
    }
    Ok(input.t.elu(alpha).py()?.into())
}

#[pyfunction]
#[pyo3(signature = (input, beta=1.0, threshold=20.0))]
pub fn softplus(input: T<'_>, beta: f64, threshold: f64) -> PyResult<PyTensor> {
    Ok(input.t.softplus(beta, threshold).py()?.into())
}

/// `F.softmax(input, dim, dtype=None)`.
#[pyfunction]
#[pyo3(signature = (input, dim, dtype=None))]
pub fn softmax(
    py: Python<'_>,
    input: T<'_>,
    dim: isize,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    input.softmax(py, dim, dtype)
}

#[pyfunction]
#[pyo3(signature = (input, dim, dtype=None))]
pub fn log_softmax(
    py: Python<'_>,
    input: T<'_>,
    dim: isize,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    input.log_softmax(py, dim, dtype)
}

/// `F.linear(input, weight, bias=None)`: `input @ weight.T + bias`.
#[pyfunction]
#[pyo3(signature = (input, weight, bias=None))]
pub fn linear(py: Python<'_>, input: T<'_>, weight: T<'_>, bias: OptT<'_>) -> PyResult<PyTensor> {
    let (x, w, b) = (input.t.clone(), weight.t.clone(), opt(&bias));
    nogil(py, usize::MAX, || nnf::linear(&x, &w, b.as_ref())).map(Into::into)
}

/// `F.conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1)`.
#[pyfunction]
#[pyo3(signature = (input, weight, bias=None, stride=None, padding=None, dilation=None, groups=1))]
#[allow(clippy::too_many_arguments)]
pub fn conv2d(
    py: Python<'_>,
    input: T<'_>,
    weight: T<'_>,
    bias: OptT<'_>,
    stride: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    dilation: Option<&Bound<'_, PyAny>>,
    groups: usize,
) -> PyResult<PyTensor> {
    let stride = opt_pair(stride)?.unwrap_or([1, 1]);
    let dilation = opt_pair(dilation)?.unwrap_or([1, 1]);
    let padding = match padding {
        Some(p) if !p.is_none() => conv_padding(p)?,
        _ => ConvPadding::Explicit(0, 0),
    };
    let (x, w, b) = (input.t.clone(), weight.t.clone(), opt(&bias));
    nogil(py, usize::MAX, || {
        x.conv2d(&w, b.as_ref(), stride, padding, dilation, groups)
    })
    .map(Into::into)
}

/// `F.conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1)`.
#[pyfunction]
#[pyo3(signature = (input, weight, bias=None, stride=1, padding=None, dilation=1, groups=1))]
#[allow(clippy::too_many_arguments)]
pub fn conv1d(
    py: Python<'_>,
    input: T<'_>,
    weight: T<'_>,
    bias: OptT<'_>,
    stride: usize,
    padding: Option<&Bound<'_, PyAny>>,
    dilation: usize,
    groups: usize,
) -> PyResult<PyTensor> {
    let padding = match padding {
        Some(p) if !p.is_none() => match p.extract::<usize>() {
            Ok(v) => ConvPadding::Explicit(0, v),
            Err(_) => conv_padding(p)?,
        },
        _ => ConvPadding::Explicit(0, 0),
    };
    let (x, w, b) = (input.t.clone(), weight.t.clone(), opt(&bias));
    nogil(py, usize::MAX, || {
        x.conv1d(&w, b.as_ref(), stride, padding, dilation, groups)
    })
    .map(Into::into)
}

/// `F.conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
/// groups=1, dilation=1)`.
#[pyfunction]
#[pyo3(signature = (input, weight, bias=None, stride=None, padding=None, output_padding=None, groups=1, dilation=None))]
#[allow(clippy::too_many_arguments)]
pub fn conv_transpose2d(
    py: Python<'_>,
    input: T<'_>,
    weight: T<'_>,
    bias: OptT<'_>,
    stride: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    output_padding: Option<&Bound<'_, PyAny>>,
    groups: usize,
    dilation: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let stride = opt_pair(stride)?.unwrap_or([1, 1]);
    let padding = opt_pair(padding)?.unwrap_or([0, 0]);
    let output_padding = opt_pair(output_padding)?.unwrap_or([0, 0]);
    let dilation = opt_pair(dilation)?.unwrap_or([1, 1]);
    let (x, w, b) = (input.t.clone(), weight.t.clone(), opt(&bias));
    nogil(py, usize::MAX, || {
        x.conv_transpose2d(
            &w,
            b.as_ref(),
            stride,
            padding,
            output_padding,
            groups,
            dilation,
        )
    })
    .map(Into::into)
}

/// `F.max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False)`.
#[pyfunction]
#[pyo3(signature = (input, kernel_size, stride=None, padding=None, dilation=None, ceil_mode=false, return_indices=false))]
#[allow(clippy::too_many_arguments)]
pub fn max_pool2d(
    py: Python<'_>,
    input: T<'_>,
    kernel_size: &Bound<'_, PyAny>,
    stride: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    dilation: Option<&Bound<'_, PyAny>>,
    ceil_mode: bool,
    return_indices: bool,
) -> PyResult<PyTensor> {
    if return_indices {
        return Err(PyTypeError::new_err(
            "max_pool2d(return_indices=True) is not supported",
        ));
    }
    let kernel = pair(kernel_size)?;
    let stride = opt_pair(stride)?;
    let padding = opt_pair(padding)?.unwrap_or([0, 0]);
    let dilation = opt_pair(dilation)?.unwrap_or([1, 1]);
    let x = input.t.clone();
    nogil(py, x.numel(), || {
        x.max_pool2d(kernel, stride, padding, dilation, ceil_mode)
    })
    .map(Into::into)
}

/// `F.avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
/// count_include_pad=True)`.
#[pyfunction]
#[pyo3(signature = (input, kernel_size, stride=None, padding=None, ceil_mode=false, count_include_pad=true))]
pub fn avg_pool2d(
    py: Python<'_>,
    input: T<'_>,
    kernel_size: &Bound<'_, PyAny>,
    stride: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    ceil_mode: bool,
    count_include_pad: bool,
) -> PyResult<PyTensor> {
    if ceil_mode {
        return Err(PyTypeError::new_err(
            "avg_pool2d(ceil_mode=True) is not supported",
        ));
    }
    let kernel = pair(kernel_size)?;
    let stride = opt_pair(stride)?;
    let padding = opt_pair(padding)?.unwrap_or([0, 0]);
    let x = input.t.clone();
    nogil(py, x.numel(), || {
        x.avg_pool2d(kernel, stride, padding, count_include_pad)
    })
    .map(Into::into)
}

#[pyfunction]
pub fn adaptive_avg_pool2d(
    py: Python<'_>,
    input: T<'_>,
    output_size: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let size = pair(output_size)?;
    let x = input.t.clone();
    nogil(py, x.numel(), || x.adaptive_avg_pool2d(size)).map(Into::into)
}

/// An int or a one-element sequence (the 1-D pools' `kernel_size=3` or `(3,)`).
fn single(obj: &Bound<'_, PyAny>) -> PyResult<usize> {
    if let Ok(v) = obj.extract::<usize>() {
        return Ok(v);
    }
    let v: Vec<usize> = obj.extract()?;
    match v.as_slice() {
        [a] => Ok(*a),
        _ => Err(PyValueError::new_err(format!(
            "expected an int or a single-element tuple, got {v:?}"
        ))),
    }
}

fn opt_single(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<usize>> {
    match obj {
        Some(o) if !o.is_none() => single(o).map(Some),
        _ => Ok(None),
    }
}

/// `F.max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False)`.
#[pyfunction]
#[pyo3(signature = (input, kernel_size, stride=None, padding=None, dilation=None, ceil_mode=false, return_indices=false))]
#[allow(clippy::too_many_arguments)]
pub fn max_pool1d(
    py: Python<'_>,
    input: T<'_>,
    kernel_size: &Bound<'_, PyAny>,
    stride: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    dilation: Option<&Bound<'_, PyAny>>,
    ceil_mode: bool,
    return_indices: bool,
) -> PyResult<PyTensor> {
    if return_indices {
        return Err(PyTypeError::new_err(
            "max_pool1d(return_indices=True) is not supported",
        ));
    }
    let kernel = single(kernel_size)?;
    let stride = opt_single(stride)?;
    let padding = opt_single(padding)?.unwrap_or(0);
    let dilation = opt_single(dilation)?.unwrap_or(1);
    let x = input.t.clone();
    nogil(py, x.numel(), || {
        x.max_pool1d(kernel, stride, padding, dilation, ceil_mode)
    })
    .map(Into::into)
}

/// `F.avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
/// count_include_pad=True)`.
#[pyfunction]
#[pyo3(signature = (input, kernel_size, stride=None, padding=None, ceil_mode=false, count_include_pad=true))]
pub fn avg_pool1d(
    py: Python<'_>,
    input: T<'_>,
    kernel_size: &Bound<'_, PyAny>,
    stride: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    ceil_mode: bool,
    count_include_pad: bool,
) -> PyResult<PyTensor> {
    if ceil_mode {
        return Err(PyTypeError::new_err(
            "avg_pool1d(ceil_mode=True) is not supported",
        ));
    }
    let kernel = single(kernel_size)?;
    let stride = opt_single(stride)?;
    let padding = opt_single(padding)?.unwrap_or(0);
    let x = input.t.clone();
    nogil(py, x.numel(), || {
        x.avg_pool1d(kernel, stride, padding, count_include_pad)
    })
    .map(Into::into)
}

/// `F.adaptive_max_pool2d(input, output_size, return_indices=False)`; a `None` in
/// `output_size` keeps that input size.
#[pyfunction]
#[pyo3(signature = (input, output_size, return_indices=false))]
pub fn adaptive_max_pool2d(
    py: Python<'_>,
    input: T<'_>,
    output_size: &Bound<'_, PyAny>,
    return_indices: bool,
) -> PyResult<PyTensor> {
    if return_indices {
        return Err(PyTypeError::new_err(
            "adaptive_max_pool2d(return_indices=True) is not supported",
        ));
    }
    let x = input.t.clone();
    let size = adaptive_size(output_size, x.shape())?;
    nogil(py, x.numel(), || x.adaptive_max_pool2d(size)).map(Into::into)
}

/// An adaptive pool's `output_size`: an int, or a pair whose `None` entries keep the input's
/// size.
fn adaptive_size(obj: &Bound<'_, PyAny>, shape: &[usize]) -> PyResult<[usize; 2]> {
    if let Ok(v) = obj.extract::<Vec<Option<usize>>>() {
        if let [a, b] = v.as_slice() {
            let n = shape.len();
            let keep = |o: &Option<usize>, back: usize| -> PyResult<usize> {
                match o {
                    Some(v) => Ok(*v),
                    None if n >= 2 => Ok(shape[n - back]),
                    None => Err(PyValueError::new_err(format!(
                        "output_size None needs a 3-d or 4-d input, got shape {shape:?}"
                    ))),
                }
            };
            return Ok([keep(a, 2)?, keep(b, 1)?]);
        }
    }
    pair(obj)
}

/// `F.pixel_shuffle(input, upscale_factor)`.
#[pyfunction]
pub fn pixel_shuffle(input: T<'_>, upscale_factor: usize) -> PyResult<PyTensor> {
    Ok(input.t.pixel_shuffle(upscale_factor).py()?.into())
}

/// `F.pixel_unshuffle(input, downscale_factor)`.
#[pyfunction]
pub fn pixel_unshuffle(input: T<'_>, downscale_factor: usize) -> PyResult<PyTensor> {
    Ok(input.t.pixel_unshuffle(downscale_factor).py()?.into())
}

/// `F.interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
/// recompute_scale_factor=None, antialias=False)`: `size` an int or a sequence of ints,
/// `scale_factor` a number or a sequence of numbers.
#[pyfunction]
#[pyo3(signature = (input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None, antialias=false))]
#[allow(clippy::too_many_arguments)]
pub fn interpolate(
    py: Python<'_>,
    input: T<'_>,
    size: Option<&Bound<'_, PyAny>>,
    scale_factor: Option<&Bound<'_, PyAny>>,
    mode: &str,
    align_corners: Option<bool>,
    recompute_scale_factor: Option<bool>,
    antialias: bool,
) -> PyResult<PyTensor> {
    if antialias {
        return Err(PyTypeError::new_err(
            "interpolate(antialias=True) is not supported",
        ));
    }
    let size: Option<Vec<usize>> = match size {
        Some(o) if !o.is_none() => Some(match o.extract::<usize>() {
            Ok(v) => vec![v],
            Err(_) => o.extract()?,
        }),
        _ => None,
    };
    let scale: Option<Vec<f64>> = match scale_factor {
        Some(o) if !o.is_none() => Some(match o.extract::<f64>() {
            Ok(v) => vec![v],
            Err(_) => o.extract()?,
        }),
        _ => None,
    };
    let mode = nnf::InterpolateMode::parse(mode).py()?;
    let x = input.t.clone();
    nogil(py, usize::MAX, || {
        nnf::interpolate(
            &x,
            size.as_deref(),
            scale.as_deref(),
            mode,
            align_corners,
            recompute_scale_factor,
        )
    })
    .map(Into::into)
}

/// `F.dropout(input, p=0.5, training=True)`.
#[pyfunction]
#[pyo3(signature = (input, p=0.5, training=true, inplace=false))]
pub fn dropout(input: T<'_>, p: f64, training: bool, inplace: bool) -> PyResult<PyTensor> {
    let _ = inplace;
    Ok(nnf::dropout(&input.t, p, training).py()?.into())
}

/// `F.embedding(input, weight, padding_idx=None)`.
#[pyfunction]
#[pyo3(signature = (input, weight, padding_idx=None))]
pub fn embedding(input: T<'_>, weight: T<'_>, padding_idx: Option<i64>) -> PyResult<PyTensor> {
    let n = weight.t.shape().first().copied().unwrap_or(0) as i64;
    let padding_idx = padding_idx.map(|p| if p < 0 { (p + n) as usize } else { p as usize });
    Ok(nnf::embedding(&input.t, &weight.t, padding_idx)
        .py()?
        .into())
}

/// `F.one_hot(tensor, num_classes=-1)`.
#[pyfunction]
#[pyo3(signature = (tensor, num_classes=-1))]
pub fn one_hot(tensor: T<'_>, num_classes: i64) -> PyResult<PyTensor> {
    Ok(tensor.t.one_hot(num_classes).py()?.into())
}

/// `F.pad(input, pad, mode="constant", value=None)`.
#[pyfunction]
#[pyo3(signature = (input, pad, mode="constant", value=None))]
pub fn pad(input: T<'_>, pad: Vec<isize>, mode: &str, value: Option<f64>) -> PyResult<PyTensor> {
    let mode = match mode {
        "constant" => PadMode::Constant(value.unwrap_or(0.0)),
        "reflect" => PadMode::Reflect,
        "replicate" => PadMode::Replicate,
        other => {
            return Err(PyValueError::new_err(format!(
                "unsupported padding mode '{other}'"
            )))
        }
    };
    Ok(input.t.pad(&pad, mode).py()?.into())
}

/// `F.layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5)`.
#[pyfunction]
#[pyo3(signature = (input, normalized_shape, weight=None, bias=None, eps=1e-5))]
pub fn layer_norm(
    py: Python<'_>,
    input: T<'_>,
    normalized_shape: Vec<usize>,
    weight: OptT<'_>,
    bias: OptT<'_>,
    eps: f64,
) -> PyResult<PyTensor> {
    let (x, w, b) = (input.t.clone(), opt(&weight), opt(&bias));
    nogil(py, x.numel(), || {
        nnf::layer_norm(&x, &normalized_shape, w.as_ref(), b.as_ref(), eps)
    })
    .map(Into::into)
}

/// `F.rms_norm(input, normalized_shape, weight=None, eps=None)`.
#[pyfunction]
#[pyo3(signature = (input, normalized_shape, weight=None, eps=None))]
pub fn rms_norm(
    py: Python<'_>,
    input: T<'_>,
    normalized_shape: Vec<usize>,
    weight: OptT<'_>,
    eps: Option<f64>,
) -> PyResult<PyTensor> {
    let (x, w) = (input.t.clone(), opt(&weight));
    nogil(py, x.numel(), || {
        nnf::rms_norm(&x, &normalized_shape, w.as_ref(), eps)
    })
    .map(Into::into)
}

/// `F.group_norm(input, num_groups, weight=None, bias=None, eps=1e-5)`.
#[pyfunction]
#[pyo3(signature = (input, num_groups, weight=None, bias=None, eps=1e-5))]
pub fn group_norm(
    py: Python<'_>,
    input: T<'_>,
    num_groups: usize,
    weight: OptT<'_>,
    bias: OptT<'_>,
    eps: f64,
) -> PyResult<PyTensor> {
    let (x, w, b) = (input.t.clone(), opt(&weight), opt(&bias));
    nogil(py, x.numel(), || {
        nnf::group_norm(&x, num_groups, w.as_ref(), b.as_ref(), eps)
    })
    .map(Into::into)
}

/// `F.batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
/// momentum=0.1, eps=1e-5)`; in training the running statistics update in place.
#[pyfunction]
#[pyo3(signature = (input, running_mean, running_var, weight=None, bias=None, training=false, momentum=0.1, eps=1e-5))]
#[allow(clippy::too_many_arguments)]
pub fn batch_norm(
    py: Python<'_>,
    input: T<'_>,
    running_mean: OptT<'_>,
    running_var: OptT<'_>,
    weight: OptT<'_>,
    bias: OptT<'_>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> PyResult<PyTensor> {
    let (x, rm, rv, w, b) = (
        input.t.clone(),
        opt(&running_mean),
        opt(&running_var),
        opt(&weight),
        opt(&bias),
    );
    nogil(py, x.numel(), || {
        nnf::batch_norm(
            &x,
            rm.as_ref(),
            rv.as_ref(),
            w.as_ref(),
            b.as_ref(),
            training,
            momentum,
            eps,
        )
    })
    .map(Into::into)
}

/// `F.scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
/// is_causal=False, scale=None)`.
#[pyfunction]
#[pyo3(signature = (query, key, value, attn_mask=None, dropout_p=0.0, is_causal=false, scale=None))]
#[allow(clippy::too_many_arguments)]
pub fn scaled_dot_product_attention(
    py: Python<'_>,
    query: T<'_>,
    key: T<'_>,
    value: T<'_>,
    attn_mask: OptT<'_>,
    dropout_p: f64,
    is_causal: bool,
    scale: Option<f64>,
) -> PyResult<PyTensor> {
    let (q, k, v, m) = (
        query.t.clone(),
        key.t.clone(),
        value.t.clone(),
        opt(&attn_mask),
    );
    nogil(py, usize::MAX, || {
        q.scaled_dot_product_attention(&k, &v, m.as_ref(), dropout_p, is_causal, scale)
    })
    .map(Into::into)
}

// ---- losses ------------------------------------------------------------------------------

/// `F.cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean",
/// label_smoothing=0.0)`.
#[pyfunction]
#[pyo3(signature = (input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean", label_smoothing=0.0))]
#[allow(clippy::too_many_arguments)]
pub fn cross_entropy(
    py: Python<'_>,
    input: T<'_>,
    target: T<'_>,
    weight: OptT<'_>,
    size_average: Option<&Bound<'_, PyAny>>,
    ignore_index: i64,
    reduce: Option<&Bound<'_, PyAny>>,
    reduction: &str,
    label_smoothing: f64,
) -> PyResult<PyTensor> {
    legacy_reduction(size_average, reduce)?;
    let r = self::reduction(reduction)?;
    let (x, y, w) = (input.t.clone(), target.t.clone(), opt(&weight));
    nogil(py, x.numel(), || {
        nnf::cross_entropy(&x, &y, w.as_ref(), ignore_index, r, label_smoothing)
    })
    .map(Into::into)
}

/// `F.nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean")`.
#[pyfunction]
#[pyo3(signature = (input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"))]
pub fn nll_loss(
    input: T<'_>,
    target: T<'_>,
    weight: OptT<'_>,
    size_average: Option<&Bound<'_, PyAny>>,
    ignore_index: i64,
    reduce: Option<&Bound<'_, PyAny>>,
    reduction: &str,
) -> PyResult<PyTensor> {
    legacy_reduction(size_average, reduce)?;
    let w = opt(&weight);
    Ok(nnf::nll_loss(
        &input.t,
        &target.t,
        w.as_ref(),
        ignore_index,
        self::reduction(reduction)?,
    )
    .py()?
    .into())
}

/// PyTorch's deprecated `size_average`/`reduce` are not supported (use `reduction`).
fn legacy_reduction(
    size_average: Option<&Bound<'_, PyAny>>,
    reduce: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    if size_average.is_some_and(|v| !v.is_none()) || reduce.is_some_and(|v| !v.is_none()) {
        return Err(PyTypeError::new_err(
            "size_average and reduce are deprecated; pass reduction= instead",
        ));
    }
    Ok(())
}

macro_rules! pointwise_loss {
    ($name:ident, $doc:expr) => {
        #[doc = $doc]
        #[pyfunction]
        #[pyo3(signature = (input, target, reduction="mean"))]
        pub fn $name(input: T<'_>, target: T<'_>, reduction: &str) -> PyResult<PyTensor> {
            Ok(nnf::$name(&input.t, &target.t, self::reduction(reduction)?)
                .py()?
                .into())
        }
    };
}
pointwise_loss!(mse_loss, "`F.mse_loss(input, target, reduction=\"mean\")`.");
pointwise_loss!(l1_loss, "`F.l1_loss(input, target, reduction=\"mean\")`.");

#[pyfunction]
#[pyo3(signature = (input, target, reduction="mean", beta=1.0))]
pub fn smooth_l1_loss(
    input: T<'_>,
    target: T<'_>,
    reduction: &str,
    beta: f64,
) -> PyResult<PyTensor> {
    Ok(
        nnf::smooth_l1_loss(&input.t, &target.t, self::reduction(reduction)?, beta)
            .py()?
            .into(),
    )
}

#[pyfunction]
#[pyo3(signature = (input, target, reduction="mean", delta=1.0))]
pub fn huber_loss(input: T<'_>, target: T<'_>, reduction: &str, delta: f64) -> PyResult<PyTensor> {
    Ok(
        nnf::huber_loss(&input.t, &target.t, self::reduction(reduction)?, delta)
            .py()?
            .into(),
    )
}

#[pyfunction]
#[pyo3(signature = (input, target, weight=None, reduction="mean"))]
pub fn binary_cross_entropy(
    input: T<'_>,
    target: T<'_>,
    weight: OptT<'_>,
    reduction: &str,
) -> PyResult<PyTensor> {
    let w = opt(&weight);
    Ok(
        nnf::binary_cross_entropy(&input.t, &target.t, w.as_ref(), self::reduction(reduction)?)
            .py()?
            .into(),
    )
}

#[pyfunction]
#[pyo3(signature = (input, target, weight=None, reduction="mean", pos_weight=None))]
pub fn binary_cross_entropy_with_logits(
    input: T<'_>,
    target: T<'_>,
    weight: OptT<'_>,
    reduction: &str,
    pos_weight: OptT<'_>,
) -> PyResult<PyTensor> {
    let (w, pw) = (opt(&weight), opt(&pos_weight));
    Ok(nnf::binary_cross_entropy_with_logits(
        &input.t,
        &target.t,
        w.as_ref(),
        self::reduction(reduction)?,
        pw.as_ref(),
    )
    .py()?
    .into())
}

/// `F.kl_div(input, target, reduction="mean", log_target=False)`.
#[pyfunction]
#[pyo3(signature = (input, target, reduction="mean", log_target=false))]
pub fn kl_div(
    input: T<'_>,
    target: T<'_>,
    reduction: &str,
    log_target: bool,
) -> PyResult<PyTensor> {
    let r = match reduction {
        "mean" => KlDivReduction::Mean,
        "sum" => KlDivReduction::Sum,
        "none" => KlDivReduction::None,
        "batchmean" => KlDivReduction::BatchMean,
        other => {
            return Err(PyValueError::new_err(format!(
                "{other} is not a valid value for reduction"
            )))
        }
    };
    Ok(nnf::kl_div(&input.t, &target.t, r, log_target).py()?.into())
}

/// `F.distillation_loss(student_logits, teacher_logits, target, temperature=4.0, alpha=0.9)`
/// (a TinyTorch addition): Hinton et al.'s `alpha * T² * KL + (1 - alpha) * cross_entropy`.
#[pyfunction]
#[pyo3(signature = (student_logits, teacher_logits, target, temperature=4.0, alpha=0.9))]
pub fn distillation_loss(
    student_logits: T<'_>,
    teacher_logits: T<'_>,
    target: T<'_>,
    temperature: f64,
    alpha: f64,
) -> PyResult<PyTensor> {
    Ok(nnf::distillation_loss(
        &student_logits.t,
        &teacher_logits.t,
        &target.t,
        temperature,
        alpha,
    )
    .py()?
    .into())
}

/// Register every function of this file on `m` (the `_functional` submodule).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    macro_rules! add {
        ($($f:ident),*) => { $( m.add_function(wrap_pyfunction!($f, m)?)?; )* };
    }
    add!(
        distillation_loss,
        relu,
        sigmoid,
        tanh,
        silu,
        gelu,
        leaky_relu,
        elu,
        softplus,
        softmax,
        log_softmax,
        linear,
        conv1d,
        conv2d,
        conv_transpose2d,
        max_pool2d,
        avg_pool2d,
        adaptive_avg_pool2d,
        max_pool1d,
        avg_pool1d,
        adaptive_max_pool2d,
        pixel_shuffle,
        pixel_unshuffle,
        interpolate,
        dropout,
        embedding,
        one_hot,
        pad,
        layer_norm,
        rms_norm,
        group_norm,
        batch_norm,
        scaled_dot_product_attention,
        cross_entropy,
        nll_loss,
        mse_loss,
        l1_loss,
        smooth_l1_loss,
        huber_loss,
        binary_cross_entropy,
        binary_cross_entropy_with_logits,
        kl_div
    );
    Ok(())
}
