//! The NCCL backend (feature `nccl`): collectives on CUDA tensors, one GPU per process (the
//! launcher's local rank), enqueued on the device's stream. MPI starts the processes, gives
//! ranks, and carries rank 0's NCCL id to the others (PyTorch uses a TCP store for that).
//! A wait polls the collective's stream event and NCCL's asynchronous error until the
//! group's timeout; then it aborts the communicator (as PyTorch's NCCL watchdog does).

use super::launch::LaunchEnv;
use super::mpi::MpiTransport;
use super::transport::{poll_until, Pending, Transport};
use super::{Backend, ReduceOp};
use crate::backend::nccl::{self, NcclComm, NcclDone, NcclOp};
use crate::error::{Error, Result};
use crate::tensor::{DType, Device, Tensor};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What the transport and its collectives in flight share.
struct Shared {
    comm: NcclComm,
    timeout: Duration,
    /// Set when a collective timed out and the communicator was aborted.
    broken: AtomicBool,
}

/// The NCCL process group's transport.
pub(crate) struct NcclTransport {
    shared: Arc<Shared>,
    /// Keeps MPI initialised (and finalises it last); also the rank and world size.
    mpi: MpiTransport,
}

impl NcclTransport {
    /// Check for NCCL and a GPU, start MPI, share rank 0's NCCL id and join the
    /// communicator on GPU `local_rank`.
    pub(crate) fn init(timeout: Duration) -> Result<NcclTransport> {
        const OP: &str = "init_process_group(nccl)";
        // Before MPI starts: a machine without NCCL gets its error at once.
        nccl::check_available(OP)?;
        let mpi = MpiTransport::init(timeout)?;
        let (rank, world) = (mpi.rank(), mpi.world_size());
        let id = if rank == 0 {
            nccl::unique_id()?
        } else {
            vec![0u8; nccl::UNIQUE_ID_BYTES]
        };
        let id = mpi
            .broadcast(Tensor::from_vec(id, &[nccl::UNIQUE_ID_BYTES])?, 0)?
            .wait()?
            .to_vec::<u8>()?;
        let local_rank = LaunchEnv::from_env().map_or(0, |e| e.local_rank);
        let comm = NcclComm::init(local_rank, rank, world, &id)?;
        Ok(NcclTransport {
            shared: Arc::new(Shared {
                comm,
                timeout,
                broken: AtomicBool::new(false),
            }),
            mpi,
        })
    }

    /// Run one collective into a new tensor of `out_len` elements, keeping both tensors
    /// alive in the pending collective.
    fn launch(
        &self,
        what: &'static str,
        data: Tensor,
        out_len: usize,
        enqueue: impl FnOnce(&NcclComm, u64, u64, usize, DType) -> Result<NcclDone>,
    ) -> Result<Box<dyn Pending>> {
        if self.shared.broken.load(Ordering::Acquire) {
            return Err(Error::distributed(
                what,
                "the process group is unusable: an earlier collective timed out",
            ));
        }
        let out = Tensor::zeros(&[out_len], data.dtype(), self.device())?;
        let done = enqueue(
            &self.shared.comm,
            data.data_ptr() as u64,
            out.data_ptr() as u64,
            data.numel(),
            data.dtype(),
        )?;
        Ok(Box::new(NcclPending {
            shared: self.shared.clone(),
            what,
            done,
            _input: data,
            out: Some(out),
        }))
    }
}

fn nccl_op(op: ReduceOp) -> NcclOp {
    match op {
        ReduceOp::Max => NcclOp::Max,
        // The group turns an average into a sum and a division.
        ReduceOp::Sum | ReduceOp::Avg => NcclOp::Sum,
    }
}

impl Transport for NcclTransport {
    fn rank(&self) -> usize {
        self.mpi.rank()
    }
    fn world_size(&self) -> usize {
        self.mpi.world_size()
    }
    fn backend(&self) -> Backend {
        Backend::Nccl
    }
    fn device(&self) -> Device {
        Device::Cuda(self.shared.comm.ordinal())
    }
    fn carries(&self, dtype: DType) -> bool {
        nccl::carries(dtype)
    }

    fn all_reduce(&self, data: Tensor, op: ReduceOp) -> Result<Box<dyn Pending>> {
        let n = data.numel();
        // SAFETY (in each closure): both addresses are the tensors `launch` keeps alive in
        // the pending collective, of the lengths the op needs, on this GPU.
        self.launch("all_reduce", data, n, |c, s, r, n, t| unsafe {
            c.all_reduce(s, r, n, t, nccl_op(op))
        })
    }

    fn broadcast(&self, data: Tensor, root: usize) -> Result<Box<dyn Pending>> {
        let n = data.numel();
        self.launch("broadcast", data, n, |c, s, r, n, t| unsafe {
            c.broadcast(s, r, n, t, root)
        })
    }

    fn all_gather(&self, data: Tensor) -> Result<Box<dyn Pending>> {
        let n = data.numel() * self.world_size();
        self.launch("all_gather", data, n, |c, s, r, n, t| unsafe {
            c.all_gather(s, r, n, t)
        })
    }

    fn reduce_scatter(&self, data: Tensor, op: ReduceOp) -> Result<Box<dyn Pending>> {
        let part = data.numel() / self.world_size();
        self.launch("reduce_scatter", data, part, |c, s, r, _, t| unsafe {
            c.reduce_scatter(s, r, part, t, nccl_op(op))
        })
    }

    fn barrier(&self) -> Result<Box<dyn Pending>> {
        // PyTorch's NCCL barrier: an all-reduce of one element.
        let one = Tensor::zeros(&[1], DType::F32, self.device())?;
        self.all_reduce(one, ReduceOp::Sum)
    }
}

/// One NCCL collective in flight, holding its input and output tensors until the stream
/// has passed it.
struct NcclPending {
    shared: Arc<Shared>,
    what: &'static str,
    done: NcclDone,
    _input: Tensor,
    out: Option<Tensor>,
}

impl Pending for NcclPending {
    fn test(&mut self) -> Result<bool> {
        self.shared.comm.async_error()?;
        self.done.is_complete()
    }

    fn wait(mut self: Box<Self>) -> Result<Tensor> {
        if let Some(waited) = poll_until(self.shared.timeout, || self.test())? {
            self.shared.broken.store(true, Ordering::Release);
            self.shared.comm.abort();
            return Err(Error::distributed(
                self.what,
                format!(
                    "timed out after {:.1} s: a peer rank never joined this collective; the \
                     NCCL communicator was aborted",
                    waited.as_secs_f64()
                ),
            ));
        }
        Ok(self.out.take().expect("taken once"))
    }
}
