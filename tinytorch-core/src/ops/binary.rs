//! Arithmetic of two tensors with NumPy broadcasting and PyTorch's type promotion, and the
//! scalar forms (`x + 2.0`). Backward rules reduce broadcast gradients back to each input's
//! shape with `sum_to_shape`.

use super::{cpu_scalar_follows, same_device, with_storages2};
use crate::autograd::needs_grad;
use crate::backend::BinaryOp;
use crate::error::{Error, Result};
use crate::tensor::layout::broadcast_shapes;
use crate::tensor::{DType, ResultType, Scalar, Tensor};

/// Broadcast `a` and `b`, cast both to `dtype`, and run the primitive `op`.
pub(crate) fn broadcast_binary(
    op_name: &'static str,
    a: &Tensor,
    b: &Tensor,
    dtype: DType,
    op: BinaryOp,
) -> Result<Tensor> {
    same_device(op_name, &[a, b])?;
    // Cast only what differs: a no-op cast is still a handle's clone and drop per operand,
    // measurable on small tensors' op overhead.
    let cast = |t: &Tensor| (t.dtype() != dtype).then(|| t.to_dtype(dtype)).transpose();
    let (ca, cb) = (cast(a)?, cast(b)?);
    let (a, b) = (ca.as_ref().unwrap_or(a), cb.as_ref().unwrap_or(b));
    if a.shape() == b.shape() {
        // No broadcasting: the layouts as they are (the common case, kept free of the
        // allocations of broadcasting for small tensors' sake).
        let s = with_storages2(a, b, |sa, sb| sa.binary(a.layout(), sb, b.layout(), op))?;
        return Ok(Tensor::from_contiguous(s, a.shape()));
    }
    let shape = broadcast_shapes(op_name, a.shape(), b.shape())?;
    let la = a.layout().broadcast_as(op_name, &shape)?;
    let lb = b.layout().broadcast_as(op_name, &shape)?;
    let s = with_storages2(a, b, |sa, sb| sa.binary(&la, sb, &lb, op))?;
    Ok(Tensor::from_contiguous(s, &shape))
}

/// The dtype of `a op b`: PyTorch's result type (0-d tensors promote only across
/// categories), and floats for true division.
fn result_dtype(a: &Tensor, b: &Tensor, op: BinaryOp) -> DType {
    let d = ResultType::new()
        .tensor(a.dtype(), a.ndim())
        .tensor(b.dtype(), b.ndim())
        .finish();
    match op {
        BinaryOp::Div => d.to_float(),
        _ => d,
    }
}

/// A 0-d tensor holding `value` in the dtype PyTorch gives `tensor op value`: the tensor's,
/// unless the number brings a higher category (`int_tensor * 2.0` is f32, `bool_tensor + 1`
/// is i64).
pub(crate) fn scalar_like(t: &Tensor, value: Scalar) -> Result<Tensor> {
    let dtype = ResultType::new()
        .tensor(t.dtype(), t.ndim())
        .scalar(value)
        .finish();
    Tensor::scalar_tensor(value, dtype, t.device())
}

impl Tensor {
    fn binary_op(&self, rhs: &Tensor, op: BinaryOp, name: &'static str) -> Result<Tensor> {
        if self.device() != rhs.device() {
            let (a, b) = cpu_scalar_follows(self, rhs)?;
            if a.device() == b.device() {
                return a.binary_op(&b, op, name);
            }
        }
        let dtype = result_dtype(self, rhs, op);
        // PyTorch refuses these rather than guess: `mask - 1` is usually a mistake for
        // `~mask`, and bool ** bool has no bool answer.
        if op == BinaryOp::Sub && (self.dtype() == DType::Bool || rhs.dtype() == DType::Bool) {
            return Err(Error::dtype(
                name,
                "subtraction with a bool tensor is not supported; use logical_not() or \
                 logical_xor() to invert or compare masks",
            ));
        }
        if op == BinaryOp::Pow && dtype == DType::Bool {
            return Err(Error::dtype(
                name,
                "pow is not implemented for bool tensors",
            ));
        }
        let out = broadcast_binary(name, self, rhs, dtype, op)?;
        if !needs_grad(&[self, rhs]) {
            return Ok(out);
        }
        let (sa, sb) = (self.shape().to_vec(), rhs.shape().to_vec());
        Ok(match op {
            BinaryOp::Add => out.record(name, &[self, rhs], move |g, _| {
                Ok(vec![Some(g.sum_to_shape(&sa)?), Some(g.sum_to_shape(&sb)?)])
            }),
            BinaryOp::Sub => out.record(name, &[self, rhs], move |g, need| {
                let gb = if need[1] {
                    Some(g.mul_scalar(-1.0)?.sum_to_shape(&sb)?)
                } else {
                    None
                };
                Ok(vec![Some(g.sum_to_shape(&sa)?), gb])
            }),
            BinaryOp::Mul => {
                let (a, b) = (self.save(name), rhs.save(name));
                out.record(name, &[self, rhs], move |g, need| {
                    let ga = if need[0] {
                        Some(g.mul(&b.get()?)?.sum_to_shape(&sa)?)
                    } else {
                        None
                    };
                    let gb = if need[1] {
                        Some(g.mul(&a.get()?)?.sum_to_shape(&sb)?)
                    } else {
                        None
                    };
                    Ok(vec![ga, gb])
                })
            }
            BinaryOp::Div => {
                let (a, b) = (self.save(name), rhs.save(name));
                out.record(name, &[self, rhs], move |g, need| {
                    let b = &b.get()?;
                    let ga = if need[0] {
                        Some(g.div(b)?.sum_to_shape(&sa)?)
                    } else {
                        None
                    };
                    // d(a/b)/db = -a / b^2, as PyTorch writes it: (a / b) / b, so that each
                    // step promotes (b * b in a 0-d b's own, narrower dtype would round).
                    let gb = if need[1] {
                        Some(g.mul(&a.get()?.div(b)?.div(b)?)?.neg()?.sum_to_shape(&sb)?)
                    } else {
                        None
                    };
                    Ok(vec![ga, gb])
                })
            }
            BinaryOp::Pow => {
                let (a, b, o) = (self.save(name), rhs.save(name), out.save(name));
                out.record(name, &[self, rhs], move |g, need| {
                    // In the op's dtype, as PyTorch's pow_backward promotes: ln(a) of an f32
                    // 0-d base under an f64 exponent is taken in f64.
                    let (a, b) = (a.get()?.to_dtype(dtype)?, b.get()?.to_dtype(dtype)?);
                    // d(a^b)/da = b * a^(b-1), defined as 0 where b == 0 (PyTorch), which
                    // the formula would make 0 * inf = NaN at a == 0.
                    let ga = if need[0] {
                        let d = b.mul(&a.pow(&b.sub_scalar(1)?)?)?;
                        let d = d.masked_fill(&b.eq_scalar(0)?, 0)?;
                        Some(g.mul(&d)?.sum_to_shape(&sa)?)
                    } else {
                        None
                    };
                    // d(a^b)/db = a^b * ln(a); PyTorch defines it as 0 where a == 0 and b >= 0.
                    let gb = if need[1] {
                        let zero_base = a.eq_scalar(0)?.logical_and(&b.ge_scalar(0)?)?;
                        let d = o.get()?.mul(&a.log()?)?;
                        let d = d.masked_fill(&zero_base, 0)?;
                        Some(g.mul(&d)?.sum_to_shape(&sb)?)
                    } else {
                        None
                    };
                    Ok(vec![ga, gb])
                })
            }
            BinaryOp::Maximum | BinaryOp::Minimum => {
                let (a, b) = (self.save(name), rhs.save(name));
                let pick_a = if op == BinaryOp::Maximum {
                    Tensor::gt
                } else {
                    Tensor::lt
                };
                out.record(name, &[self, rhs], move |g, _| {
                    // Ties split the gradient evenly, as PyTorch does.
                    let (a, b) = (&a.get()?, &b.get()?);
                    let wa = pick_a(a, b)?
                        .to_dtype(g.dtype())?
                        .add(&a.eq(b)?.to_dtype(g.dtype())?.mul_scalar(0.5)?)?;
                    let ga = g.mul(&wa)?;
                    let gb = g.sub(&ga)?;
                    Ok(vec![
                        Some(ga.sum_to_shape(&sa)?),
                        Some(gb.sum_to_shape(&sb)?),
                    ])
                })
            }
        })
    }

    /// `self + other`, broadcasting (`torch.add`).
    pub fn add(&self, other: &Tensor) -> Result<Tensor> {
        self.binary_op(other, BinaryOp::Add, "add")
    }
    /// `self - other`, broadcasting (`torch.sub`).
    pub fn sub(&self, other: &Tensor) -> Result<Tensor> {
        self.binary_op(other, BinaryOp::Sub, "sub")
    }
    /// `self * other`, broadcasting (`torch.mul`).
    pub fn mul(&self, other: &Tensor) -> Result<Tensor> {
        self.binary_op(other, BinaryOp::Mul, "mul")
    }
    /// `self / other`, broadcasting; true division, so integers give floats (`torch.div`).
    pub fn div(&self, other: &Tensor) -> Result<Tensor> {
        self.binary_op(other, BinaryOp::Div, "div")
    }
    /// `self ** other`, broadcasting (`torch.pow`).
    pub fn pow(&self, other: &Tensor) -> Result<Tensor> {
        self.binary_op(other, BinaryOp::Pow, "pow")
    }
    /// Elementwise maximum, propagating NaN (`torch.maximum`).
    pub fn maximum(&self, other: &Tensor) -> Result<Tensor> {
        self.binary_op(other, BinaryOp::Maximum, "maximum")
    }
    /// Elementwise minimum, propagating NaN (`torch.minimum`).
    pub fn minimum(&self, other: &Tensor) -> Result<Tensor> {
        self.binary_op(other, BinaryOp::Minimum, "minimum")
    }

    /// `self + value`.
    pub fn add_scalar(&self, value: impl Into<Scalar>) -> Result<Tensor> {
        self.add(&scalar_like(self, value.into())?)
    }
    /// `self - value`.
    pub fn sub_scalar(&self, value: impl Into<Scalar>) -> Result<Tensor> {
        self.sub(&scalar_like(self, value.into())?)
    }
    /// `value - self` (`torch.rsub`).
    pub fn rsub_scalar(&self, value: impl Into<Scalar>) -> Result<Tensor> {
        scalar_like(self, value.into())?.sub(self)
    }
    /// `self * value`.
    pub fn mul_scalar(&self, value: impl Into<Scalar>) -> Result<Tensor> {
        self.mul(&scalar_like(self, value.into())?)
    }
    /// `self / value`.
    pub fn div_scalar(&self, value: impl Into<Scalar>) -> Result<Tensor> {
        self.div(&scalar_like(self, value.into())?)
    }
    /// `value / self`.
    pub fn rdiv_scalar(&self, value: impl Into<Scalar>) -> Result<Tensor> {
        scalar_like(self, value.into())?.div(self)
    }
    /// `self ** exponent` for a scalar exponent.
    pub fn pow_scalar(&self, exponent: impl Into<Scalar>) -> Result<Tensor> {
        let value = exponent.into();
        let exponent = scalar_like(self, value)?;
        if !exponent.dtype().is_float() && value.to_f64() < 0.0 {
            return Err(Error::invalid(
                "pow",
                "integers to negative integer powers are not allowed",
            ));
        }
        self.pow(&exponent)
    }
    /// `base ** self` for a scalar base.
    pub fn rpow_scalar(&self, base: impl Into<Scalar>) -> Result<Tensor> {
        scalar_like(self, base.into())?.pow(self)
    }
    /// Elementwise maximum with a scalar.
    pub fn maximum_scalar(&self, value: impl Into<Scalar>) -> Result<Tensor> {
        self.maximum(&scalar_like(self, value.into())?)
    }
    /// Elementwise minimum with a scalar.
    pub fn minimum_scalar(&self, value: impl Into<Scalar>) -> Result<Tensor> {
        self.minimum(&scalar_like(self, value.into())?)
    }
}

impl Tensor {
    /// Clamp to tensor bounds that broadcast against `self` (`torch.clamp(x, min, max)` with
    /// tensor arguments): `max` wins where `min > max`, as in PyTorch. Gradients reach `self`
    /// where it lies inside the bounds and each bound where it is the one selected.
    pub fn clamp_tensor(&self, min: Option<&Tensor>, max: Option<&Tensor>) -> Result<Tensor> {
        if min.is_none() && max.is_none() {
            return Err(crate::error::Error::invalid(
                "clamp",
                "at least one of 'min' or 'max' must not be None",
            ));
        }
        let mut out = self.clone();
        if let Some(lo) = min {
            out = Tensor::where_cond(&out.lt(lo)?, lo, &out)?;
        }
        if let Some(hi) = max {
            out = Tensor::where_cond(&out.gt(hi)?, hi, &out)?;
        }
        Ok(out)
    }
}
