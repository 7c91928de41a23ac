//! `torch.nn.functional.interpolate`: nearest (and nearest-exact) resampling of 1-3 spatial
//! dims, linear of `(N, C, W)` and bilinear of `(N, C, H, W)`, composed per spatial axis
//! from `index_select` (and, for the linear modes, two weighted rows summed), so the backward
//! is `index_add`'s scatter-add: the replicated pixels' gradients summed for nearest, each
//! input pixel's weighted share for (bi)linear. No new primitive, so every device runs it.
//!
//! Source coordinates follow PyTorch's CPU kernels (`UpSample.h`) exactly, in the precision
//! they use (`f32` for f32/f16/bf16, `f64` for f64): with `scale_factor` (and
//! `recompute_scale_factor` not true) the mapping uses `1 / scale_factor`, otherwise
//! `in / out`; `align_corners` maps corner to corner with `(in - 1) / (out - 1)`.

use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};
use num_traits::{Float, FromPrimitive, ToPrimitive};

const OP: &str = "interpolate";

/// The resampling rule of [`interpolate`] (PyTorch's `mode=` strings).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InterpolateMode {
    /// `"nearest"`: source index `floor(dst * scale)` (PyTorch's legacy rule).
    Nearest,
    /// `"nearest-exact"`: source index `floor((dst + 0.5) * scale)` (pixel centres).
    NearestExact,
    /// `"linear"`: 3-d `(N, C, W)` inputs.
    Linear,
    /// `"bilinear"`: 4-d `(N, C, H, W)` inputs.
    Bilinear,
}

impl InterpolateMode {
    /// The mode of a PyTorch `mode=` string.
    pub fn parse(mode: &str) -> Result<InterpolateMode> {
        match mode {
            "nearest" => Ok(InterpolateMode::Nearest),
            "nearest-exact" => Ok(InterpolateMode::NearestExact),
            "linear" => Ok(InterpolateMode::Linear),
            "bilinear" => Ok(InterpolateMode::Bilinear),
            other => Err(Error::invalid(
                OP,
                format!(
                    "mode \"{other}\" is not supported (nearest, nearest-exact, linear, bilinear)"
                ),
            )),
        }
    }

    /// PyTorch's name of the mode.
    pub fn name(self) -> &'static str {
        match self {
            InterpolateMode::Nearest => "nearest",
            InterpolateMode::NearestExact => "nearest-exact",
            InterpolateMode::Linear => "linear",
            InterpolateMode::Bilinear => "bilinear",
        }
    }

    fn interpolating(self) -> bool {
        matches!(self, InterpolateMode::Linear | InterpolateMode::Bilinear)
    }
}

/// A per-axis list: one value for every spatial dim, or one value for all of them (PyTorch's
/// int or float shorthand).
fn per_axis<T: Copy + std::fmt::Debug>(
    what: &str,
    v: &[T],
    n: usize,
    shape: &[usize],
) -> Result<Vec<T>> {
    match v.len() {
        1 => Ok(vec![v[0]; n]),
        len if len == n => Ok(v.to_vec()),
        len => Err(Error::shape(
            OP,
            format!(
                "input and {what} must have the same number of spatial dimensions, but got \
                 input of shape {shape:?} ({n} spatial dims) and {what} {v:?} ({len})"
            ),
        )),
    }
}

/// Resample `input` (`(N, C, *spatial)`, 1-3 spatial dims) to `size` or by `scale_factor`
/// (exactly one of them; a single value applies to every spatial dim), as
/// `torch.nn.functional.interpolate(input, size, scale_factor, mode, align_corners,
/// recompute_scale_factor)` without antialiasing. The output size for `scale_factor` is
/// `floor(in * scale_factor)`. `align_corners` is only for the linear modes (`None` means
/// false); `recompute_scale_factor=Some(true)` maps coordinates with `in / out` instead of
/// `1 / scale_factor`.
pub fn interpolate(
    input: &Tensor,
    size: Option<&[usize]>,
    scale_factor: Option<&[f64]>,
    mode: InterpolateMode,
    align_corners: Option<bool>,
    recompute_scale_factor: Option<bool>,
) -> Result<Tensor> {
    let shape = input.shape();
    if !input.dtype().is_float() {
        return Err(Error::dtype(
            OP,
            format!(
                "mode \"{}\" needs a floating-point input, got {}",
                mode.name(),
                input.dtype()
            ),
        ));
    }
    let spatial = input.ndim().saturating_sub(2);
    let fits = match mode {
        InterpolateMode::Nearest | InterpolateMode::NearestExact => (1..=3).contains(&spatial),
        InterpolateMode::Linear => spatial == 1,
        InterpolateMode::Bilinear => spatial == 2,
    };
    if input.ndim() < 3 || !fits {
        let want = match mode {
            InterpolateMode::Linear => "3-d (N, C, W)",
            InterpolateMode::Bilinear => "4-d (N, C, H, W)",
            _ => "3-d, 4-d or 5-d (N, C, ...)",
        };
        return Err(Error::shape(
            OP,
            format!(
                "mode \"{}\" needs a {want} input, got shape {shape:?}",
                mode.name()
            ),
        ));
    }
    if align_corners.is_some() && !mode.interpolating() {
        return Err(Error::invalid(
            OP,
            format!(
                "align_corners option can only be set with the interpolating modes (linear, \
                 bilinear), not with \"{}\"",
                mode.name()
            ),
        ));
    }
    let align_corners = align_corners.unwrap_or(false);
    let in_sizes = &shape[2..];
    // Output sizes, and the scale factors the coordinate mapping uses (None: in / out).
    let (out_sizes, scales): (Vec<usize>, Vec<Option<f64>>) = match (size, scale_factor) {
        (Some(_), Some(_)) => {
            return Err(Error::invalid(
                OP,
                "only one of size or scale_factor should be defined",
            ))
        }
        (None, None) => {
            return Err(Error::invalid(
                OP,
                "either size or scale_factor should be defined",
            ))
        }
        (Some(size), None) => {
            if recompute_scale_factor == Some(true) {
                return Err(Error::invalid(
                    OP,
                    "recompute_scale_factor is not meaningful with an explicit size",
                ));
            }
            (per_axis("size", size, spatial, shape)?, vec![None; spatial])
        }
        (None, Some(sf)) => {
            let sf = per_axis("scale_factor", sf, spatial, shape)?;
            let mut out = Vec::with_capacity(spatial);
            for (&len, &s) in in_sizes.iter().zip(&sf) {
                let o = (len as f64 * s).floor();
                // Not a size at all: reported below like a size of 0.
                out.push(if o.is_finite() && o >= 1.0 {
                    o as usize
                } else {
                    0
                });
            }
            let keep = recompute_scale_factor != Some(true);
            (out, sf.into_iter().map(|s| keep.then_some(s)).collect())
        }
    };
    if in_sizes.contains(&0) || out_sizes.contains(&0) {
        return Err(Error::shape(
            OP,
            format!(
                "input and output sizes should be greater than 0, but got input {in_sizes:?} \
                 and output {out_sizes:?} (scale_factor {scale_factor:?})"
            ),
        ));
    }
    // One axis at a time, the last first (PyTorch's order of accumulation for bilinear).
    let mut t = input.clone();
    for a in (0..spatial).rev() {
        let axis = Axis {
            dim: 2 + a,
            input: in_sizes[a],
            output: out_sizes[a],
            scale: scales[a],
        };
        t = match mode {
            InterpolateMode::Nearest | InterpolateMode::NearestExact => {
                let exact = mode == InterpolateMode::NearestExact;
                let legacy = spatial == 2;
                let idx = if t.dtype() == DType::F64 {
                    axis.nearest::<f64>(exact, legacy)
                } else {
                    axis.nearest::<f32>(exact, legacy)
                };
                let idx = Tensor::from_vec(idx, &[axis.output])?.to_device(t.device())?;
                t.index_select(axis.dim, &idx)?
            }
            InterpolateMode::Linear | InterpolateMode::Bilinear => {
                resample_linear(&t, &axis, align_corners)?
            }
        };
    }
    Ok(t)
}

/// One spatial axis of the resampling.
struct Axis {
    dim: usize,
    input: usize,
    output: usize,
    /// The user's scale factor, when the mapping uses it.
    scale: Option<f64>,
}

impl Axis {
    /// PyTorch's `compute_scales_value`: `1 / scale_factor` when given (and positive), else
    /// `in / out`, in the kernel's precision.
    fn scale_value<F: Float + FromPrimitive>(&self) -> F {
        match self.scale {
            Some(s) if s > 0.0 => F::from_f64(1.0 / s).expect("a float"),
            _ => {
                F::from_usize(self.input).expect("a float")
                    / F::from_usize(self.output).expect("a float")
            }
        }
    }

    /// Source index of each output position, as PyTorch's CPU kernels compute it. For 1 and 3
    /// spatial dims (`compute_indices_weights_nearest`): `floorf(scale * dst)` for nearest,
    /// `floorf((dst + 0.5) * scale)` for nearest-exact, the scale in precision `F`, the floor
    /// in f32. Nearest of 2 spatial dims goes through `nearest_idx` instead (`legacy`): an f32
    /// scale, and the identity when `out == in` and `dst / 2` when `out == 2 * in`, whatever
    /// `scale_factor` says.
    fn nearest<F: Float + FromPrimitive + ToPrimitive>(
        &self,
        exact: bool,
        legacy: bool,
    ) -> Vec<i64> {
        let (n_in, n_out) = (self.input, self.output);
        let last = n_in as i64 - 1;
        if legacy && !exact {
            let scale: f32 = self.scale_value();
            return (0..n_out)
                .map(|i| {
                    if n_out == n_in {
                        i as i64
                    } else if n_out == 2 * n_in {
                        (i >> 1) as i64
                    } else {
                        ((i as f32 * scale).floor() as i64).min(last)
                    }
                })
                .collect();
        }
        let scale: F = self.scale_value();
        let f = |v: f64| F::from_f64(v).expect("a float");
        (0..n_out)
            .map(|i| {
                let src = if exact {
                    (f(i as f64) + f(0.5)) * scale
                } else {
                    scale * f(i as f64)
                };
                let src = src.to_f32().expect("finite");
                (src.floor() as i64).min(last)
            })
            .collect()
    }

    /// For each output position: the two source indices and their weights
    /// (`compute_source_index_and_lambda` in precision `F`), weights as f64.
    fn linear<F: Float + FromPrimitive + ToPrimitive>(
        &self,
        align_corners: bool,
    ) -> (Vec<i64>, Vec<i64>, Vec<f64>, Vec<f64>) {
        let (n_in, n_out) = (self.input, self.output);
        let f = |v: f64| F::from_f64(v).expect("a float");
        // area_pixel_compute_scale
        let ratio: F = if align_corners {
            if n_out > 1 {
                f((n_in - 1) as f64) / f((n_out - 1) as f64)
            } else {
                F::zero()
            }
        } else {
            self.scale_value()
        };
        let last = n_in as i64 - 1;
        let mut out = (vec![], vec![], vec![], vec![]);
        for i in 0..n_out {
            let (i0, i1, l0, l1) = if n_out == n_in {
                (i as i64, i as i64, F::one(), F::zero())
            } else {
                // area_pixel_compute_source_index (cubic = false)
                let real = if align_corners {
                    ratio * f(i as f64)
                } else {
                    let src = ratio * (f(i as f64) + f(0.5)) - f(0.5);
                    src.max(F::zero())
                };
                // guard_index_and_lambda
                // floorf: the floor is taken in f32 even for f64 inputs.
                let i0 = (real.to_f32().expect("finite").floor() as i64).min(last);
                let l1 = (real - f(i0 as f64)).max(F::zero()).min(F::one());
                let i1 = i0 + i64::from(i0 < last);
                (i0, i1, F::one() - l1, l1)
            };
            out.0.push(i0);
            out.1.push(i1);
            out.2.push(l0.to_f64().expect("a float"));
            out.3.push(l1.to_f64().expect("a float"));
        }
        out
    }
}

/// Linear resampling of `t` along one axis: `t[i0] * l0 + t[i1] * l1` per output position.
fn resample_linear(t: &Tensor, axis: &Axis, align_corners: bool) -> Result<Tensor> {
    let (i0, i1, l0, l1) = if t.dtype() == DType::F64 {
        axis.linear::<f64>(align_corners)
    } else {
        axis.linear::<f32>(align_corners)
    };
    let n = axis.output;
    // Weights broadcast along the axis: shape (n, 1, .., 1) up to the last dim.
    let mut wshape = vec![n];
    wshape.resize(t.ndim() - axis.dim, 1);
    let device = t.device();
    let index = |v: Vec<i64>| Tensor::from_vec(v, &[n])?.to_device(device);
    let weight = |v: Vec<f64>| {
        Tensor::from_vec(v, &wshape)?
            .to_dtype(t.dtype())?
            .to_device(device)
    };
    let d = axis.dim as isize;
    let a = t.index_select(d, &index(i0)?)?.mul(&weight(l0)?)?;
    let b = t.index_select(d, &index(i1)?)?.mul(&weight(l1)?)?;
    a.add(&b)
}
