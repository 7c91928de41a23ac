//! In-place ops (`add_`, `mul_`, `copy_`, `zero_`, `fill_`, `clamp_`, ...), for optimizers and
//! code under `no_grad`. Each writes through `Tensor::storage_mut`, which bumps the storage's
//! version counter, so a backward rule that saved the tensor reports the modification instead
//! of computing a wrong gradient.
//!
//! Autograd limits, documented: in grad mode an in-place op on a tensor that requires grad is
//! an error (on a leaf, PyTorch's own error; on a graph tensor, because this graph cannot
//! rebase a node onto an existing handle), and so is an in-place op whose operand requires
//! grad (the gradient would be lost silently). Under `no_grad` everything is allowed.

use super::same_device;
use crate::autograd::is_grad_enabled;
use crate::backend::{BinaryOp, UnaryOp};
use crate::error::{Error, Result};
use crate::tensor::layout::broadcast_shapes;
use crate::tensor::{DType, ResultType, Scalar, Tensor};

/// PyTorch's scalar-type names, used in its casting error messages.
fn torch_type_name(dtype: DType) -> &'static str {
    match dtype {
        DType::Bool => "Bool",
        DType::U8 => "Byte",
        DType::I64 => "Long",
        DType::F16 => "Half",
        DType::BF16 => "BFloat16",
        DType::F32 => "Float",
        DType::F64 => "Double",
    }
}

/// Bool < integers < floats: a result may be written into a tensor of the same or a higher
/// category only (PyTorch's `canCast`).
fn category(dtype: DType) -> u8 {
    match dtype {
        DType::Bool => 0,
        DType::U8 | DType::I64 => 1,
        _ => 2,
    }
}

/// Error unless a result of dtype `result` may be stored in `out`.
fn check_cast(op: &'static str, result: DType, out: DType) -> Result<()> {
    if category(result) > category(out) {
        return Err(Error::dtype(
            op,
            format!(
                "result type {} can't be cast to the desired output type {}",
                torch_type_name(result),
                torch_type_name(out)
            ),
        ));
    }
    Ok(())
}

impl Tensor {
    /// The checks every in-place op makes on the tensor it writes to.
    fn check_inplace_target(&self, op: &'static str) -> Result<()> {
        self.check_inplace_autograd(op)?;
        self.check_no_overlap(op)
    }

    /// An in-place write to a tensor that autograd tracks is an error (see the module docs).
    fn check_inplace_autograd(&self, op: &'static str) -> Result<()> {
        if is_grad_enabled() && self.requires_grad() {
            if self.is_leaf() {
                return Err(Error::Autograd(format!(
                    "{op}: a leaf Variable that requires grad is being used in an in-place operation \
                     (wrap optimizer-style updates in no_grad)"
                )));
            }
            return Err(Error::Autograd(format!(
                "{op}: in-place operations on tensors in the autograd graph (this one comes from {}) \
                 are supported only under no_grad; use the out-of-place op instead",
                self.grad_fn_name().unwrap_or("?")
            )));
        }
        Ok(())
    }

    /// Error when several elements share one memory location: the result would depend on
    /// the order of the writes.
    fn check_no_overlap(&self, op: &'static str) -> Result<()> {
        // A broadcast (stride-0) dim means several elements share one memory location
        // (an empty view has no elements to share one).
        let overlapping = self.numel() > 0
            && self
                .shape()
                .iter()
                .zip(self.stride())
                .any(|(&d, &s)| d > 1 && s == 0);
        if overlapping {
            return Err(Error::invalid(
                op,
                format!(
                    "unsupported operation: more than one element of the written-to tensor (shape {:?}, \
                     stride {:?}) refers to a single memory location; make a copy first",
                    self.shape(),
                    self.stride()
                ),
            ));
        }
        Ok(())
    }

    /// `other` ready to be read while `self` is written: same device, broadcast to `self`'s
    /// shape, cast to `self`'s dtype, detached, and copied when it shares `self`'s storage
    /// (taking the write lock and a read lock on one buffer would deadlock).
    fn inplace_operand(
        &self,
        other: &Tensor,
        op: &'static str,
    ) -> Result<(Tensor, crate::tensor::Layout)> {
        same_device(op, &[self, other])?;
        if is_grad_enabled() && other.requires_grad() {
            return Err(Error::Autograd(format!(
                "{op}: the operand requires grad; in-place ops that would need a gradient are \
                 supported only under no_grad (use the out-of-place op)"
            )));
        }
        let shape = broadcast_shapes(op, self.shape(), other.shape())?;
        if shape != self.shape() {
            return Err(Error::shape(
                op,
                format!(
                    "output with shape {:?} doesn't match the broadcast shape {shape:?} (operand shape {:?})",
                    self.shape(),
                    other.shape()
                ),
            ));
        }
        let mut src = other.detach().to_dtype(self.dtype())?;
        if src.shares_storage(self) {
            src = src.detached_copy();
        }
        let layout = src.layout().broadcast_as(op, self.shape())?;
        Ok((src, layout))
    }

    /// `self = self op other`, with PyTorch's type rules for the result.
    fn binary_inplace_op(
        &self,
        other: &Tensor,
        op: BinaryOp,
        name: &'static str,
    ) -> Result<Tensor> {
        self.check_inplace_target(name)?;
        let result = ResultType::new()
            .tensor(self.dtype(), self.ndim())
            .tensor(other.dtype(), other.ndim())
            .finish();
        self.inplace_arith(other, result, op, name)
    }

    /// `self = self op value` for a scalar: PyTorch's result type of the tensor and the
    /// number must fit the tensor (`int_tensor.mul_(2.5)` is an error, `mul_(2)` is not).
    fn scalar_inplace_op(&self, value: Scalar, op: BinaryOp, name: &'static str) -> Result<Tensor> {
        self.check_inplace_target(name)?;
        let result = ResultType::new()
            .tensor(self.dtype(), self.ndim())
            .scalar(value)
            .finish();
        let s = Tensor::scalar_tensor(value, self.dtype(), self.device())?;
        self.inplace_arith(&s, result, op, name)
    }

    /// Write `self op other` into `self`, once the op's result dtype `result` is known to
    /// fit `self`'s dtype.
    fn inplace_arith(
        &self,
        other: &Tensor,
        result: DType,
        op: BinaryOp,
        name: &'static str,
    ) -> Result<Tensor> {
        let result = if op == BinaryOp::Div {
            result.to_float()
        } else {
            result
        };
        check_cast(name, result, self.dtype())?;
        if op == BinaryOp::Sub && (self.dtype() == DType::Bool || other.dtype() == DType::Bool) {
            return Err(Error::dtype(
                name,
                "subtraction with a bool tensor is not supported; use logical_not() or \
                 logical_xor() to invert or compare masks",
            ));
        }
        let (src, src_l) = self.inplace_operand(other, name)?;
        let src_storage = src.storage();
        self.storage_mut()
            .binary_inplace(self.layout(), &src_storage, &src_l, op)?;
        Ok(self.clone())
    }

    /// `self += other` in place, `other` broadcast to `self`'s shape (`Tensor.add_`).
    pub fn add_(&self, other: &Tensor) -> Result<Tensor> {
        self.binary_inplace_op(other, BinaryOp::Add, "add_")
    }

    /// `self += alpha * other` in place (`Tensor.add_(other, alpha=alpha)`): one pass where the
    /// device has the fused kernel (the optimizers' updates: f32 and f64 on the CPU), else
    /// `add_(alpha * other)`.
    pub fn add_scaled_(&self, other: &Tensor, alpha: f64) -> Result<Tensor> {
        if self.device() == other.device() && self.dtype() == other.dtype() {
            self.check_inplace_target("add_")?;
            let (src, src_l) = self.inplace_operand(other, "add_")?;
            let done = self.storage_mut().add_scaled_inplace(
                self.layout(),
                &src.storage(),
                &src_l,
                alpha,
            )?;
            if done {
                return Ok(self.clone());
            }
        }
        self.add_(&other.mul_scalar(alpha)?)
    }

    /// `self -= other` in place (`Tensor.sub_`).
    pub fn sub_(&self, other: &Tensor) -> Result<Tensor> {
        self.binary_inplace_op(other, BinaryOp::Sub, "sub_")
    }

    /// `self *= other` in place (`Tensor.mul_`).
    pub fn mul_(&self, other: &Tensor) -> Result<Tensor> {
        self.binary_inplace_op(other, BinaryOp::Mul, "mul_")
    }

    /// `self /= other` in place, true division, so integer tensors are an error
    /// (`Tensor.div_`).
    pub fn div_(&self, other: &Tensor) -> Result<Tensor> {
        self.binary_inplace_op(other, BinaryOp::Div, "div_")
    }

    /// `self += value` in place (`Tensor.add_(scalar)`).
    pub fn add_scalar_(&self, value: impl Into<Scalar>) -> Result<Tensor> {
        self.scalar_inplace_op(value.into(), BinaryOp::Add, "add_")
    }

    /// `self *= value` in place (`Tensor.mul_(scalar)`).
    pub fn mul_scalar_(&self, value: impl Into<Scalar>) -> Result<Tensor> {
        self.scalar_inplace_op(value.into(), BinaryOp::Mul, "mul_")
    }

    /// Copy `src` into `self`, broadcasting it to `self`'s shape and converting it to `self`'s
    /// dtype (any conversion, as `Tensor.copy_`).
    pub fn copy_(&self, src: &Tensor) -> Result<Tensor> {
        self.check_inplace_target("copy_")?;
        let (src, src_l) = self.inplace_operand(src, "copy_")?;
        let src_storage = src.storage();
        self.storage_mut()
            .copy_strided_from(self.layout(), &src_storage, &src_l)?;
        Ok(self.clone())
    }

    /// Set every element to `value`, converted to the dtype as PyTorch converts scalars
    /// (`Tensor.fill_`; `2.5` in an integer tensor is 2, `-1` in u8 is 255).
    ///
    /// Writing one value to every element is well defined even when elements share memory
    /// (an expanded view), so, as in PyTorch, `fill_` and `zero_` allow it: they write each
    /// memory location once.
    pub fn fill_(&self, value: impl Into<Scalar>) -> Result<Tensor> {
        self.fill_as("fill_", value.into())
    }

    /// Set every element to zero (`Tensor.zero_`).
    pub fn zero_(&self) -> Result<Tensor> {
        self.fill_as("zero_", Scalar::Float(0.0))
    }

    /// `fill_` reporting errors as `op`.
    fn fill_as(&self, op: &'static str, value: Scalar) -> Result<Tensor> {
        self.check_inplace_autograd(op)?;
        let distinct = self.layout().without_broadcast_dims();
        match value {
            Scalar::Float(v) => self.storage_mut().fill(&distinct, v)?,
            // Integers through an i64 0-d tensor: exact beyond 2^53, wrapping like a cast.
            other => {
                let s = Tensor::scalar_tensor(other, self.dtype(), self.device())?;
                let src = s.layout().broadcast_as(op, distinct.shape())?;
                self.storage_mut()
                    .copy_strided_from(&distinct, &s.storage(), &src)?;
            }
        }
        Ok(self.clone())
    }

    /// Clamp every element into `[min, max]` in place; at least one bound is required, and
    /// float bounds on an integer tensor are an error (`Tensor.clamp_`), as the result type
    /// would not fit.
    pub fn clamp_<S: Into<Scalar>>(&self, min: Option<S>, max: Option<S>) -> Result<Tensor> {
        let (min, max) = (min.map(Into::into), max.map(Into::into));
        if min.is_none() && max.is_none() {
            return Err(Error::invalid(
                "clamp_",
                "at least one of 'min' or 'max' must not be None",
            ));
        }
        self.check_inplace_target("clamp_")?;
        let result = ResultType::new()
            .tensor(self.dtype(), self.ndim())
            .scalars(min.into_iter().chain(max))
            .finish();
        check_cast("clamp_", result, self.dtype())?;
        if result == DType::Bool {
            return Err(Error::dtype(
                "clamp_",
                "clamp is not defined for bool tensors",
            ));
        }
        let bounds = UnaryOp::Clamp(min.map(Scalar::to_f64), max.map(Scalar::to_f64));
        self.storage_mut().unary_inplace(self.layout(), bounds)?;
        Ok(self.clone())
    }
}
