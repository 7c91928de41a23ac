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
use crate::backend::cpu::binary::add_scaled_inplace;
use crate::backend::{BinaryOp, Storage, UnaryOp};
use crate::error::{Error, Result};
use crate::tensor::layout::broadcast_shapes;
use crate::tensor::{DType, Tensor};

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
        // A broadcast (stride-0) dim means several elements share one memory location.
        let overlapping = self
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
        let promoted = DType::promote(self.dtype(), other.dtype());
        let result = if op == BinaryOp::Div {
            promoted.to_float()
        } else {
            promoted
        };
        check_cast(name, result, self.dtype())?;
        let (src, src_l) = self.inplace_operand(other, name)?;
        let src_storage = src.storage();
        self.storage_mut()
            .binary_inplace(self.layout(), &src_storage, &src_l, op)?;
        Ok(self.clone())
    }

    /// `self = self op value` for a Python-style scalar: an integral value keeps the tensor's
    /// dtype, a fractional one is a float (an error on integer tensors, as in PyTorch).
    fn scalar_inplace_op(&self, value: f64, op: BinaryOp, name: &'static str) -> Result<Tensor> {
        let scalar_dtype = if value.fract() != 0.0 || !value.is_finite() {
            DType::F32
        } else {
            DType::I64
        };
        let result = if self.dtype().is_float() {
            self.dtype()
        } else {
            DType::promote(self.dtype(), scalar_dtype)
        };
        check_cast(name, result, self.dtype())?;
        let s = Tensor::from_f64_values(vec![value], &[], self.dtype(), self.device())?;
        self.binary_inplace_op(&s, op, name)
    }

    /// `self += other` in place, `other` broadcast to `self`'s shape (`Tensor.add_`).
    pub fn add_(&self, other: &Tensor) -> Result<Tensor> {
        self.binary_inplace_op(other, BinaryOp::Add, "add_")
    }

    /// `self += alpha * other` in place (`Tensor.add_(other, alpha=alpha)`): one pass for f32
    /// and f64 CPU tensors of one dtype (the optimizers' updates), else `add_(alpha * other)`.
    pub fn add_scaled_(&self, other: &Tensor, alpha: f64) -> Result<Tensor> {
        if self.device().is_cpu() && self.dtype() == other.dtype() {
            self.check_inplace_target("add_")?;
            let (src, src_l) = self.inplace_operand(other, "add_")?;
            let done = match (&mut *self.storage_mut(), &*src.storage()) {
                (Storage::Cpu(dst), Storage::Cpu(src)) => {
                    add_scaled_inplace(dst, self.layout(), src, &src_l, alpha)?
                }
                #[allow(unreachable_patterns)] // reachable with the `cuda` feature
                _ => false,
            };
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
    pub fn add_scalar_(&self, value: f64) -> Result<Tensor> {
        self.scalar_inplace_op(value, BinaryOp::Add, "add_")
    }

    /// `self *= value` in place (`Tensor.mul_(scalar)`).
    pub fn mul_scalar_(&self, value: f64) -> Result<Tensor> {
        self.scalar_inplace_op(value, BinaryOp::Mul, "mul_")
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

    /// Set every element to `value`, converted to the dtype (`Tensor.fill_`).
    pub fn fill_(&self, value: f64) -> Result<Tensor> {
        self.check_inplace_target("fill_")?;
        self.storage_mut().fill(self.layout(), value)?;
        Ok(self.clone())
    }

    /// Set every element to zero (`Tensor.zero_`).
    pub fn zero_(&self) -> Result<Tensor> {
        self.check_inplace_target("zero_")?;
        self.storage_mut().fill(self.layout(), 0.0)?;
        Ok(self.clone())
    }

    /// Clamp every element into `[min, max]` in place; at least one bound is required, and
    /// fractional bounds on an integer tensor are an error (`Tensor.clamp_`).
    pub fn clamp_(&self, min: Option<f64>, max: Option<f64>) -> Result<Tensor> {
        if min.is_none() && max.is_none() {
            return Err(Error::invalid(
                "clamp_",
                "at least one of 'min' or 'max' must not be None",
            ));
        }
        self.check_inplace_target("clamp_")?;
        let fractional = [min, max]
            .iter()
            .flatten()
            .any(|v| v.fract() != 0.0 || !v.is_finite());
        if !self.dtype().is_float() && fractional {
            check_cast("clamp_", DType::F32, self.dtype())?;
        }
        self.storage_mut()
            .unary_inplace(self.layout(), UnaryOp::Clamp(min, max))?;
        Ok(self.clone())
    }
}
