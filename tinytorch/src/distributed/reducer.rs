//! The gradient reducer of data-parallel training (PyTorch's C++ `Reducer`): averages the
//! gradients of a list of parameters over a process group during backward.
//!
//! Gradients are reduced in buckets of about 25 MB, filled with the parameters in reverse
//! order of registration (roughly the order backward produces their gradients). A
//! post-accumulate-grad hook on every parameter counts it ready; when all of a bucket's
//! parameters are, its gradients are flattened and its all-reduce is started, while backward
//! goes on with earlier layers. Buckets start strictly in order, so that every rank issues
//! the same collectives in the same order. When the last bucket has started, the hook waits
//! for all of them and writes the averages back into `.grad`.

use super::group::{dtype_code, fnv1a, ProcessGroup, ReduceWork};
use super::ReduceOp;
use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::tensor::{DType, HookHandle, Tensor};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

/// Parameters whose gradients are reduced together, and the reduction in flight.
struct Bucket {
    /// Indices into [`Reducer::params`].
    params: Vec<usize>,
    /// How many of them have their gradient this step.
    ready: usize,
    work: Option<ReduceWork>,
}

/// The per-step state of gradient averaging, shared with the parameters' hooks.
struct Reducer {
    group: ProcessGroup,
    /// The module's parameters that require grad, in registration order, with their names.
    params: Vec<(String, Tensor)>,
    /// Each parameter's bucket.
    bucket_of: Vec<usize>,
    /// Whether each parameter's gradient is ready this step.
    ready: Vec<bool>,
    buckets: Vec<Bucket>,
    /// The next bucket to start (they start in order).
    next_to_start: usize,
    /// False inside [`GradientReducer::no_sync`] (gradients accumulate locally).
    sync: bool,
    /// Time spent flattening, starting, waiting for and unflattening reductions.
    comm_time: Duration,
}

impl Reducer {
    /// Parameter `i`'s gradient is final for this backward pass.
    fn mark_ready(&mut self, i: usize) -> Result<()> {
        if !self.sync {
            return Ok(());
        }
        if self.ready[i] {
            return Err(Error::distributed(
                "DistributedDataParallel",
                format!(
                    "parameter '{}' was marked ready twice in one iteration: backward ran \
                     twice before the reduction finished, or the parameter is shared",
                    self.params[i].0
                ),
            ));
        }
        let started = Instant::now();
        self.ready[i] = true;
        let b = self.bucket_of[i];
        self.buckets[b].ready += 1;
        // Poll the reductions in flight: MPI progresses them only inside its calls.
        for bucket in &mut self.buckets[..self.next_to_start] {
            if let Some(w) = &mut bucket.work {
                w.is_completed()?;
            }
        }
        while let Some(bucket) = self.buckets.get(self.next_to_start) {
            if bucket.ready < bucket.params.len() {
                break;
            }
            self.start_bucket(self.next_to_start)?;
            self.next_to_start += 1;
        }
        if self.next_to_start == self.buckets.len() {
            self.finish()?;
        }
        self.comm_time += started.elapsed();
        Ok(())
    }

    /// Flatten bucket `b`'s gradients and start their all-reduce (average).
    fn start_bucket(&mut self, b: usize) -> Result<()> {
        let grads = self.buckets[b]
            .params
            .iter()
            .map(|&i| {
                let (name, p) = &self.params[i];
                let g = p.grad().ok_or_else(|| {
                    Error::distributed(
                        "DistributedDataParallel",
                        format!("parameter '{name}' was marked ready without a gradient"),
                    )
                })?;
                g.reshape(&[-1])
            })
            .collect::<Result<Vec<_>>>()?;
        let flat = Tensor::cat(&grads.iter().collect::<Vec<_>>(), 0)?;
        let work = self
            .group
            .all_reduce_start("DistributedDataParallel", &flat, ReduceOp::Avg)?;
        self.buckets[b].work = Some(work);
        Ok(())
    }

    /// Wait for every bucket and write the averaged gradients into `.grad`.
    fn finish(&mut self) -> Result<()> {
        let _guard = no_grad();
        for bucket in &mut self.buckets {
            let work = bucket.work.take().expect("every bucket was started");
            let flat = work.wait_averaged()?;
            let mut offset = 0;
            for &i in &bucket.params {
                let p = &self.params[i].1;
                let g = p.grad().expect("checked when the bucket started");
                let part = flat
                    .narrow(0, offset as isize, g.numel())?
                    .reshape(&g.shape())?;
                g.copy_(&part.to_dtype(g.dtype())?)?;
                offset += g.numel();
            }
            bucket.ready = 0;
        }
        self.ready.fill(false);
        self.next_to_start = 0;
        Ok(())
    }

    /// Error when the last backward left a reduction unfinished: some parameter got no
    /// gradient (PyTorch's "Expected to have finished reduction in the prior iteration").
    fn check_finished(&self) -> Result<()> {
        if !self.ready.iter().any(|r| *r) {
            return Ok(());
        }
        let missing: Vec<&str> = self
            .params
            .iter()
            .zip(&self.ready)
            .filter(|(_, r)| !**r)
            .map(|((name, _), _)| name.as_str())
            .collect();
        Err(Error::distributed(
            "DistributedDataParallel",
            format!(
                "expected to have finished reduction in the prior iteration before starting a \
                 new one: these parameters got no gradient in it (unused in the loss): {}",
                missing.join(", ")
            ),
        ))
    }
}

/// Averages the gradients of named parameters over a process group as backward produces
/// them; [`DistributedDataParallel`](super::DistributedDataParallel) is a module around one,
/// and the Python package's DDP too.
pub struct GradientReducer {
    state: Arc<Mutex<Reducer>>,
    hooks: Vec<HookHandle>,
}

/// While alive, backward accumulates gradients locally without reducing them
/// ([`GradientReducer::no_sync`]).
pub struct NoSyncGuard {
    reducer: Arc<Mutex<Reducer>>,
}

impl Drop for NoSyncGuard {
    fn drop(&mut self) {
        lock(&self.reducer).sync = true;
    }
}

fn lock(reducer: &Mutex<Reducer>) -> MutexGuard<'_, Reducer> {
    reducer.lock().unwrap_or_else(|e| e.into_inner())
}

/// [count, elements, hash of every shape and dtype] of a list of named tensors.
fn signature(tensors: &[(String, Tensor)]) -> [i64; 3] {
    let hash = fnv1a(tensors.iter().flat_map(|(_, t)| {
        let head = [dtype_code(t.dtype()) as u64, t.ndim() as u64];
        head.into_iter().chain(t.shape().iter().map(|d| *d as u64))
    }));
    let elements: usize = tensors.iter().map(|(_, t)| t.numel()).sum();
    [tensors.len() as i64, elements as i64, hash as i64]
}

impl GradientReducer {
    /// Reduce the gradients of `params` (those that require grad; the names are for
    /// messages) over `group` in buckets of `bucket_cap_mb` MiB. Checks that every rank
    /// passed the same shapes and dtypes in the same order, then hooks the parameters.
    pub fn new(
        params: Vec<(String, Tensor)>,
        group: &ProcessGroup,
        bucket_cap_mb: f64,
    ) -> Result<GradientReducer> {
        const OP: &str = "DistributedDataParallel";
        if bucket_cap_mb.is_nan() || bucket_cap_mb <= 0.0 {
            return Err(Error::invalid(
                OP,
                format!("bucket_cap_mb must be positive, got {bucket_cap_mb}"),
            ));
        }
        let params: Vec<(String, Tensor)> = params
            .into_iter()
            .filter(|(_, p)| p.requires_grad())
            .collect();
        if let Some((name, p)) = params.iter().find(|(_, p)| p.device() != group.device()) {
            return Err(Error::invalid(
                OP,
                format!(
                    "parameter '{name}' is on {} but the process group works on {}",
                    p.device(),
                    group.device()
                ),
            ));
        }
        // The same model everywhere, or the buckets would not line up across ranks.
        let mine = Tensor::from_slice(&signature(&params)).to_device(group.device())?;
        let all = group.all_gather(&mine)?;
        let sigs = all
            .iter()
            .map(|t| t.to_vec::<i64>())
            .collect::<Result<Vec<_>>>()?;
        if sigs.iter().any(|s| *s != sigs[0]) {
            let each: Vec<String> = sigs
                .iter()
                .enumerate()
                .map(|(r, s)| format!("rank {r}: {} parameters, {} elements", s[0], s[1]))
                .collect();
            return Err(Error::distributed(
                OP,
                format!("the ranks hold different models ({})", each.join("; ")),
            ));
        }
        let cap = (bucket_cap_mb * 1024.0 * 1024.0) as usize;
        let (buckets, bucket_of) = make_buckets(&params, cap);
        let state = Arc::new(Mutex::new(Reducer {
            group: group.clone(),
            ready: vec![false; params.len()],
            params: params.clone(),
            bucket_of,
            buckets,
            next_to_start: 0,
            sync: true,
            comm_time: Duration::ZERO,
        }));
        let mut hooks = Vec::new();
        if group.world_size() > 1 {
            for (i, (_, p)) in params.iter().enumerate() {
                let weak: Weak<Mutex<Reducer>> = Arc::downgrade(&state);
                hooks.push(p.register_post_accumulate_grad_hook(
                    move |_| match weak.upgrade() {
                        Some(r) => lock(&r).mark_ready(i),
                        None => Ok(()),
                    },
                )?);
            }
        }
        Ok(GradientReducer { state, hooks })
    }

    /// Error when the last backward left a reduction unfinished (a parameter got no
    /// gradient); call it before each forward.
    pub fn check_finished(&self) -> Result<()> {
        lock(&self.state).check_finished()
    }

    /// Turn the averaging off (`false`: backward accumulates locally) or back on.
    pub fn set_sync(&self, sync: bool) {
        lock(&self.state).sync = sync;
    }

    /// Backward passes inside the guard's life accumulate gradients locally; the first one
    /// after it averages the accumulated gradients (`with ddp.no_sync():`, for gradient
    /// accumulation).
    pub fn no_sync(&self) -> NoSyncGuard {
        self.set_sync(false);
        NoSyncGuard {
            reducer: self.state.clone(),
        }
    }

    /// The parameter names of each bucket, first reduced first.
    pub fn buckets(&self) -> Vec<Vec<String>> {
        let r = lock(&self.state);
        r.buckets
            .iter()
            .map(|b| b.params.iter().map(|&i| r.params[i].0.clone()).collect())
            .collect()
    }

    /// Time spent in gradient communication since the last call (flattening, starting,
    /// waiting, writing back), and reset it.
    pub fn take_communication_time(&self) -> Duration {
        std::mem::take(&mut lock(&self.state).comm_time)
    }
}

impl Drop for GradientReducer {
    fn drop(&mut self) {
        for h in self.hooks.drain(..) {
            h.remove();
        }
    }
}

/// Buckets of about `cap` bytes over the parameters in reverse order, one dtype each; and
/// each parameter's bucket.
fn make_buckets(params: &[(String, Tensor)], cap: usize) -> (Vec<Bucket>, Vec<usize>) {
    let mut buckets: Vec<Bucket> = Vec::new();
    let mut bucket_of = vec![0; params.len()];
    let (mut bytes, mut dtype): (usize, Option<DType>) = (0, None);
    for i in (0..params.len()).rev() {
        let p = &params[i].1;
        let size = p.numel() * p.dtype().size_in_bytes();
        if buckets.is_empty() || bytes >= cap || dtype != Some(p.dtype()) {
            buckets.push(Bucket {
                params: Vec::new(),
                ready: 0,
                work: None,
            });
            bytes = 0;
            dtype = Some(p.dtype());
        }
        buckets.last_mut().expect("pushed").params.push(i);
        bucket_of[i] = buckets.len() - 1;
        bytes += size;
    }
    (buckets, bucket_of)
}
