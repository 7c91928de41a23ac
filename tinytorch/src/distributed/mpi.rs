//! The MPI backend (feature `mpi`): Open MPI's non-blocking collectives (`MPI_Iallreduce`,
//! `MPI_Ibcast`, `MPI_Iallgather`, `MPI_Ireduce_scatter_block`, `MPI_Ibarrier`) on host
//! copies of CPU tensors. Non-blocking, so that DDP can start a bucket's reduction and go on
//! with backward, and so that a wait can give up after the group's timeout instead of
//! hanging on a peer that never comes.
//!
//! MPI is initialised with `MPI_THREAD_SERIALIZED` (backward, and with it DDP's reductions,
//! may run on a compute thread) and every MPI call holds [`Shared::lock`].

use super::transport::{poll_until, Pending, Transport};
use super::{Backend, ReduceOp};
use crate::error::{Error, Result};
use crate::tensor::{DType, Device, Tensor};
use mpi::ffi;
use mpi::traits::{AsRaw, Communicator};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A host buffer of one of the element types MPI carries here.
enum HostBuffer {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I64(Vec<i64>),
    I32(Vec<i32>),
    U8(Vec<u8>),
}

/// `$body` with `$v` bound to the buffer's Vec, whatever its element type.
macro_rules! with_vec {
    ($buf:expr, $v:ident => $body:expr) => {
        match $buf {
            HostBuffer::F32($v) => $body,
            HostBuffer::F64($v) => $body,
            HostBuffer::I64($v) => $body,
            HostBuffer::I32($v) => $body,
            HostBuffer::U8($v) => $body,
        }
    };
}

impl HostBuffer {
    fn from_tensor(t: &Tensor) -> Result<HostBuffer> {
        Ok(match t.dtype() {
            DType::F32 => HostBuffer::F32(t.to_vec()?),
            DType::F64 => HostBuffer::F64(t.to_vec()?),
            DType::I64 => HostBuffer::I64(t.to_vec()?),
            DType::I32 => HostBuffer::I32(t.to_vec()?),
            DType::U8 => HostBuffer::U8(t.to_vec()?),
            other => unreachable!("the group converts {other} before it reaches MPI"),
        })
    }
    /// Zeros of the same element type, `len` long.
    fn zeros(&self, len: usize) -> HostBuffer {
        match self {
            HostBuffer::F32(_) => HostBuffer::F32(vec![0.0; len]),
            HostBuffer::F64(_) => HostBuffer::F64(vec![0.0; len]),
            HostBuffer::I64(_) => HostBuffer::I64(vec![0; len]),
            HostBuffer::I32(_) => HostBuffer::I32(vec![0; len]),
            HostBuffer::U8(_) => HostBuffer::U8(vec![0; len]),
        }
    }
    fn len(&self) -> usize {
        with_vec!(self, v => v.len())
    }
    fn into_tensor(self) -> Result<Tensor> {
        let n = self.len();
        with_vec!(self, v => Tensor::from_vec(v, &[n]))
    }
    fn ptr(&self) -> *const std::ffi::c_void {
        with_vec!(self, v => v.as_ptr().cast())
    }
    fn ptr_mut(&mut self) -> *mut std::ffi::c_void {
        with_vec!(self, v => v.as_mut_ptr().cast())
    }
    fn datatype(&self) -> ffi::MPI_Datatype {
        // SAFETY: reading constants that mpi-sys defines from MPI's headers.
        unsafe {
            match self {
                HostBuffer::F32(_) => ffi::RSMPI_FLOAT,
                HostBuffer::F64(_) => ffi::RSMPI_DOUBLE,
                HostBuffer::I64(_) => ffi::RSMPI_INT64_T,
                HostBuffer::I32(_) => ffi::RSMPI_INT32_T,
                HostBuffer::U8(_) => ffi::RSMPI_UINT8_T,
            }
        }
    }
}

fn mpi_op(op: ReduceOp) -> ffi::MPI_Op {
    // SAFETY: constants defined by mpi-sys from MPI's headers.
    unsafe {
        match op {
            ReduceOp::Max => ffi::RSMPI_MAX,
            // The group turns an average into a sum and a division.
            ReduceOp::Sum | ReduceOp::Avg => ffi::RSMPI_SUM,
        }
    }
}

/// What the transport and its collectives in flight share.
struct Shared {
    /// Finalises MPI when dropped; `None` once given up after a timeout.
    universe: Mutex<Option<mpi::environment::Universe>>,
    comm: ffi::MPI_Comm,
    rank: usize,
    world_size: usize,
    timeout: Duration,
    /// Held for every MPI call (MPI_THREAD_SERIALIZED).
    lock: Mutex<()>,
    /// Set when a collective timed out: its buffers are leaked (MPI may still write to
    /// them) and no further collective can be matched across ranks.
    broken: AtomicBool,
}

// SAFETY: `comm` is an MPI handle, valid for the whole run; MPI calls on it are serialised by
// `lock`, as MPI_THREAD_SERIALIZED requires.
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

impl Drop for Shared {
    /// Finalise MPI; after a timed-out collective, abort the job instead (`MPI_Finalize`
    /// would wait for the peer that never came, and the other ranks must not hang either).
    fn drop(&mut self) {
        if self.broken.load(Ordering::Acquire) {
            if let Some(universe) = self.universe.get_mut().ok().and_then(Option::take) {
                std::mem::forget(universe);
            }
            // SAFETY: MPI is initialised; the abort ends every process of the job.
            unsafe { ffi::MPI_Abort(self.comm, 1) };
        }
        // Otherwise the Universe drops here and calls MPI_Finalize.
    }
}

/// The MPI process group's transport: the world communicator.
pub(crate) struct MpiTransport {
    shared: Arc<Shared>,
}

impl MpiTransport {
    /// Initialise MPI (once per process) and take the world communicator.
    pub(crate) fn init(timeout: Duration) -> Result<MpiTransport> {
        const OP: &str = "init_process_group(mpi)";
        let (universe, level) = mpi::initialize_with_threading(mpi::Threading::Serialized)
            .ok_or_else(|| {
                Error::distributed(
                    OP,
                    "MPI is already initialised: a process initialises its process group once",
                )
            })?;
        if level < mpi::Threading::Serialized {
            return Err(Error::distributed(
                OP,
                format!("this MPI gives thread level {level:?}; DDP needs Serialized or better"),
            ));
        }
        let world = universe.world();
        let shared = Shared {
            comm: world.as_raw(),
            rank: world.rank() as usize,
            world_size: world.size() as usize,
            universe: Mutex::new(Some(universe)),
            timeout,
            lock: Mutex::new(()),
            broken: AtomicBool::new(false),
        };
        Ok(MpiTransport {
            shared: Arc::new(shared),
        })
    }

    /// Start one non-blocking collective: `start` gets the send buffer, the receive buffer
    /// (`recv_len` elements of the same type) and the request to fill.
    fn start(
        &self,
        what: &'static str,
        data: Option<&Tensor>,
        recv_len: impl FnOnce(usize) -> usize,
        start: impl FnOnce(&HostBuffer, &mut HostBuffer, *mut ffi::MPI_Request) -> i32,
    ) -> Result<Box<dyn Pending>> {
        let shared = &self.shared;
        if shared.broken.load(Ordering::Acquire) {
            return Err(Error::distributed(
                what,
                "the process group is unusable: an earlier collective timed out",
            ));
        }
        let send = match data {
            Some(t) => HostBuffer::from_tensor(t)?,
            None => HostBuffer::U8(Vec::new()),
        };
        let mut recv = send.zeros(recv_len(send.len()));
        // SAFETY: an all-zero MPI_Request is a valid value for MPI to overwrite.
        let mut request: ffi::MPI_Request = unsafe { std::mem::zeroed() };
        let code = {
            let _serial = shared.lock.lock().unwrap_or_else(|e| e.into_inner());
            start(&send, &mut recv, &mut request)
        };
        if code != 0 {
            return Err(Error::distributed(what, format!("MPI error code {code}")));
        }
        Ok(Box::new(MpiPending {
            shared: shared.clone(),
            what,
            request,
            send,
            recv: Some(recv),
            done: false,
        }))
    }
}

impl Transport for MpiTransport {
    fn rank(&self) -> usize {
        self.shared.rank
    }
    fn world_size(&self) -> usize {
        self.shared.world_size
    }
    fn backend(&self) -> Backend {
        Backend::Mpi
    }
    fn device(&self) -> Device {
        Device::Cpu
    }
    fn carries(&self, dtype: DType) -> bool {
        matches!(
            dtype,
            DType::F32 | DType::F64 | DType::I64 | DType::I32 | DType::U8
        )
    }

    fn all_reduce(&self, data: Tensor, op: ReduceOp) -> Result<Box<dyn Pending>> {
        let comm = self.shared.comm;
        self.start(
            "all_reduce",
            Some(&data),
            |n| n,
            |send, recv, req| {
                let (n, ty) = (send.len() as i32, send.datatype());
                // SAFETY: both buffers hold `n` elements of `ty` and live in the pending
                // collective until MPI is done with them.
                unsafe {
                    ffi::MPI_Iallreduce(send.ptr(), recv.ptr_mut(), n, ty, mpi_op(op), comm, req)
                }
            },
        )
    }

    fn broadcast(&self, data: Tensor, root: usize) -> Result<Box<dyn Pending>> {
        let comm = self.shared.comm;
        let is_root = root == self.shared.rank;
        self.start(
            "broadcast",
            Some(&data),
            |n| n,
            |send, recv, req| {
                // MPI_Ibcast works in one buffer: the root's data, the others' destination.
                if is_root {
                    // SAFETY: same type and length.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            send.ptr().cast::<u8>(),
                            recv.ptr_mut().cast::<u8>(),
                            byte_len(send),
                        )
                    };
                }
                let (n, ty) = (recv.len() as i32, recv.datatype());
                // SAFETY: `recv` holds `n` elements of `ty` and outlives the request.
                unsafe { ffi::MPI_Ibcast(recv.ptr_mut(), n, ty, root as i32, comm, req) }
            },
        )
    }

    fn all_gather(&self, data: Tensor) -> Result<Box<dyn Pending>> {
        let (comm, world) = (self.shared.comm, self.shared.world_size);
        self.start(
            "all_gather",
            Some(&data),
            |n| n * world,
            |send, recv, req| {
                let (n, ty) = (send.len() as i32, send.datatype());
                // SAFETY: `recv` holds world_size * n elements of `ty`.
                unsafe { ffi::MPI_Iallgather(send.ptr(), n, ty, recv.ptr_mut(), n, ty, comm, req) }
            },
        )
    }

    fn reduce_scatter(&self, data: Tensor, op: ReduceOp) -> Result<Box<dyn Pending>> {
        let (comm, world) = (self.shared.comm, self.shared.world_size);
        self.start(
            "reduce_scatter",
            Some(&data),
            |n| n / world,
            |send, recv, req| {
                let (n, ty) = (recv.len() as i32, recv.datatype());
                // SAFETY: `send` holds world_size * n elements, `recv` n, of `ty`.
                unsafe {
                    ffi::MPI_Ireduce_scatter_block(
                        send.ptr(),
                        recv.ptr_mut(),
                        n,
                        ty,
                        mpi_op(op),
                        comm,
                        req,
                    )
                }
            },
        )
    }

    fn barrier(&self) -> Result<Box<dyn Pending>> {
        let comm = self.shared.comm;
        // SAFETY: a barrier touches no buffer.
        self.start(
            "barrier",
            None,
            |_| 0,
            |_, _, req| unsafe { ffi::MPI_Ibarrier(comm, req) },
        )
    }
}

/// Bytes of a host buffer.
fn byte_len(b: &HostBuffer) -> usize {
    with_vec!(b, v => std::mem::size_of_val(v.as_slice()))
}

/// One MPI collective in flight, owning the buffers MPI reads and writes.
struct MpiPending {
    shared: Arc<Shared>,
    what: &'static str,
    request: ffi::MPI_Request,
    /// Read by MPI until the request completes.
    #[allow(dead_code)]
    send: HostBuffer,
    recv: Option<HostBuffer>,
    done: bool,
}

// SAFETY: the request handle and buffers move with the value; MPI calls on them hold the
// shared lock.
unsafe impl Send for MpiPending {}

impl MpiPending {
    /// Wait for completion, polling until the group's timeout.
    fn wait_done(&mut self) -> Result<()> {
        let Some(waited) = poll_until(self.shared.timeout, || self.test())? else {
            return Ok(());
        };
        self.give_up();
        let s = &self.shared;
        Err(Error::distributed(
            self.what,
            format!(
                "timed out after {:.1} s on rank {} of {}: a peer rank never joined this \
                 collective (it exited early, crashed or hangs); the process group is no \
                 longer usable",
                waited.as_secs_f64(),
                s.rank,
                s.world_size
            ),
        ))
    }

    /// Leak the buffers (MPI may still write to them) and mark the group unusable.
    fn give_up(&mut self) {
        self.shared.broken.store(true, Ordering::Release);
        std::mem::forget(std::mem::replace(
            &mut self.send,
            HostBuffer::U8(Vec::new()),
        ));
        std::mem::forget(self.recv.take());
        self.done = true;
    }
}

impl Pending for MpiPending {
    fn test(&mut self) -> Result<bool> {
        if self.done {
            return Ok(true);
        }
        let mut flag = 0;
        let code = {
            let _serial = self.shared.lock.lock().unwrap_or_else(|e| e.into_inner());
            // SAFETY: a live request of this process; status ignored.
            unsafe { ffi::MPI_Test(&mut self.request, &mut flag, ffi::RSMPI_STATUS_IGNORE) }
        };
        if code != 0 {
            return Err(Error::distributed(
                self.what,
                format!("MPI error code {code}"),
            ));
        }
        self.done = flag != 0;
        Ok(self.done)
    }

    fn wait(mut self: Box<Self>) -> Result<Tensor> {
        self.wait_done()?;
        self.recv.take().expect("received once").into_tensor()
    }
}

impl Drop for MpiPending {
    /// A collective dropped unfinished is waited for: MPI still uses its buffers.
    fn drop(&mut self) {
        if !self.done {
            let _ = self.wait_done();
        }
    }
}
