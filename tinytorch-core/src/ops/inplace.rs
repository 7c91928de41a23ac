//! In-place ops (`add_`, `mul_`, `copy_`, `zero_`, `fill_`, `clamp_`, `relu_`, ...) with
//! PyTorch's autograd semantics. Each writes through `Tensor::storage_mut`, which bumps the
//! tensor's version counter, so a backward rule that saved the tensor reports the
//! modification instead of computing a wrong gradient.
//!
//! Two paths:
//! - Nothing requires grad (or grad mode is off: optimizers, `no_grad` code): the kernel
//!   writes into the tensor directly.
//! - The target or an operand requires grad, in grad mode: PyTorch's *history rebase*. The
//!   op's result is computed out of place from the tensor (so its backward rule and saved
//!   tensors are the out-of-place op's, written once), the values are written into the
//!   tensor, and the tensor's node becomes the result's node, whose input edge is the
//!   tensor's old node (`tensor/node.rs` keeps edges as snapshots). Ops whose backward needs
//!   the old value (`mul_` by a tensor that requires grad, `clamp_`, `leaky_relu_`, ...)
//!   compute from a clone of it, as PyTorch saves `original_self`.
//!   For a view (`y[:, 0].fill_(0)`, `y[mask] = 0`), the view's base gets a `CopySlices`
//!   node (the base's old gradient outside the view, the result's gradient inside it) and
//!   the view a node that views the new base, as PyTorch does.
//!
//! Errors where PyTorch errors: an in-place op on a leaf that requires grad (or a view of
//! one) in grad mode; a saved tensor modified before backward (at backward, by version).

use super::same_device;
use crate::autograd::is_grad_enabled;
use crate::backend::{BinaryOp, UnaryOp};
use crate::error::{Error, Result};
use crate::tensor::layout::broadcast_shapes;
use crate::tensor::node::Node;
use crate::tensor::{DType, Layout, ResultType, Scalar, Tensor};
use std::sync::Arc;

/// Bool < integers < floats: a result may be written into a tensor of the same or a higher
/// category only (PyTorch's `canCast`).
fn category(dtype: DType) -> u8 {
    match dtype {
        DType::Bool => 0,
        d if d.is_int() => 1,
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
                result.legacy_name(),
                out.legacy_name()
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

    /// PyTorch's errors for in-place writes in grad mode: to a leaf that requires grad, or to
    /// a view of one (its `.grad` would not be the gradient of the values it holds).
    fn check_inplace_autograd(&self, _op: &'static str) -> Result<()> {
        if !is_grad_enabled() {
            return Ok(());
        }
        if self.is_leaf() && self.requires_grad() {
            return Err(Error::Autograd(
                "a leaf Variable that requires grad is being used in an in-place operation.".into(),
            ));
        }
        if let Some(base) = self.view_base() {
            if base.is_leaf() && base.requires_grad() {
                return Err(Error::Autograd(
                    "a view of a leaf Variable that requires grad is being used in an in-place \
                     operation."
                        .into(),
                ));
            }
        }
        Ok(())
    }

    /// True when an in-place op on `self` with `operands` must be recorded in the graph
    /// (the rebase path of the module docs).
    pub(crate) fn inplace_records(&self, operands: &[&Tensor]) -> bool {
        is_grad_enabled()
            && (self.requires_grad()
                || operands.iter().any(|t| t.requires_grad())
                || self.view_base().is_some_and(|b| b.requires_grad()))
    }

    /// The recorded in-place op `op`: `compute` gives the result out of place from the
    /// tensor (a clone of its old value when `keep_old`, for backward rules that need it),
    /// which is then written into `self` and becomes its history.
    fn inplace_recorded(
        &self,
        op: &'static str,
        keep_old: bool,
        compute: impl FnOnce(&Tensor) -> Result<Tensor>,
    ) -> Result<Tensor> {
        self.check_inplace_target(op)?;
        let target = self.current_history(op)?;
        let input = if keep_old && target.requires_grad() {
            target.contiguous_copy()?
        } else {
            target
        };
        let result = compute(&input)?;
        self.write_and_rebase(op, result)
    }

    /// `self` with its up-to-date history: for a view of a graph tensor, a fresh view of the
    /// base's current node, since an in-place op on the base after the view was made would
    /// leave the view's own node stale (PyTorch regenerates a view's `grad_fn` likewise).
    fn current_history(&self, op: &'static str) -> Result<Tensor> {
        match self.view_base() {
            Some(base) if base.requires_grad() => {
                let region = self.region_in(&base, op)?;
                let view = self.view_with_layout(self.layout().clone());
                Ok(view.set_node(view_node(&base, region)))
            }
            _ => Ok(self.clone()),
        }
    }

    /// Write `result` (the op's out-of-place result, same shape) into `self` and make its
    /// node `self`'s history (a view's: its base's, see the module docs).
    fn write_and_rebase(&self, op: &'static str, result: Tensor) -> Result<Tensor> {
        if result.shape() != self.shape() {
            return Err(Error::shape(
                op,
                format!(
                    "output with shape {:?} doesn't match the broadcast shape {:?}",
                    self.shape(),
                    result.shape()
                ),
            ));
        }
        check_cast(op, result.dtype(), self.dtype())?;
        let rebased_view = match self.view_base() {
            Some(base) if result.requires_grad() => {
                Some((base.clone(), self.region_in(&base, op)?))
            }
            _ => None,
        };
        let result = if result.dtype() != self.dtype() {
            result.to_dtype(self.dtype())?
        } else {
            result
        };
        {
            // A result sharing the buffer would take a read lock beside the write lock.
            let src = if result.shares_storage(self) {
                result.detached_copy()
            } else {
                result.detach()
            };
            let src_storage = src.storage();
            self.storage_mut()
                .copy_strided_from(self.layout(), &src_storage, src.layout())?;
        }
        let Some(node) = result.node() else {
            return Ok(self.clone());
        };
        match rebased_view {
            None => self.rebase_history(node),
            Some((base, region)) => self.rebase_view(&base, region, &result),
        }
        Ok(self.clone())
    }

    /// Where this view lies in `base`, in `base`'s row-major coordinates (the `part` layout of
    /// the view nodes). The base must be row-major (every base an op returns is).
    fn region_in(&self, base: &Tensor, op: &'static str) -> Result<Layout> {
        if !base.is_contiguous() || self.storage_offset() < base.storage_offset() {
            return Err(Error::Autograd(format!(
                "{op}: an in-place operation on a view of a non-contiguous tensor in the autograd \
                 graph is not supported; call .contiguous() on the base first"
            )));
        }
        Ok(Layout::from_parts(
            self.shape().to_vec(),
            self.stride().to_vec(),
            self.storage_offset() - base.storage_offset(),
        ))
    }

    /// The history of an in-place op on a view (`self`, at `region` of `base`) whose result
    /// is `result`: PyTorch's `CopySlices` on the base (the gradient outside the view goes to
    /// the base's old node, inside it to `result`), and a view of the new base on `self`.
    fn rebase_view(&self, base: &Tensor, region: Layout, result: &Tensor) {
        let r = region.clone();
        let copy_slices: crate::autograd::BackwardFn = Box::new(move |g, _| {
            // g: (base shape), row-major in a buffer of its own.
            let rest = g.detached_copy();
            let inside = rest.view_with_layout(r.clone()).detached_copy();
            rest.storage_mut().fill(&r, 0.0)?;
            // Written with storage writes: under create_graph, differentiating these again
            // is an error rather than a silent zero.
            Ok(vec![
                Some(rest.first_order_only("copy_slices", &[g])),
                Some(inside.first_order_only("copy_slices", &[g])),
            ])
        });
        let inputs = vec![base.clone(), result.clone()];
        base.rebase_history(Arc::new(Node::new(
            "copy_slices",
            inputs,
            copy_slices,
            None,
        )));
        self.rebase_history(Arc::new(view_node(base, region)));
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
        if self.inplace_records(&[other]) {
            return self.inplace_recorded("add_", false, |x| x.add(other));
        }
        self.binary_inplace_op(other, BinaryOp::Add, "add_")
    }

    /// `self += alpha * other` in place (`Tensor.add_(other, alpha=alpha)`): one pass where the
    /// device has the fused kernel (the optimizers' updates: f32 and f64 on the CPU), else
    /// `add_(alpha * other)`.
    pub fn add_scaled_(&self, other: &Tensor, alpha: f64) -> Result<Tensor> {
        if self.inplace_records(&[other]) {
            return self.inplace_recorded("add_", false, |x| x.add(&other.mul_scalar(alpha)?));
        }
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
        if self.inplace_records(&[other]) {
            return self.inplace_recorded("sub_", false, |x| x.sub(other));
        }
        self.binary_inplace_op(other, BinaryOp::Sub, "sub_")
    }

    /// `self *= other` in place (`Tensor.mul_`).
    pub fn mul_(&self, other: &Tensor) -> Result<Tensor> {
        if self.inplace_records(&[other]) {
            // `other`'s gradient is `self`'s old value.
            let keep_old = other.requires_grad();
            return self.inplace_recorded("mul_", keep_old, |x| x.mul(other));
        }
        self.binary_inplace_op(other, BinaryOp::Mul, "mul_")
    }

    /// `self /= other` in place, true division, so integer tensors are an error
    /// (`Tensor.div_`).
    pub fn div_(&self, other: &Tensor) -> Result<Tensor> {
        if self.inplace_records(&[other]) {
            let keep_old = other.requires_grad();
            return self.inplace_recorded("div_", keep_old, |x| x.div(other));
        }
        self.binary_inplace_op(other, BinaryOp::Div, "div_")
    }

    /// `self += value` in place (`Tensor.add_(scalar)`).
    pub fn add_scalar_(&self, value: impl Into<Scalar>) -> Result<Tensor> {
        let value = value.into();
        if self.inplace_records(&[]) {
            return self.inplace_recorded("add_", false, |x| x.add_scalar(value));
        }
        self.scalar_inplace_op(value, BinaryOp::Add, "add_")
    }

    /// `self -= value` in place (`Tensor.sub_(scalar)`).
    pub fn sub_scalar_(&self, value: impl Into<Scalar>) -> Result<Tensor> {
        let value = value.into();
        if self.inplace_records(&[]) {
            return self.inplace_recorded("sub_", false, |x| x.sub_scalar(value));
        }
        self.scalar_inplace_op(value, BinaryOp::Sub, "sub_")
    }

    /// `self *= value` in place (`Tensor.mul_(scalar)`).
    pub fn mul_scalar_(&self, value: impl Into<Scalar>) -> Result<Tensor> {
        let value = value.into();
        if self.inplace_records(&[]) {
            return self.inplace_recorded("mul_", false, |x| x.mul_scalar(value));
        }
        self.scalar_inplace_op(value, BinaryOp::Mul, "mul_")
    }

    /// `self /= value` in place, true division (`Tensor.div_(scalar)`).
    pub fn div_scalar_(&self, value: impl Into<Scalar>) -> Result<Tensor> {
        let value = value.into();
        if self.inplace_records(&[]) {
            return self.inplace_recorded("div_", false, |x| x.div_scalar(value));
        }
        self.scalar_inplace_op(value, BinaryOp::Div, "div_")
    }

    /// Copy `src` into `self`, broadcasting it to `self`'s shape and converting it to `self`'s
    /// dtype (any conversion, as `Tensor.copy_`).
    pub fn copy_(&self, src: &Tensor) -> Result<Tensor> {
        if self.inplace_records(&[src]) {
            return self.copy_recorded(src);
        }
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

    /// `copy_` in the graph: the result is `src` (cast, broadcast) with a node whose
    /// gradient is zero for the old `self` and the upstream gradient (summed to `src`'s
    /// shape) for `src` (PyTorch's `CopyBackwards`).
    fn copy_recorded(&self, src: &Tensor) -> Result<Tensor> {
        self.check_inplace_target("copy_")?;
        same_device("copy_", &[self, src])?;
        broadcast_shapes("copy_", self.shape(), src.shape())?;
        let values = src
            .detach()
            .to_dtype(self.dtype())?
            .broadcast_to(self.shape())?;
        let src_shape = src.shape().to_vec();
        let result = values
            .detach()
            .record("copy", &[self, src], move |g, need| {
                let old = if need[0] { Some(g.zeros_like()?) } else { None };
                let gsrc = if need[1] {
                    Some(g.sum_to_shape(&src_shape)?)
                } else {
                    None
                };
                Ok(vec![old, gsrc])
            });
        self.write_and_rebase("copy_", result)
    }

    /// `fill_` reporting errors as `op`.
    fn fill_as(&self, op: &'static str, value: Scalar) -> Result<Tensor> {
        if self.inplace_records(&[]) {
            // The old values get a zero gradient (PyTorch's `FillBackward0`).
            self.check_inplace_autograd(op)?;
            let name = if op == "zero_" { "zero" } else { "fill" };
            let values = Tensor::scalar_tensor(value, self.dtype(), self.device())?
                .broadcast_to(self.shape())?;
            let result = values
                .detach()
                .record(name, &[self], |g, _| Ok(vec![Some(g.zeros_like()?)]));
            return self.write_and_rebase(op, result);
        }
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
        if self.inplace_records(&[]) {
            // The gradient passes where the old value lay inside the bounds.
            return self.inplace_recorded("clamp_", true, |x| x.clamp(min, max));
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

/// The node of a view at `region` (row-major coordinates) of `base`'s current history: its
/// gradient is embedded into zeros of `base`'s shape (PyTorch's `AsStridedBackward0`).
fn view_node(base: &Tensor, region: Layout) -> Node {
    let base_shape = base.shape().to_vec();
    let r = region.clone();
    let rule: crate::autograd::BackwardFn =
        Box::new(move |g, _| Ok(vec![Some(super::view::embed_grad(g, &base_shape, &r)?)]));
    Node::new("as_strided", vec![base.clone()], rule, Some(region))
}

/// The in-place forms of unary ops and activations (`relu_`, `sigmoid_`, `F.relu(x,
/// inplace=True)`, ...): the out-of-place op written into the tensor, its history rebased
/// when it is in the graph (see the module docs). `keep_old`: the backward rule needs the
/// old value (it saves its input), so the op runs on a clone of it.
macro_rules! unary_inplace {
    ($($(#[$doc:meta])* $name:ident => $op:ident, keep_old: $keep:expr;)*) => {
        impl Tensor {
            $(
                $(#[$doc])*
                pub fn $name(&self) -> Result<Tensor> {
                    self.inplace_recorded(stringify!($name), $keep, |x| x.$op())
                }
            )*
        }
    };
}

unary_inplace! {
    /// `max(self, 0)` in place (`Tensor.relu_`, `F.relu(x, inplace=True)`); the backward
    /// uses the result, as PyTorch's.
    relu_ => relu, keep_old: false;
    /// The logistic function in place (`Tensor.sigmoid_`).
    sigmoid_ => sigmoid, keep_old: false;
    /// `tanh` in place (`Tensor.tanh_`).
    tanh_ => tanh, keep_old: false;
    /// `e^self` in place (`Tensor.exp_`).
    exp_ => exp, keep_old: false;
    /// `-self` in place (`Tensor.neg_`).
    neg_ => neg, keep_old: false;
    /// `self * sigmoid(self)` in place (`F.silu(x, inplace=True)`).
    silu_ => silu, keep_old: true;
}

impl Tensor {
    /// `leaky_relu` in place (`F.leaky_relu(x, slope, inplace=True)`).
    pub fn leaky_relu_(&self, negative_slope: f64) -> Result<Tensor> {
        self.inplace_recorded("leaky_relu_", true, |x| x.leaky_relu(negative_slope))
    }

    /// `elu` in place (`F.elu(x, alpha, inplace=True)`).
    pub fn elu_(&self, alpha: f64) -> Result<Tensor> {
        self.inplace_recorded("elu_", true, |x| x.elu(alpha))
    }

    /// `max(self, min)` in place (`Tensor.clamp_min_`).
    pub fn clamp_min_(&self, min: impl Into<Scalar>) -> Result<Tensor> {
        self.clamp_(Some(min.into()), None)
    }

    /// `min(self, max)` in place (`Tensor.clamp_max_`).
    pub fn clamp_max_(&self, max: impl Into<Scalar>) -> Result<Tensor> {
        self.clamp_(None, Some(max.into()))
    }

    /// `value` where the bool `mask` (broadcast to `self`'s shape) is true, in place
    /// (`Tensor.masked_fill_`); the gradient is zero where filled.
    pub fn masked_fill_(&self, mask: &Tensor, value: impl Into<Scalar>) -> Result<Tensor> {
        let value = value.into();
        self.inplace_recorded("masked_fill_", false, |x| x.masked_fill(mask, value))
    }
}
