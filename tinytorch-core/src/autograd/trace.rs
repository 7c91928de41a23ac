//! Op tracing for the profiler (`profile::summary`): while a trace is on, every op that
//! records a node on its output is logged with its inputs, its output and the time it took,
//! and the backward engine adds the time of that node's rule. The profiler attributes the
//! records to layers by the parameters among their inputs.
//!
//! An op's forward time is the time since the previous record (or since [`mark`]): the op
//! records its node when its output is ready, so that span is the op itself plus whatever
//! untraced work (views the model makes without grad, host glue) ran just before it. CPU
//! kernels are synchronous; CUDA kernels are not, so on a GPU these times are launch times.
//!
//! Off (the normal state), each op pays one relaxed atomic load.

use crate::base::DType;
use crate::tensor::{Tensor, TensorId};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// One tensor an op read, as the trace saw it.
#[derive(Debug, Clone)]
pub struct TracedTensor {
    /// Identity (matches `Tensor::id`; parameters are found by it).
    pub id: TensorId,
    /// Shape.
    pub shape: Vec<usize>,
    /// Element type.
    pub dtype: DType,
}

impl TracedTensor {
    fn of(t: &Tensor) -> TracedTensor {
        TracedTensor {
            id: t.id(),
            shape: t.shape().to_vec(),
            dtype: t.dtype(),
        }
    }

    /// Elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// Bytes of its elements.
    pub fn bytes(&self) -> usize {
        self.numel() * self.dtype.size_in_bytes()
    }
}

/// One traced op: its name (the grad_fn name), inputs, output and times.
#[derive(Debug, Clone)]
pub struct OpRecord {
    /// The op's name, as its node's (`"conv2d"`, `"matmul"`, ...).
    pub name: &'static str,
    /// The tensors it read, in order.
    pub inputs: Vec<TracedTensor>,
    /// The tensor it made.
    pub output: TracedTensor,
    /// Forward time (see the module docs).
    pub forward: Duration,
    /// Time of its backward rule, summed over the backward passes traced.
    pub backward: Duration,
    /// The output itself, when the trace keeps outputs ([`start_keeping_outputs`]): what a
    /// dashboard shows as a layer's feature maps.
    pub value: Option<Tensor>,
}

struct Trace {
    ops: Vec<OpRecord>,
    keep_outputs: bool,
    /// Output id to its record, for the backward times.
    by_output: HashMap<TensorId, usize>,
    last: Instant,
}

static ACTIVE: AtomicBool = AtomicBool::new(false);
static TRACE: Mutex<Option<Trace>> = Mutex::new(None);

fn trace() -> MutexGuard<'static, Option<Trace>> {
    // A record is pushed whole, so a lock poisoned by a panic elsewhere is still consistent.
    TRACE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether a trace is on.
pub fn is_active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Start a trace (dropping any unfinished one). One trace at a time, process-wide.
pub fn start() {
    start_with(false);
}

/// [`start`], keeping each op's output tensor in its record ([`OpRecord::value`]), which
/// keeps every traced activation alive until the records are dropped.
pub fn start_keeping_outputs() {
    start_with(true);
}

fn start_with(keep_outputs: bool) {
    *trace() = Some(Trace {
        ops: Vec::new(),
        keep_outputs,
        by_output: HashMap::new(),
        last: Instant::now(),
    });
    ACTIVE.store(true, Ordering::Relaxed);
}

/// Restart the forward clock: work done since the last record is not an op's (the
/// profiler calls this before each phase).
pub fn mark() {
    if let Some(t) = trace().as_mut() {
        t.last = Instant::now();
    }
}

/// Stop the trace and return its records, in the order the ops ran.
pub fn stop() -> Vec<OpRecord> {
    ACTIVE.store(false, Ordering::Relaxed);
    trace().take().map(|t| t.ops).unwrap_or_default()
}

/// Log an op that recorded a node on `output`.
pub(crate) fn forward_op(name: &'static str, inputs: &[&Tensor], output: &Tensor) {
    let now = Instant::now();
    if let Some(t) = trace().as_mut() {
        t.by_output.insert(output.id(), t.ops.len());
        t.ops.push(OpRecord {
            name,
            inputs: inputs.iter().map(|i| TracedTensor::of(i)).collect(),
            output: TracedTensor::of(output),
            forward: now - t.last,
            backward: Duration::ZERO,
            value: t.keep_outputs.then(|| output.detach()),
        });
        t.last = Instant::now();
    }
}

/// Add `took` to the backward time of the op that made `output`.
pub(crate) fn backward_op(output: TensorId, took: Duration) {
    if let Some(t) = trace().as_mut() {
        if let Some(&i) = t.by_output.get(&output) {
            t.ops[i].backward += took;
        }
    }
}
