//! Elementwise functions of one tensor with their derivatives.
//!
//! Dtypes follow PyTorch: float functions (`exp`, `sigmoid`, ...) compute integer and bool
//! inputs in the default float (f32); the ops that are closed over the integers (`neg`, `abs`,
//! `sign`, `square`, `floor`, `ceil`, `round`, `relu`, `clamp` with whole bounds) keep integer
//! dtypes; the activations PyTorch defines only for floats (`leaky_relu`, `elu`, `gelu`,
//! `silu`, `softplus`) reject other dtypes. Derivatives at kinks use PyTorch's conventions.

use crate::autograd::needs_grad;
use crate::backend::{ActivationGrad, Storage, UnaryOp};
use crate::error::{Error, Result};
use crate::tensor::{DType, ResultType, Scalar, Tensor};

/// Which tensor a backward rule needs: the op's input or its output (cheaper for `exp`,
/// `sigmoid`, `tanh`, `sqrt`, whose derivatives are functions of the output).
#[derive(Clone, Copy)]
pub(super) enum Saved {
    Input,
    Output,
}

/// `2 / sqrt(pi)`, the scale of erf's derivative.
pub(super) const TWO_OVER_SQRT_PI: f64 = std::f64::consts::FRAC_2_SQRT_PI;
/// `1 / sqrt(2 pi)`, the scale of the standard normal density.
const INV_SQRT_2PI: f64 = 0.398_942_280_401_432_7;
/// `sqrt(2 / pi)`, as in PyTorch's tanh-approximated GELU.
const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;
/// The cubic coefficient of the tanh-approximated GELU.
const GELU_KAPPA: f64 = 0.044715;

/// The gradient through a ReLU whose output was `y`: `g` where `y > 0` (and where `y` is
/// NaN), 0 elsewhere; in place over a `g` nothing else holds, where the device can.
pub(crate) fn relu_grad(g: &Tensor, y: &Tensor) -> Result<Tensor> {
    match fused_backward(g, y, ActivationGrad::Relu)? {
        Some(dx) => Ok(dx),
        None => g.masked_fill(&y.le_scalar(0.0)?, 0.0),
    }
}

/// The fused backward of activation `kind` (`Storage::activation_backward`) on the upstream
/// gradient `g` and the saved tensor `s` (the op's input or output) when they share a dtype
/// and shape and their device has the kernel; `None` otherwise, and the caller composes the
/// rule from tensor ops. Also `None` when the backward itself is recorded (`create_graph`)
/// and an operand is in the graph: the kernel has no backward, the composed rule has.
fn fused_backward(g: &Tensor, s: &Tensor, kind: ActivationGrad) -> Result<Option<Tensor>> {
    if needs_grad(&[g, s]) {
        return Ok(None);
    }
    if g.dtype() != s.dtype() || g.shape() != s.shape() || g.device() != s.device() {
        return Ok(None);
    }
    // An upstream gradient that nothing else holds becomes the input's gradient in place:
    // one buffer fewer to fill (a memory-bound pass over fresh memory).
    if g.owns_whole_storage() && !g.shares_storage(s) {
        let done = {
            let mut sg = g.storage_mut();
            Storage::activation_backward_inplace(
                kind,
                &mut sg,
                g.layout(),
                &s.storage(),
                s.layout(),
            )?
        };
        if done {
            return Ok(Some(g.clone()));
        }
    }
    let dx = crate::ops::with_storages2(g, s, |sg, ss| {
        Storage::activation_backward(kind, sg, g.layout(), ss, s.layout())
    })?;
    Ok(dx.map(|d| Tensor::from_contiguous(d, s.shape())))
}

impl Tensor {
    /// Apply the primitive `op` (integers are computed as the default float first).
    pub(crate) fn unary_op(&self, op: UnaryOp) -> Result<Tensor> {
        let src = self.to_dtype(self.dtype().to_float())?;
        let s = src.storage().unary(src.layout(), op)?;
        Ok(Tensor::from_contiguous(s, self.shape()))
    }

    /// Apply the primitive `op` in the tensor's own dtype (for ops closed over the integers).
    fn unary_keep_dtype(&self, op: UnaryOp) -> Result<Tensor> {
        let s = self.storage().unary(self.layout(), op)?;
        Ok(Tensor::from_contiguous(s, self.shape()))
    }

    /// Error unless the tensor is a float tensor (PyTorch's rule for its float-only ops:
    /// activations, softmax, mean, var, std, norm).
    pub(crate) fn require_float(&self, name: &'static str) -> Result<()> {
        if self.dtype().is_float() {
            return Ok(());
        }
        Err(Error::dtype(
            name,
            format!(
                "{name} is only defined for floating-point tensors, got {} (cast with to_dtype first)",
                self.dtype()
            ),
        ))
    }

    /// Error for bool tensors (ops PyTorch does not define on bool).
    fn reject_bool(&self, name: &'static str) -> Result<()> {
        if self.dtype() == DType::Bool {
            return Err(Error::dtype(
                name,
                format!("{name} is not defined for bool tensors"),
            ));
        }
        Ok(())
    }

    /// Record `out = f(self)` with the backward `grad_in = rule(grad_out, saved)`, where
    /// `saved` is `self` or `out` as `which` says. Saves nothing unless a gradient is needed.
    pub(super) fn unary_backward(
        &self,
        out: Tensor,
        name: &'static str,
        which: Saved,
        rule: impl Fn(&Tensor, &Tensor) -> Result<Tensor> + Send + Sync + 'static,
    ) -> Result<Tensor> {
        if !needs_grad(&[self]) {
            return Ok(out);
        }
        let saved = match which {
            Saved::Input => self.save(name),
            Saved::Output => out.save(name),
        };
        Ok(out.record(name, &[self], move |g, _| {
            Ok(vec![Some(rule(g, &saved.get()?)?)])
        }))
    }

    /// Record a piecewise-constant op: its gradient is zero everywhere (PyTorch's convention
    /// for `sign`, `floor`, `ceil`, `round`).
    fn zero_backward(&self, out: Tensor, name: &'static str) -> Result<Tensor> {
        if !needs_grad(&[self]) {
            return Ok(out);
        }
        Ok(out.record(name, &[self], |g, _| Ok(vec![Some(g.zeros_like()?)])))
    }

    /// `-self` (`torch.neg`); integers keep their dtype (u8 wraps), bool is an error.
    pub fn neg(&self) -> Result<Tensor> {
        self.reject_bool("neg")?;
        let out = self.unary_keep_dtype(UnaryOp::Neg)?;
        if !needs_grad(&[self]) {
            return Ok(out);
        }
        Ok(out.record("neg", &[self], |g, _| Ok(vec![Some(g.neg()?)])))
    }

    /// `|self|` (`torch.abs`); integers keep their dtype. The gradient at 0 is 0.
    pub fn abs(&self) -> Result<Tensor> {
        self.reject_bool("abs")?;
        let out = self.unary_keep_dtype(UnaryOp::Abs)?;
        self.unary_backward(out, "abs", Saved::Input, |g, x| g.mul(&x.sign()?))
    }

    /// -1, 0 or 1 by the sign of each element (`torch.sign`; NaN gives 0); keeps the dtype.
    /// Zero gradient.
    pub fn sign(&self) -> Result<Tensor> {
        let out = self.unary_keep_dtype(UnaryOp::Sign)?;
        self.zero_backward(out, "sign")
    }

    /// `e^self` (`torch.exp`).
    pub fn exp(&self) -> Result<Tensor> {
        let out = self.unary_op(UnaryOp::Exp)?;
        self.unary_backward(out, "exp", Saved::Output, |g, y| g.mul(y))
    }

    /// Natural logarithm (`torch.log`).
    pub fn log(&self) -> Result<Tensor> {
        let out = self.unary_op(UnaryOp::Log)?;
        self.unary_backward(out, "log", Saved::Input, |g, x| g.div(x))
    }

    /// Base-2 logarithm (`torch.log2`).
    pub fn log2(&self) -> Result<Tensor> {
        let out = self.unary_op(UnaryOp::Log2)?;
        self.unary_backward(out, "log2", Saved::Input, |g, x| {
            g.div(&x.mul_scalar(std::f64::consts::LN_2)?)
        })
    }

    /// `log(1 + self)`, accurate near 0 (`torch.log1p`).
    pub fn log1p(&self) -> Result<Tensor> {
        let out = self.unary_op(UnaryOp::Log1p)?;
        self.unary_backward(out, "log1p", Saved::Input, |g, x| {
            g.div(&x.add_scalar(1.0)?)
        })
    }

    /// `e^self - 1`, accurate near 0 (`torch.expm1`).
    pub fn expm1(&self) -> Result<Tensor> {
        let out = self.unary_op(UnaryOp::Expm1)?;
        self.unary_backward(out, "expm1", Saved::Output, |g, y| {
            g.mul(&y.add_scalar(1.0)?)
        })
    }

    /// Square root (`torch.sqrt`). The gradient at 0 is inf, as in PyTorch.
    pub fn sqrt(&self) -> Result<Tensor> {
        let out = self.unary_op(UnaryOp::Sqrt)?;
        self.unary_backward(out, "sqrt", Saved::Output, |g, y| {
            g.div(&y.mul_scalar(2.0)?)
        })
    }

    /// `1 / sqrt(self)` (`torch.rsqrt`).
    pub fn rsqrt(&self) -> Result<Tensor> {
        let out = self.unary_op(UnaryOp::Rsqrt)?;
        // d/dx x^(-1/2) = -x^(-3/2) / 2 = -y^3 / 2
        self.unary_backward(out, "rsqrt", Saved::Output, |g, y| {
            g.mul(&y.square()?.mul(y)?.mul_scalar(-0.5)?)
        })
    }

    /// `self * self` (`torch.square`); integers keep their dtype, bool gives i64.
    pub fn square(&self) -> Result<Tensor> {
        let src = if self.dtype() == DType::Bool {
            self.to_dtype(DType::I64)?
        } else {
            self.clone()
        };
        let out = src.unary_keep_dtype(UnaryOp::Square)?;
        self.unary_backward(out, "square", Saved::Input, |g, x| {
            g.mul(&x.mul_scalar(2.0)?)
        })
    }

    /// `1 / self` (`torch.reciprocal`).
    pub fn reciprocal(&self) -> Result<Tensor> {
        let out = self.unary_op(UnaryOp::Reciprocal)?;
        self.unary_backward(out, "reciprocal", Saved::Output, |g, y| {
            g.mul(&y.square()?.neg()?)
        })
    }

    /// Sine (`torch.sin`).
    pub fn sin(&self) -> Result<Tensor> {
        let out = self.unary_op(UnaryOp::Sin)?;
        self.unary_backward(out, "sin", Saved::Input, |g, x| g.mul(&x.cos()?))
    }

    /// Cosine (`torch.cos`).
    pub fn cos(&self) -> Result<Tensor> {
        let out = self.unary_op(UnaryOp::Cos)?;
        self.unary_backward(out, "cos", Saved::Input, |g, x| g.mul(&x.sin()?.neg()?))
    }

    /// Tangent (`torch.tan`).
    pub fn tan(&self) -> Result<Tensor> {
        let out = self.unary_op(UnaryOp::Tan)?;
        self.unary_backward(out, "tan", Saved::Output, |g, y| {
            g.mul(&y.square()?.add_scalar(1.0)?)
        })
    }

    /// Hyperbolic tangent (`torch.tanh`).
    pub fn tanh(&self) -> Result<Tensor> {
        let out = self.unary_op(UnaryOp::Tanh)?;
        self.unary_backward(out, "tanh", Saved::Output, |g, y| {
            g.mul(&y.square()?.rsub_scalar(1.0)?)
        })
    }

    /// Logistic function `1 / (1 + e^-self)` (`torch.sigmoid`), without overflow for large |x|.
    pub fn sigmoid(&self) -> Result<Tensor> {
        let out = self.unary_op(UnaryOp::Sigmoid)?;
        self.unary_backward(out, "sigmoid", Saved::Output, |g, y| {
            g.mul(&y.mul(&y.rsub_scalar(1.0)?)?)
        })
    }

    /// `max(self, 0)` (`torch.relu`); integers keep their dtype, NaN stays NaN. The gradient
    /// at 0 is 0.
    pub fn relu(&self) -> Result<Tensor> {
        self.reject_bool("relu")?;
        let out = self.unary_keep_dtype(UnaryOp::Relu)?;
        self.unary_backward(out, "relu", Saved::Output, relu_grad)
    }

    /// `self` where positive, `negative_slope * self` elsewhere
    /// (`torch.nn.functional.leaky_relu`). At 0 the gradient is the slope.
    pub fn leaky_relu(&self, negative_slope: f64) -> Result<Tensor> {
        self.require_float("leaky_relu")?;
        let out = self.unary_op(UnaryOp::LeakyRelu(negative_slope))?;
        self.unary_backward(out, "leaky_relu", Saved::Input, move |g, x| {
            // 1 where x > 0, the slope elsewhere.
            let d = x
                .gt_scalar(0.0)?
                .to_dtype(x.dtype())?
                .mul_scalar(1.0 - negative_slope)?
                .add_scalar(negative_slope)?;
            g.mul(&d)
        })
    }

    /// `self` where positive, `alpha * (e^self - 1)` elsewhere (`torch.nn.functional.elu`).
    pub fn elu(&self, alpha: f64) -> Result<Tensor> {
        self.require_float("elu")?;
        let out = self.unary_op(UnaryOp::Elu(alpha))?;
        self.unary_backward(out, "elu", Saved::Input, move |g, x| {
            let d = x
                .exp()?
                .mul_scalar(alpha)?
                .masked_fill(&x.gt_scalar(0.0)?, 1.0)?;
            g.mul(&d)
        })
    }

    /// Exact GELU `x * Phi(x)` with the normal CDF written with erf
    /// (`torch.nn.functional.gelu(x)`).
    pub fn gelu(&self) -> Result<Tensor> {
        self.require_float("gelu")?;
        let out = self.unary_op(UnaryOp::Gelu)?;
        self.unary_backward(out, "gelu", Saved::Input, |g, x| {
            // Phi(x) + x * phi(x): one fused pass where the device has it, composed elsewhere.
            if let Some(dx) = fused_backward(g, x, ActivationGrad::Gelu)? {
                return Ok(dx);
            }
            let cdf = x
                .mul_scalar(std::f64::consts::FRAC_1_SQRT_2)?
                .erf()?
                .add_scalar(1.0)?
                .mul_scalar(0.5)?;
            let pdf = x
                .square()?
                .mul_scalar(-0.5)?
                .exp()?
                .mul_scalar(INV_SQRT_2PI)?;
            g.mul(&cdf.add(&x.mul(&pdf)?)?)
        })
    }

    /// GELU's tanh approximation `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`
    /// (`torch.nn.functional.gelu(x, approximate='tanh')`).
    pub fn gelu_tanh(&self) -> Result<Tensor> {
        self.require_float("gelu_tanh")?;
        let out = self.unary_op(UnaryOp::GeluTanh)?;
        self.unary_backward(out, "gelu_tanh", Saved::Input, |g, x| {
            // PyTorch's GeluBackward (tanh): 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 kappa x^2)
            let x2 = x.square()?;
            let inner = x
                .add(&x2.mul(x)?.mul_scalar(GELU_KAPPA)?)?
                .mul_scalar(SQRT_2_OVER_PI)?;
            let t = inner.tanh()?;
            let left = t.add_scalar(1.0)?.mul_scalar(0.5)?;
            let dinner = x2
                .mul_scalar(3.0 * GELU_KAPPA)?
                .add_scalar(1.0)?
                .mul_scalar(SQRT_2_OVER_PI)?;
            let right = x
                .mul_scalar(0.5)?
                .mul(&t.square()?.rsub_scalar(1.0)?)?
                .mul(&dinner)?;
            g.mul(&left.add(&right)?)
        })
    }

    /// `self * sigmoid(self)` (`torch.nn.functional.silu`).
    pub fn silu(&self) -> Result<Tensor> {
        self.require_float("silu")?;
        let out = self.unary_op(UnaryOp::Silu)?;
        self.unary_backward(out, "silu", Saved::Input, |g, x| {
            // s (1 + x (1 - s))
            let s = x.sigmoid()?;
            g.mul(&s.mul(&x.mul(&s.rsub_scalar(1.0)?)?.add_scalar(1.0)?)?)
        })
    }

    /// `log(1 + e^(beta x)) / beta`, and `x` itself where `beta x > threshold`
    /// (`torch.nn.functional.softplus(x, beta, threshold)`; PyTorch's defaults are 1 and 20).
    pub fn softplus(&self, beta: f64, threshold: f64) -> Result<Tensor> {
        self.require_float("softplus")?;
        if beta == 0.0 || beta.is_nan() {
            return Err(Error::invalid(
                "softplus",
                format!("beta must be non-zero, got {beta}"),
            ));
        }
        let out = self.unary_op(UnaryOp::Softplus { beta, threshold })?;
        self.unary_backward(out, "softplus", Saved::Input, move |g, x| {
            let bx = x.mul_scalar(beta)?;
            let d = bx.sigmoid()?.masked_fill(&bx.gt_scalar(threshold)?, 1.0)?;
            g.mul(&d)
        })
    }

    /// Gauss error function (`torch.erf`).
    pub fn erf(&self) -> Result<Tensor> {
        let out = self.unary_op(UnaryOp::Erf)?;
        self.unary_backward(out, "erf", Saved::Input, |g, x| {
            g.mul(&x.square()?.neg()?.exp()?.mul_scalar(TWO_OVER_SQRT_PI)?)
        })
    }

    /// Round down (`torch.floor`); the identity on integers. Zero gradient.
    pub fn floor(&self) -> Result<Tensor> {
        self.reject_bool("floor")?;
        let out = self.unary_keep_dtype(UnaryOp::Floor)?;
        self.zero_backward(out, "floor")
    }

    /// Round up (`torch.ceil`); the identity on integers. Zero gradient.
    pub fn ceil(&self) -> Result<Tensor> {
        self.reject_bool("ceil")?;
        let out = self.unary_keep_dtype(UnaryOp::Ceil)?;
        self.zero_backward(out, "ceil")
    }

    /// Round to the nearest integer, halves to even (`torch.round`); the identity on
    /// integers. Zero gradient.
    pub fn round(&self) -> Result<Tensor> {
        self.reject_bool("round")?;
        let out = self.unary_keep_dtype(UnaryOp::Round)?;
        self.zero_backward(out, "round")
    }

    /// Limit every element to `[min, max]` (`torch.clamp`); either bound may be `None`, not
    /// both. The result dtype is PyTorch's result type of the tensor and the bounds: an
    /// integer tensor stays integral with integer bounds (bool becomes i64) and becomes f32
    /// with a float bound (`clamp(Some(0.5), None)`). If `min > max` every element becomes
    /// `max`; a NaN input or bound gives NaN. The gradient passes where `min < x < max`
    /// (strictly, as PyTorch 2.15 does: zero at the bounds).
    pub fn clamp<S: Into<Scalar>>(&self, min: Option<S>, max: Option<S>) -> Result<Tensor> {
        let (min, max) = (min.map(Into::into), max.map(Into::into));
        if min.is_none() && max.is_none() {
            return Err(Error::invalid(
                "clamp",
                "at least one of 'min' or 'max' must not be None",
            ));
        }
        let dtype = ResultType::new()
            .tensor(self.dtype(), self.ndim())
            .scalars(min.into_iter().chain(max))
            .finish();
        if dtype == DType::Bool {
            return Err(Error::dtype(
                "clamp",
                "clamp is not defined for bool tensors",
            ));
        }
        let (lo, hi) = (min.map(Scalar::to_f64), max.map(Scalar::to_f64));
        let out = self
            .to_dtype(dtype)?
            .unary_keep_dtype(UnaryOp::Clamp(lo, hi))?;
        self.unary_backward(out, "clamp", Saved::Input, move |g, x| {
            // PyTorch 2.15 passes the gradient only strictly inside the bounds (none at a
            // bound, none at NaN); comparisons with NaN are false, so NaN drops out.
            let inside = match (lo, hi) {
                (Some(lo), Some(hi)) => x.gt_scalar(lo)?.logical_and(&x.lt_scalar(hi)?)?,
                (Some(lo), None) => x.gt_scalar(lo)?,
                (None, Some(hi)) => x.lt_scalar(hi)?,
                (None, None) => unreachable!("checked above"),
            };
            g.masked_fill(&inside.logical_not()?, 0)
        })
    }

    /// `max(self, min)` elementwise (`torch.clamp_min`); see [`Tensor::clamp`].
    pub fn clamp_min(&self, min: impl Into<Scalar>) -> Result<Tensor> {
        self.clamp(Some(min.into()), None)
    }

    /// `min(self, max)` elementwise (`torch.clamp_max`); see [`Tensor::clamp`].
    pub fn clamp_max(&self, max: impl Into<Scalar>) -> Result<Tensor> {
        self.clamp(None, Some(max.into()))
    }
}
