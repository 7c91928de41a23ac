//! Comparisons and logical ops (bool results, no gradient), `where` and `masked_fill`.

use super::{cpu_scalar_follows, same_device, with_storages2, with_storages3};
use crate::autograd::needs_grad;
use crate::backend::CmpOp;
use crate::error::{Error, Result};
use crate::tensor::layout::broadcast_shapes;
use crate::tensor::{DType, ResultType, Scalar, Tensor};

impl Tensor {
    fn compare(&self, other: &Tensor, op: CmpOp, name: &'static str) -> Result<Tensor> {
        let (this, other) = cpu_scalar_follows(self, other)?;
        let (this, other) = (&this, &other);
        same_device(name, &[this, other])?;
        let shape = broadcast_shapes(name, this.shape(), other.shape())?;
        let dtype = match op {
            CmpOp::And | CmpOp::Or | CmpOp::Xor => DType::Bool,
            _ => ResultType::new()
                .tensor(this.dtype(), this.ndim())
                .tensor(other.dtype(), other.ndim())
                .finish(),
        };
        let (a, b) = (
            this.detach().to_dtype(dtype)?,
            other.detach().to_dtype(dtype)?,
        );
        let la = a.layout().broadcast_as(name, &shape)?;
        let lb = b.layout().broadcast_as(name, &shape)?;
        let s = with_storages2(&a, &b, |sa, sb| sa.cmp(&la, sb, &lb, op))?;
        Ok(Tensor::from_contiguous(s, &shape))
    }

    fn compare_scalar(&self, value: Scalar, op: CmpOp, name: &'static str) -> Result<Tensor> {
        self.compare(&super::binary::scalar_like(self, value)?, op, name)
    }

    /// `self < other` elementwise (bool).
    pub fn lt(&self, other: &Tensor) -> Result<Tensor> {
        self.compare(other, CmpOp::Lt, "lt")
    }
    /// `self <= other` elementwise (bool).
    pub fn le(&self, other: &Tensor) -> Result<Tensor> {
        self.compare(other, CmpOp::Le, "le")
    }
    /// `self > other` elementwise (bool).
    pub fn gt(&self, other: &Tensor) -> Result<Tensor> {
        self.compare(other, CmpOp::Gt, "gt")
    }
    /// `self >= other` elementwise (bool).
    pub fn ge(&self, other: &Tensor) -> Result<Tensor> {
        self.compare(other, CmpOp::Ge, "ge")
    }
    /// `self == other` elementwise (bool).
    pub fn eq(&self, other: &Tensor) -> Result<Tensor> {
        self.compare(other, CmpOp::Eq, "eq")
    }
    /// `self != other` elementwise (bool).
    pub fn ne(&self, other: &Tensor) -> Result<Tensor> {
        self.compare(other, CmpOp::Ne, "ne")
    }
    /// `self < value` (bool).
    pub fn lt_scalar(&self, value: impl Into<Scalar>) -> Result<Tensor> {
        self.compare_scalar(value.into(), CmpOp::Lt, "lt")
    }
    /// `self <= value` (bool).
    pub fn le_scalar(&self, value: impl Into<Scalar>) -> Result<Tensor> {
        self.compare_scalar(value.into(), CmpOp::Le, "le")
    }
    /// `self > value` (bool).
    pub fn gt_scalar(&self, value: impl Into<Scalar>) -> Result<Tensor> {
        self.compare_scalar(value.into(), CmpOp::Gt, "gt")
    }
    /// `self >= value` (bool).
    pub fn ge_scalar(&self, value: impl Into<Scalar>) -> Result<Tensor> {
        self.compare_scalar(value.into(), CmpOp::Ge, "ge")
    }
    /// `self == value` (bool).
    pub fn eq_scalar(&self, value: impl Into<Scalar>) -> Result<Tensor> {
        self.compare_scalar(value.into(), CmpOp::Eq, "eq")
    }
    /// `self != value` (bool).
    pub fn ne_scalar(&self, value: impl Into<Scalar>) -> Result<Tensor> {
        self.compare_scalar(value.into(), CmpOp::Ne, "ne")
    }
    /// Logical and, treating non-zero as true (`torch.logical_and`).
    pub fn logical_and(&self, other: &Tensor) -> Result<Tensor> {
        self.compare(other, CmpOp::And, "logical_and")
    }
    /// Logical or (`torch.logical_or`).
    pub fn logical_or(&self, other: &Tensor) -> Result<Tensor> {
        self.compare(other, CmpOp::Or, "logical_or")
    }
    /// Logical exclusive or (`torch.logical_xor`).
    pub fn logical_xor(&self, other: &Tensor) -> Result<Tensor> {
        self.compare(other, CmpOp::Xor, "logical_xor")
    }
    /// Where the elements are NaN (`torch.isnan`): bool, false everywhere for integer and
    /// bool tensors.
    pub fn isnan(&self) -> Result<Tensor> {
        self.ne(self)
    }
    /// Where the elements are +inf or -inf (`torch.isinf`): bool, false for integers.
    pub fn isinf(&self) -> Result<Tensor> {
        if !self.dtype().is_float() {
            return self.ne(self);
        }
        self.abs()?.eq_scalar(f64::INFINITY)
    }
    /// Where the elements are finite, neither NaN nor infinite (`torch.isfinite`): bool,
    /// true everywhere for integers.
    pub fn isfinite(&self) -> Result<Tensor> {
        if !self.dtype().is_float() {
            return self.eq(self);
        }
        // x - x is 0 for every finite x and NaN for NaN and both infinities.
        self.sub(self)?.eq_scalar(0.0)
    }
    /// Logical not (`torch.logical_not`).
    pub fn logical_not(&self) -> Result<Tensor> {
        self.compare_scalar(Scalar::Bool(false), CmpOp::Eq, "logical_not")
    }

    /// `cond ? self : other` elementwise, broadcasting all three (`torch.where(cond, self,
    /// other)`). Gradients flow to `self` where `cond` holds and to `other` elsewhere.
    pub fn where_cond(cond: &Tensor, on_true: &Tensor, on_false: &Tensor) -> Result<Tensor> {
        same_device("where", &[cond, on_true, on_false])?;
        if cond.dtype() != DType::Bool {
            return Err(Error::dtype(
                "where",
                format!("condition must be a bool tensor, got {}", cond.dtype()),
            ));
        }
        let shape = broadcast_shapes("where", cond.shape(), on_true.shape())?;
        let shape = broadcast_shapes("where", &shape, on_false.shape())?;
        let dtype = ResultType::new()
            .tensor(on_true.dtype(), on_true.ndim())
            .tensor(on_false.dtype(), on_false.ndim())
            .finish();
        let (t, f) = (on_true.to_dtype(dtype)?, on_false.to_dtype(dtype)?);
        let lc = cond.layout().broadcast_as("where", &shape)?;
        let lt = t.layout().broadcast_as("where", &shape)?;
        let lf = f.layout().broadcast_as("where", &shape)?;
        let s = with_storages3(cond, &t, &f, |sc, st, sf| {
            sc.where_cond(&lc, st, &lt, sf, &lf)
        })?;
        let out = Tensor::from_contiguous(s, &shape);
        if !needs_grad(&[&t, &f]) {
            return Ok(out);
        }
        let c = cond.save("where");
        let (st, sf) = (t.shape().to_vec(), f.shape().to_vec());
        Ok(out.record("where", &[&t, &f], move |g, _| {
            let c = &c.get()?;
            let zero = g.zeros_like()?;
            let gt = Tensor::where_cond(c, g, &zero)?.sum_to_shape(&st)?;
            let gf = Tensor::where_cond(c, &zero, g)?.sum_to_shape(&sf)?;
            Ok(vec![Some(gt), Some(gf)])
        }))
    }

    /// `value` where `mask` is true, `self` elsewhere (`x.masked_fill(mask, value)`). `self`
    /// and the bool `mask` broadcast together, as in PyTorch's out-of-place form; the result
    /// keeps `self`'s dtype (`value` is converted to it, `-1` wrapping in u8).
    pub fn masked_fill(&self, mask: &Tensor, value: impl Into<Scalar>) -> Result<Tensor> {
        if mask.dtype() != DType::Bool {
            return Err(Error::dtype(
                "masked_fill",
                format!("the mask must be a bool tensor, got {}", mask.dtype()),
            ));
        }
        broadcast_shapes("masked_fill", self.shape(), mask.shape())?;
        let fill = Tensor::scalar_tensor(value, self.dtype(), self.device())?;
        Tensor::where_cond(mask, &fill, self)
    }
}
