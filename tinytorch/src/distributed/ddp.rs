//! `DistributedDataParallel` (PyTorch's DDP, Li et al., VLDB 2020): one model replica per
//! process, the same weights everywhere (rank 0's, broadcast at the start), and gradients
//! averaged over the ranks during backward by a [`GradientReducer`].

use super::reducer::{GradientReducer, NoSyncGuard};
use super::ProcessGroup;
use crate::autograd::no_grad;
use crate::error::Result;
use crate::nn::{prefixed, Module};
use crate::tensor::{Device, Tensor};
use std::time::Duration;

/// Options of [`DistributedDataParallel`], with PyTorch's defaults.
#[derive(Clone, Debug)]
pub struct DdpOptions {
    /// Bucket size in MiB (`bucket_cap_mb=25`).
    pub bucket_cap_mb: f64,
    /// Broadcast rank 0's buffers (BatchNorm's running statistics) before every forward in
    /// training mode (`broadcast_buffers=True`).
    pub broadcast_buffers: bool,
}

impl Default for DdpOptions {
    fn default() -> Self {
        DdpOptions {
            bucket_cap_mb: 25.0,
            broadcast_buffers: true,
        }
    }
}

/// A module wrapped for data-parallel training (`torch.nn.parallel.DistributedDataParallel`).
/// Forward runs the module; `loss.backward()` averages the gradients over the ranks before
/// it returns, so that every rank's optimizer takes the same step. State-dict names are the
/// module's prefixed with `module.`, as in PyTorch.
pub struct DistributedDataParallel {
    module: Box<dyn Module>,
    group: ProcessGroup,
    options: DdpOptions,
    reducer: GradientReducer,
}

/// Broadcast rank 0's values of `tensors` (parameters, buffers) to every rank, in place.
pub fn broadcast_from_rank_0(group: &ProcessGroup, tensors: &[(String, Tensor)]) -> Result<()> {
    let _guard = no_grad();
    tensors
        .iter()
        .try_for_each(|(_, t)| group.broadcast_unchecked(t, 0))
}

impl DistributedDataParallel {
    /// Wrap `module` (on the group's device): check that every rank holds the same
    /// architecture, broadcast rank 0's parameters and buffers, and hook the parameters.
    pub fn new(module: Box<dyn Module>, group: &ProcessGroup, options: DdpOptions) -> Result<Self> {
        let reducer =
            GradientReducer::new(module.named_parameters(), group, options.bucket_cap_mb)?;
        broadcast_from_rank_0(group, &module.named_parameters())?;
        broadcast_from_rank_0(group, &module.named_buffers())?;
        Ok(DistributedDataParallel {
            module,
            group: group.clone(),
            options,
            reducer,
        })
    }

    /// The wrapped module (`ddp.module`): save its state dict for a checkpoint without the
    /// `module.` prefix.
    pub fn module(&self) -> &dyn Module {
        self.module.as_ref()
    }

    /// The wrapped module, mutably.
    pub fn module_mut(&mut self) -> &mut dyn Module {
        self.module.as_mut()
    }

    /// The process group the gradients are averaged over.
    pub fn process_group(&self) -> &ProcessGroup {
        &self.group
    }

    /// See [`GradientReducer::no_sync`].
    pub fn no_sync(&self) -> NoSyncGuard {
        self.reducer.no_sync()
    }

    /// See [`GradientReducer::buckets`].
    pub fn buckets(&self) -> Vec<Vec<String>> {
        self.reducer.buckets()
    }

    /// See [`GradientReducer::take_communication_time`].
    pub fn take_communication_time(&self) -> Duration {
        self.reducer.take_communication_time()
    }
}

impl Module for DistributedDataParallel {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.reducer.check_finished()?;
        if self.module.is_training() && self.options.broadcast_buffers {
            broadcast_from_rank_0(&self.group, &self.module.named_buffers())?;
        }
        self.module.call(x)
    }
    fn named_children(&self) -> Vec<(String, &dyn Module)> {
        vec![("module".into(), self.module.as_ref())]
    }
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        prefixed("module", self.module.named_parameters())
    }
    fn named_buffers(&self) -> Vec<(String, Tensor)> {
        prefixed("module", self.module.named_buffers())
    }
    fn set_training(&mut self, training: bool) {
        self.module.set_training(training);
    }
    fn is_training(&self) -> bool {
        self.module.is_training()
    }
    fn to_device(&self, device: Device) -> Result<()> {
        self.module.to_device(device)
    }
}
