//! `SyncBatchNorm`: batch normalisation whose training statistics are those of the whole
//! global batch (every rank's samples), so that N ranks of batch B normalise as one process
//! of batch N x B would. The statistics are reduced with a differentiable all-reduce (its
//! backward all-reduces the gradient), so autograd derives the backward that PyTorch writes
//! by hand (the all-reduce of `sum_dy` and `sum_dy_xmu`).

use super::{ProcessGroup, ReduceOp};
use crate::autograd::{needs_grad, no_grad};
use crate::error::{Error, Result};
use crate::nn::{BatchNorm, Module, Sequential};
use crate::tensor::{Device, Tensor};

/// Batch normalisation over the global batch (`torch.nn.SyncBatchNorm`). In evaluation mode
/// it is the wrapped [`BatchNorm`]; names and state dict are the same.
pub struct SyncBatchNorm {
    inner: BatchNorm,
    group: ProcessGroup,
}

impl SyncBatchNorm {
    /// `bn` synchronised over `group`.
    pub fn new(bn: BatchNorm, group: &ProcessGroup) -> SyncBatchNorm {
        SyncBatchNorm {
            inner: bn,
            group: group.clone(),
        }
    }
}

/// The sum of `x` over the ranks; its backward is the sum of the gradient over the ranks
/// (every rank's output depends on every rank's input).
fn all_reduce_sum(group: &ProcessGroup, x: &Tensor) -> Result<Tensor> {
    const OP: &str = "SyncBatchNorm";
    let sum = |t: &Tensor, group: &ProcessGroup| -> Result<Tensor> {
        let flat = group.all_reduce_flat(OP, t, ReduceOp::Sum)?;
        flat.to_dtype(t.dtype())?.reshape(&t.shape())
    };
    let out = sum(x, group)?;
    if !needs_grad(&[x]) {
        return Ok(out);
    }
    let group = group.clone();
    Ok(
        out.with_custom_backward("SyncBatchNormAllReduce", &[x], move |g, _| {
            Ok(vec![Some(sum(g, &group)?)])
        }),
    )
}

impl Module for SyncBatchNorm {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        const OP: &str = "SyncBatchNorm";
        let bn = &self.inner;
        if !bn.is_training() && bn.running_mean.is_some() {
            return bn.forward(x);
        }
        if x.ndim() < 2 || !x.dtype().is_float() {
            return Err(Error::shape(
                OP,
                format!(
                    "input must be floating (N, C, *), got {} {:?}",
                    x.dtype(),
                    x.shape()
                ),
            ));
        }
        let c = x.shape()[1];
        // x: (N, C, *); statistics per channel over every other dim, on every rank.
        let dims: Vec<usize> = (0..x.ndim()).filter(|d| *d != 1).collect();
        let mut per_channel = vec![1; x.ndim()];
        per_channel[1] = c;
        let local = (x.numel() / c.max(1)) as f64;
        let count = Tensor::full(&[1], local, x.dtype(), x.device())?;
        let sums = all_reduce_sum(
            &self.group,
            &Tensor::cat(&[&x.sum(&dims, false)?, &count], 0)?,
        )?;
        let n = sums.narrow(0, c as isize, 1)?.detach().item_f64()?;
        if n <= 1.0 {
            return Err(Error::invalid(
                OP,
                format!("expected more than 1 value per channel when training, got {n} over all ranks (input {:?})", x.shape()),
            ));
        }
        let mean = sums.narrow(0, 0, c)?.div_scalar(n)?;
        let centred = x.sub(&mean.reshape(&per_channel)?)?;
        let var = all_reduce_sum(&self.group, &centred.mul(&centred)?.sum(&dims, false)?)?
            .div_scalar(n)?;
        let mut y = centred.mul(&var.add_scalar(bn.eps())?.rsqrt()?.reshape(&per_channel)?)?;
        if let (Some(w), Some(b)) = (&bn.weight, &bn.bias) {
            y = y
                .mul(&w.reshape(&per_channel)?)?
                .add(&b.reshape(&per_channel)?)?;
        }
        if bn.is_training() {
            let _guard = no_grad();
            let m = bn.momentum();
            if let (Some(rm), Some(rv)) = (&bn.running_mean, &bn.running_var) {
                let unbiased = var.detach().mul_scalar(n / (n - 1.0))?;
                rm.copy_(&rm.mul_scalar(1.0 - m)?.add(&mean.detach().mul_scalar(m)?)?)?;
                rv.copy_(&rv.mul_scalar(1.0 - m)?.add(&unbiased.mul_scalar(m)?)?)?;
            }
            if let Some(t) = &bn.num_batches_tracked {
                t.add_scalar_(1)?;
            }
        }
        Ok(y)
    }
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        self.inner.named_parameters()
    }
    fn named_buffers(&self) -> Vec<(String, Tensor)> {
        self.inner.named_buffers()
    }
    fn set_training(&mut self, training: bool) {
        self.inner.set_training(training);
    }
    fn is_training(&self) -> bool {
        self.inner.is_training()
    }
    fn to_device(&self, device: Device) -> Result<()> {
        self.inner.to_device(device)
    }
}

/// `module` with every [`BatchNorm`] (at the top or inside [`Sequential`]s, nested too)
/// replaced by a [`SyncBatchNorm`] over `group`, names unchanged
/// (`nn.SyncBatchNorm.convert_sync_batchnorm`).
pub fn convert_sync_batchnorm(module: Box<dyn Module>, group: &ProcessGroup) -> Box<dyn Module> {
    if module.as_ref().as_any().is::<BatchNorm>() {
        let bn = module.into_any().downcast::<BatchNorm>().expect("checked");
        return Box::new(SyncBatchNorm::new(*bn, group));
    }
    if !module.as_ref().as_any().is::<Sequential>() {
        return module;
    }
    let seq = module.into_any().downcast::<Sequential>().expect("checked");
    let training = seq.is_training();
    let children = seq
        .into_modules()
        .into_iter()
        .map(|m| convert_sync_batchnorm(m, group))
        .collect();
    let mut seq = Sequential::new(children);
    seq.set_training(training);
    Box::new(seq)
}
