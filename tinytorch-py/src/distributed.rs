//! `tinytorch.distributed`'s native half: the default process group (one per process, as in
//! PyTorch), its collectives, the gradient reducer under `nn.parallel.DistributedDataParallel`
//! and `DistributedSampler`'s index arithmetic. The MPI backend needs the package built with
//! cargo feature `mpi` (`MATURIN_PEP517_ARGS="--features mpi" pip install ./tinytorch-py`);
//! without it, `init_process_group` raises an error saying so. Collectives release the GIL.

use crate::error::IntoPyResult;
use crate::tensor::PyTensor;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::sync::Mutex;
use std::time::Duration;
use tinytorch::data::DistributedSampler;
use tinytorch::distributed::{
    broadcast_from_rank_0, init_process_group_with, Backend, GradientReducer, ProcessGroup,
    ReduceOp,
};

/// The default process group (`init_process_group` sets it, `destroy_process_group` drops it,
/// which finalises MPI).
static GROUP: Mutex<Option<ProcessGroup>> = Mutex::new(None);

/// The default group, or PyTorch's error when there is none.
fn group() -> PyResult<ProcessGroup> {
    GROUP.lock().expect("group lock").clone().ok_or_else(|| {
        PyValueError::new_err(
            "Default process group has not been initialized, please make sure to call \
             init_process_group.",
        )
    })
}

fn reduce_op(op: &str) -> PyResult<ReduceOp> {
    match op {
        "sum" => Ok(ReduceOp::Sum),
        "avg" => Ok(ReduceOp::Avg),
        "max" => Ok(ReduceOp::Max),
        other => Err(PyValueError::new_err(format!(
            "unsupported reduce op {other} (expected SUM, AVG or MAX)"
        ))),
    }
}

/// Whether this build has the MPI backend (`dist.is_mpi_available()`).
#[pyfunction]
pub fn _dist_mpi_available() -> bool {
    cfg!(feature = "mpi")
}

/// Join the job's process group as the default group.
#[pyfunction]
pub fn _dist_init(py: Python<'_>, backend: &str, timeout_s: f64) -> PyResult<()> {
    let backend: Backend = backend.parse().py()?;
    // Negative or NaN here; zero is refused by init_process_group_with.
    let timeout = Duration::try_from_secs_f64(timeout_s).map_err(|_| {
        PyValueError::new_err(format!("timeout must be positive, got {timeout_s} s"))
    })?;
    let mut slot = GROUP.lock().expect("group lock");
    if slot.is_some() {
        return Err(PyRuntimeError::new_err(
            "trying to initialize the default process group twice!",
        ));
    }
    *slot = Some(
        py.detach(|| init_process_group_with(backend, timeout))
            .py()?,
    );
    Ok(())
}

/// Drop the default group (MPI is finalised when nothing else holds it).
#[pyfunction]
pub fn _dist_destroy(py: Python<'_>) {
    let group = GROUP.lock().expect("group lock").take();
    py.detach(|| drop(group));
}

/// Whether the default group exists.
#[pyfunction]
pub fn _dist_is_initialized() -> bool {
    GROUP.lock().expect("group lock").is_some()
}

/// (rank, world size, backend name) of the default group.
#[pyfunction]
pub fn _dist_info() -> PyResult<(usize, usize, &'static str)> {
    let g = group()?;
    Ok((g.rank(), g.world_size(), g.backend().name()))
}

/// `dist.all_reduce(tensor, op)`, in place.
#[pyfunction]
pub fn _dist_all_reduce(py: Python<'_>, tensor: PyRef<'_, PyTensor>, op: &str) -> PyResult<()> {
    let (g, t, op) = (group()?, tensor.t.clone(), reduce_op(op)?);
    py.detach(|| g.all_reduce(&t, op)).py()
}

/// `dist.broadcast(tensor, src)`, in place.
#[pyfunction]
pub fn _dist_broadcast(py: Python<'_>, tensor: PyRef<'_, PyTensor>, src: usize) -> PyResult<()> {
    let (g, t) = (group()?, tensor.t.clone());
    py.detach(|| g.broadcast(&t, src)).py()
}

/// Every rank's `tensor`, in rank order.
#[pyfunction]
pub fn _dist_all_gather(py: Python<'_>, tensor: PyRef<'_, PyTensor>) -> PyResult<Vec<PyTensor>> {
    let (g, t) = (group()?, tensor.t.clone());
    let parts = py.detach(|| g.all_gather(&t)).py()?;
    Ok(parts.into_iter().map(PyTensor::from).collect())
}

/// This rank's part of the reduction of `input` (split along dim 0).
#[pyfunction]
pub fn _dist_reduce_scatter(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    op: &str,
) -> PyResult<PyTensor> {
    let (g, t, op) = (group()?, input.t.clone(), reduce_op(op)?);
    Ok(py.detach(|| g.reduce_scatter(&t, op)).py()?.into())
}

/// `dist.barrier()`.
#[pyfunction]
pub fn _dist_barrier(py: Python<'_>) -> PyResult<()> {
    let g = group()?;
    py.detach(|| g.barrier()).py()
}

/// Rank 0's values of `tensors` on every rank, in place (DDP's start and its buffers).
#[pyfunction]
pub fn _dist_broadcast_from_rank_0(
    py: Python<'_>,
    tensors: Vec<(String, PyRef<'_, PyTensor>)>,
) -> PyResult<()> {
    let g = group()?;
    let named: Vec<_> = tensors.into_iter().map(|(n, t)| (n, t.t.clone())).collect();
    py.detach(|| broadcast_from_rank_0(&g, &named)).py()
}

/// The gradient averaging of `nn.parallel.DistributedDataParallel` over the default group.
#[pyclass(name = "_GradientReducer")]
pub struct PyGradientReducer(GradientReducer);

#[pymethods]
impl PyGradientReducer {
    /// Hook `params` ((name, tensor) in registration order), in buckets of `bucket_cap_mb`.
    #[new]
    fn new(
        py: Python<'_>,
        params: Vec<(String, PyRef<'_, PyTensor>)>,
        bucket_cap_mb: f64,
    ) -> PyResult<Self> {
        let g = group()?;
        let named: Vec<_> = params.into_iter().map(|(n, t)| (n, t.t.clone())).collect();
        let reducer = py
            .detach(|| GradientReducer::new(named, &g, bucket_cap_mb))
            .py()?;
        Ok(PyGradientReducer(reducer))
    }
    /// Raise if the last backward left a reduction unfinished (unused parameters).
    fn check_finished(&self) -> PyResult<()> {
        self.0.check_finished().py()
    }
    /// Average in backward (`True`) or accumulate locally (`False`, inside `no_sync`).
    fn set_sync(&self, sync: bool) {
        self.0.set_sync(sync);
    }
    /// The parameter names of each bucket, first reduced first.
    fn buckets(&self) -> Vec<Vec<String>> {
        self.0.buckets()
    }
    /// Seconds spent in gradient communication since the last call.
    fn take_communication_time(&self) -> f64 {
        self.0.take_communication_time().as_secs_f64()
    }
}

/// The index arithmetic of `DistributedSampler`.
#[pyclass(name = "_DistributedSampler")]
pub struct PyDistributedSampler(DistributedSampler);

#[pymethods]
impl PyDistributedSampler {
    #[new]
    fn new(
        num_replicas: usize,
        rank: usize,
        shuffle: bool,
        seed: u64,
        drop_last: bool,
    ) -> PyResult<Self> {
        Ok(PyDistributedSampler(
            DistributedSampler::new(num_replicas, rank, shuffle, seed, drop_last).py()?,
        ))
    }
    fn set_epoch(&self, epoch: u64) {
        self.0.set_epoch(epoch);
    }
    fn indices(&self, len: usize) -> PyResult<Vec<usize>> {
        self.0.indices(len).py()
    }
    fn num_samples(&self, len: usize) -> usize {
        self.0.num_samples(len)
    }
}
