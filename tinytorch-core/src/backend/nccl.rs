//! NCCL collectives on CUDA memory (feature `nccl`): one communicator per process, its
//! collectives enqueued on the device's one stream, so that they are ordered after the
//! kernels that produced their input and before those that read their output, with no host
//! synchronisation. libnccl is loaded at run time (cudarc's dynamic loading): building needs
//! no NCCL, and a machine without it gets an `Err` from [`NcclComm::init`], never a panic.
//!
//! The distributed layer drives this door with device addresses (`Tensor::data_ptr`) and
//! keeps the tensors alive until [`NcclDone::is_complete`] says the stream has passed them.

use super::cuda::device::{cuda_err, get, CudaDevice};
use crate::base::DType;
use crate::error::{Error, Result};
use cudarc::driver::CudaEvent;
use cudarc::nccl::{result, sys};
use std::ffi::c_void;
use std::sync::Arc;

/// How NCCL combines the ranks' values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NcclOp {
    /// Elementwise sum.
    Sum,
    /// Elementwise maximum.
    Max,
}

/// Bytes of an `ncclUniqueId`: what rank 0 creates and every rank needs to join.
pub const UNIQUE_ID_BYTES: usize = 128;

/// True when libnccl loads and a CUDA device is present.
pub fn is_available() -> bool {
    // SAFETY: only probes whether the shared library can be opened.
    let loads = unsafe { sys::is_culib_present() };
    loads && super::cuda::device::is_available()
}

fn nccl_err(op: &'static str, e: impl std::fmt::Debug) -> Error {
    Error::distributed(op, format!("NCCL error: {e:?}"))
}

/// A new communicator id (rank 0 makes it; the others receive it out of band).
pub fn unique_id() -> Result<Vec<u8>> {
    check_available("nccl unique id")?;
    let id = result::get_uniqueid().map_err(|e| nccl_err("nccl unique id", e))?;
    Ok(id.internal.iter().map(|c| *c as u8).collect())
}

/// An error naming `op` unless NCCL can run here ([`is_available`]).
pub fn check_available(op: &'static str) -> Result<()> {
    if is_available() {
        Ok(())
    } else {
        Err(Error::distributed(
            op,
            "NCCL needs a CUDA device and libnccl.so on the library path (PyPI's nvidia-nccl-cu13 \
             ships only libnccl.so.2: link libnccl.so to it in a folder on LD_LIBRARY_PATH)",
        ))
    }
}

fn nccl_dtype(op: &'static str, dtype: DType) -> Result<sys::ncclDataType_t> {
    use sys::ncclDataType_t::*;
    Ok(match dtype {
        DType::F32 => ncclFloat32,
        DType::F64 => ncclFloat64,
        DType::F16 => ncclFloat16,
        DType::BF16 => ncclBfloat16,
        DType::I64 => ncclInt64,
        DType::I32 => ncclInt32,
        DType::U8 => ncclUint8,
        other => {
            return Err(Error::dtype(op, format!("NCCL carries no {other} tensors")));
        }
    })
}

/// True when NCCL carries `dtype` as it is.
pub fn carries(dtype: DType) -> bool {
    nccl_dtype("", dtype).is_ok()
}

fn nccl_op(op: NcclOp) -> sys::ncclRedOp_t {
    match op {
        NcclOp::Sum => sys::ncclRedOp_t::ncclSum,
        NcclOp::Max => sys::ncclRedOp_t::ncclMax,
    }
}

/// One process's NCCL communicator on one GPU.
pub struct NcclComm {
    comm: sys::ncclComm_t,
    device: Arc<CudaDevice>,
}

// SAFETY: an NCCL communicator may be used from any thread as long as calls on it are not
// concurrent; the distributed layer issues them one at a time (like MPI's).
unsafe impl Send for NcclComm {}
unsafe impl Sync for NcclComm {}

/// The point on the stream after an enqueued collective.
pub struct NcclDone {
    event: CudaEvent,
}

impl NcclDone {
    /// True once the stream has finished the collective.
    pub fn is_complete(&self) -> Result<bool> {
        self.event
            .try_is_complete()
            .map_err(|e| cuda_err("nccl collective", e))
    }
}

impl NcclComm {
    /// Join communicator `id` as `rank` of `world` on GPU `ordinal` (`ncclCommInitRank`,
    /// which waits for every rank).
    pub fn init(ordinal: usize, rank: usize, world: usize, id: &[u8]) -> Result<NcclComm> {
        const OP: &str = "init_process_group(nccl)";
        check_available(OP)?;
        if id.len() != UNIQUE_ID_BYTES {
            return Err(Error::invalid(
                OP,
                format!("an NCCL id has {UNIQUE_ID_BYTES} bytes, got {}", id.len()),
            ));
        }
        let device = get(ordinal)?;
        device
            .stream
            .context()
            .bind_to_thread()
            .map_err(|e| cuda_err(OP, e))?;
        let mut unique = sys::ncclUniqueId {
            internal: [0; UNIQUE_ID_BYTES],
        };
        for (dst, src) in unique.internal.iter_mut().zip(id) {
            *dst = *src as _;
        }
        let mut comm = std::ptr::null_mut();
        // SAFETY: `comm` is written by NCCL; the id came from `unique_id` on rank 0.
        unsafe { result::comm_init_rank(&mut comm, world as i32, unique, rank as i32) }
            .map_err(|e| nccl_err(OP, e))?;
        Ok(NcclComm { comm, device })
    }

    /// The GPU this communicator works on.
    pub fn ordinal(&self) -> usize {
        self.device.ordinal()
    }

    fn done(&self, op: &'static str) -> Result<NcclDone> {
        let event = self
            .device
            .stream
            .record_event(None)
            .map_err(|e| cuda_err(op, e))?;
        Ok(NcclDone { event })
    }

    fn stream(&self) -> sys::cudaStream_t {
        self.device.stream.cu_stream() as sys::cudaStream_t
    }

    /// Enqueue `recv = op over ranks of send` (`count` elements of `dtype`).
    ///
    /// # Safety
    /// `send` and `recv` address `count` elements of `dtype` on this GPU, alive until the
    /// returned [`NcclDone`] is complete.
    pub unsafe fn all_reduce(
        &self,
        send: u64,
        recv: u64,
        count: usize,
        dtype: DType,
        op: NcclOp,
    ) -> Result<NcclDone> {
        const OP: &str = "all_reduce";
        let ty = nccl_dtype(OP, dtype)?;
        // SAFETY: the caller's contract.
        unsafe {
            result::all_reduce(
                send as *const c_void,
                recv as *mut c_void,
                count,
                ty,
                nccl_op(op),
                self.comm,
                self.stream(),
            )
        }
        .map_err(|e| nccl_err(OP, e))?;
        self.done(OP)
    }

    /// Enqueue `recv = root's send` (`count` elements).
    ///
    /// # Safety
    /// As [`NcclComm::all_reduce`].
    pub unsafe fn broadcast(
        &self,
        send: u64,
        recv: u64,
        count: usize,
        dtype: DType,
        root: usize,
    ) -> Result<NcclDone> {
        const OP: &str = "broadcast";
        let ty = nccl_dtype(OP, dtype)?;
        // SAFETY: the caller's contract.
        unsafe {
            result::broadcast(
                send as *const c_void,
                recv as *mut c_void,
                count,
                ty,
                root as i32,
                self.comm,
                self.stream(),
            )
        }
        .map_err(|e| nccl_err(OP, e))?;
        self.done(OP)
    }

    /// Enqueue `recv = every rank's send, in rank order` (`count` elements each).
    ///
    /// # Safety
    /// `send` addresses `count` elements, `recv` `count * world`, alive until done.
    pub unsafe fn all_gather(
        &self,
        send: u64,
        recv: u64,
        count: usize,
        dtype: DType,
    ) -> Result<NcclDone> {
        const OP: &str = "all_gather";
        let ty = nccl_dtype(OP, dtype)?;
        // SAFETY: the caller's contract.
        unsafe {
            result::all_gather(
                send as *const c_void,
                recv as *mut c_void,
                count,
                ty,
                self.comm,
                self.stream(),
            )
        }
        .map_err(|e| nccl_err(OP, e))?;
        self.done(OP)
    }

    /// Enqueue `recv = this rank's part of op over ranks of send` (`recv_count` elements).
    ///
    /// # Safety
    /// `send` addresses `recv_count * world` elements, `recv` `recv_count`, alive until done.
    pub unsafe fn reduce_scatter(
        &self,
        send: u64,
        recv: u64,
        recv_count: usize,
        dtype: DType,
        op: NcclOp,
    ) -> Result<NcclDone> {
        const OP: &str = "reduce_scatter";
        let ty = nccl_dtype(OP, dtype)?;
        // SAFETY: the caller's contract.
        unsafe {
            result::reduce_scatter(
                send as *const c_void,
                recv as *mut c_void,
                recv_count,
                ty,
                nccl_op(op),
                self.comm,
                self.stream(),
            )
        }
        .map_err(|e| nccl_err(OP, e))?;
        self.done(OP)
    }

    /// An error NCCL met in the background (a peer that failed), if any.
    pub fn async_error(&self) -> Result<()> {
        let mut status = sys::ncclResult_t::ncclSuccess;
        // SAFETY: a live communicator; NCCL writes `status`.
        unsafe { sys::ncclCommGetAsyncError(self.comm, &mut status) }
            .result()
            .map_err(|e| nccl_err("nccl", e))?;
        status.result().map(drop).map_err(|e| nccl_err("nccl", e))
    }

    /// Abort the communicator's collectives in flight (after a timeout): they never finish,
    /// and the communicator cannot be used again.
    pub fn abort(&self) {
        // SAFETY: a live communicator; aborting is how NCCL unblocks a stuck collective.
        let _ = unsafe { result::comm_abort(self.comm) };
    }
}

impl Drop for NcclComm {
    fn drop(&mut self) {
        // SAFETY: the communicator is not used after this; errors at exit are ignored.
        let _ = unsafe { result::comm_destroy(self.comm) };
    }
}
