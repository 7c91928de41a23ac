//! Starting a process group from what the launcher put in the environment.

use super::group::ProcessGroup;
use crate::error::{Error, Result};
use std::time::Duration;

/// A process group backend (`backend=` of `torch.distributed.init_process_group`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// MPI (feature `mpi`): CPU tensors.
    Mpi,
    /// NCCL (feature `nccl`): CUDA tensors, one GPU per process.
    Nccl,
}

impl Backend {
    /// The backend's name as PyTorch spells it.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Mpi => "mpi",
            Backend::Nccl => "nccl",
        }
    }
}

impl std::str::FromStr for Backend {
    type Err = Error;
    fn from_str(s: &str) -> Result<Backend> {
        match s {
            "mpi" => Ok(Backend::Mpi),
            "nccl" => Ok(Backend::Nccl),
            other => Err(Error::invalid(
                "init_process_group",
                format!("unknown backend '{other}' (expected mpi or nccl)"),
            )),
        }
    }
}

/// Rank, world size and local rank as the launcher set them: Open MPI's `mpirun`
/// (`OMPI_COMM_WORLD_*`), MPICH/Hydra (`PMI_RANK`, `PMI_SIZE`, `MPI_LOCALRANKID`) or
/// `torchrun` (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchEnv {
    /// This process's rank.
    pub rank: usize,
    /// Number of processes.
    pub world_size: usize,
    /// Rank among the processes on this machine (which GPU to take).
    pub local_rank: usize,
}

impl LaunchEnv {
    /// The launcher's variables, or `None` when the process was not started by one.
    pub fn from_env() -> Option<LaunchEnv> {
        let var = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| std::env::var(n).ok().and_then(|v| v.parse::<usize>().ok()))
        };
        Some(LaunchEnv {
            rank: var(&["OMPI_COMM_WORLD_RANK", "PMI_RANK", "RANK"])?,
            world_size: var(&["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "WORLD_SIZE"])?,
            local_rank: var(&[
                "OMPI_COMM_WORLD_LOCAL_RANK",
                "MPI_LOCALRANKID",
                "LOCAL_RANK",
            ])
            .unwrap_or(0),
        })
    }
}

/// PyTorch's default timeout of a collective: 30 minutes.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Join the process group of this job (`torch.distributed.init_process_group(backend)`),
/// with PyTorch's 30-minute timeout for a collective.
pub fn init_process_group(backend: Backend) -> Result<ProcessGroup> {
    init_process_group_with(backend, DEFAULT_TIMEOUT)
}

/// [`init_process_group`] with `timeout`: how long a collective waits for the other ranks
/// before it fails (a peer that died or never came) instead of hanging.
pub fn init_process_group_with(backend: Backend, timeout: Duration) -> Result<ProcessGroup> {
    const OP: &str = "init_process_group";
    if timeout.is_zero() {
        return Err(Error::invalid(OP, "timeout must be positive"));
    }
    match backend {
        #[cfg(feature = "mpi")]
        Backend::Mpi => Ok(ProcessGroup::new(std::sync::Arc::new(
            super::mpi::MpiTransport::init(timeout)?,
        ))),
        #[cfg(feature = "nccl")]
        Backend::Nccl => Ok(ProcessGroup::new(std::sync::Arc::new(
            super::nccl::NcclTransport::init(timeout)?,
        ))),
        #[cfg(not(feature = "nccl"))]
        Backend::Nccl => Err(Error::NotImplemented {
            op: OP,
            what: "backend nccl: this build lacks cargo feature \"nccl\"".into(),
        }),
        #[cfg(not(feature = "mpi"))]
        Backend::Mpi => Err(Error::NotImplemented {
            op: OP,
            what: "backend mpi: this build lacks cargo feature \"mpi\"".into(),
        }),
    }
}
