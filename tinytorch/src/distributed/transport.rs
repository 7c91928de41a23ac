//! The door every backend of a process group implements: collectives on flat, contiguous
//! tensors of the dtypes it carries, started asynchronously. The checks (agreement between
//! ranks, dtype conversions, in-place writes) live once, in [`super::ProcessGroup`].

use super::{Backend, ReduceOp};
use crate::error::Result;
use crate::tensor::{DType, Device, Tensor};

/// A collective in flight: poll it, or wait (up to the group's timeout) for its result.
pub(crate) trait Pending: Send {
    /// True once the collective has finished on this rank (drives its progress too).
    fn test(&mut self) -> Result<bool>;
    /// Block until it finishes and return its result (an empty tensor for a barrier).
    fn wait(self: Box<Self>) -> Result<Tensor>;
}

/// The collectives of one backend. Every input is 1-d, contiguous, on [`Transport::device`]
/// and of a dtype for which [`Transport::carries`] is true; every rank calls the same
/// collectives in the same order with the same lengths (the group checks that first).
pub(crate) trait Transport: Send + Sync {
    /// This process's rank, `0..world_size`.
    fn rank(&self) -> usize;
    /// Number of processes in the group.
    fn world_size(&self) -> usize;
    /// Which backend this is.
    fn backend(&self) -> Backend;
    /// Where the tensors a collective takes live.
    fn device(&self) -> Device;
    /// True when `dtype` travels as is; the group converts the others.
    fn carries(&self, dtype: DType) -> bool;
    /// Reduce `data` elementwise over the ranks with `op` (`Sum` or `Max`); every rank gets
    /// the result.
    fn all_reduce(&self, data: Tensor, op: ReduceOp) -> Result<Box<dyn Pending>>;
    /// Rank `root`'s `data` on every rank.
    fn broadcast(&self, data: Tensor, root: usize) -> Result<Box<dyn Pending>>;
    /// The ranks' `data` one after another (rank order): `world_size` times as long.
    fn all_gather(&self, data: Tensor) -> Result<Box<dyn Pending>>;
    /// Reduce over the ranks, then rank `r` keeps the `r`-th of `world_size` equal parts.
    fn reduce_scatter(&self, data: Tensor, op: ReduceOp) -> Result<Box<dyn Pending>>;
    /// Returns once every rank has entered it.
    fn barrier(&self) -> Result<Box<dyn Pending>>;
}

/// Poll `test` until it reports the collective done (`Ok(None)`) or `timeout` has passed
/// (`Ok(Some(waited))`): every backend's wait, so that a peer that never comes is an error,
/// not a hang. Spins (yielding) for the first 2 ms, the short waits of a training step, then
/// sleeps 100 us between polls so as not to burn a core.
#[cfg(feature = "mpi")]
pub(crate) fn poll_until(
    timeout: std::time::Duration,
    mut test: impl FnMut() -> Result<bool>,
) -> Result<Option<std::time::Duration>> {
    use std::time::{Duration, Instant};
    let started = Instant::now();
    while !test()? {
        let waited = started.elapsed();
        if waited >= timeout {
            return Ok(Some(waited));
        }
        if waited < Duration::from_millis(2) {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(100));
        }
    }
    Ok(None)
}
