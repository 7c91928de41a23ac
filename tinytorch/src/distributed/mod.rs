//! Distributed data-parallel training (`torch.distributed`): a [`ProcessGroup`] of N
//! processes started by a launcher (`mpirun`), its collectives, and
//! [`DistributedDataParallel`], which keeps one model replica per process in step by
//! averaging gradients during backward.
//!
//! Backends sit behind cargo features, so the default build needs neither MPI nor NCCL:
//! `mpi` (Open MPI, CPU tensors, one machine or many) and `nccl` (CUDA tensors, one GPU
//! per process; MPI starts the processes and hands NCCL its id). Without them,
//! [`init_process_group`] returns an error naming the feature, and DDP, SyncBatchNorm and
//! [`DistributedSampler`](crate::data::DistributedSampler) still build.

mod ddp;
mod group;
mod launch;
#[cfg(feature = "mpi")]
mod mpi;
#[cfg(feature = "nccl")]
mod nccl;
mod reducer;
mod sync_batch_norm;
mod transport;

pub use ddp::{broadcast_from_rank_0, DdpOptions, DistributedDataParallel};
pub use group::ProcessGroup;
pub use launch::{init_process_group, init_process_group_with, Backend, LaunchEnv};
pub use reducer::{GradientReducer, NoSyncGuard};
pub use sync_batch_norm::{convert_sync_batchnorm, SyncBatchNorm};

/// How a collective combines the ranks' values (`torch.distributed.ReduceOp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// Elementwise sum (for bool: logical or).
    Sum,
    /// Elementwise mean over the ranks (floating dtypes only).
    Avg,
    /// Elementwise maximum (for bool: logical or).
    Max,
}
