//! Where a model's time and memory go: [`summary`] runs one traced forward and backward pass
//! (and optionally an optimizer step) and reports one row per layer — its state-dict name,
//! the ops it ran, output shape, parameters, multiply-adds and FLOPs, forward and backward
//! time, activation bytes and its place on the roofline — with the peak memory of each phase.
//!
//! Layers are found from the ops themselves (`autograd::trace`): an op that reads a
//! parameter (or a view of one, such as Linear's transposed weight) belongs to the layer
//! that owns the parameter, and consecutive ops of one layer make one row. An op without
//! parameters (an activation, a pooling, a residual add) is a row of its own, named by the
//! op. This works for any `Module`, not only `Sequential`: ResNet's blocks, attention and
//! shortcuts show as they run.
//!
//! FLOPs follow `torch.utils.flop_counter` (see [`flops`]); times are CPU wall-clock (on CUDA
//! the per-op times are launch times; the phase totals synchronise).

pub mod flops;
mod report;
pub mod roofline;

pub use roofline::{Bound, Machine};

use crate::autograd::trace::{self, OpRecord};
use crate::base::Device;
use crate::error::{Error, Result};
use crate::nn::Module;
use crate::optim::Optimizer;
use crate::tensor::memory::{max_memory_allocated, memory_allocated, reset_peak_memory_stats};
use crate::tensor::{Tensor, TensorId};
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

/// One layer (or one parameter-free op) of a profile.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerRow {
    /// The layer's state-dict prefix (`"0"`, `"layer1.0.conv1"`; `""` for the model's own
    /// parameters), or `None` for an op without parameters.
    pub name: Option<String>,
    /// The ops it ran, in order, joined by `+` (`"conv2d"`, `"addmm"`); views are
    /// left out unless they are all it ran.
    pub kind: String,
    /// Shape of its output (its last op's).
    pub output_shape: Vec<usize>,
    /// Its parameters' elements (counted at a layer's first row only).
    pub parameters: usize,
    /// Forward multiply-adds.
    pub macs: u64,
    /// Forward FLOPs (two per multiply-add; [`flops`]).
    pub flops: u64,
    /// Bytes its forward ops read and wrote (inputs and outputs, once each).
    pub bytes: u64,
    /// Forward time.
    pub forward: Duration,
    /// Backward time (its ops' gradient rules).
    pub backward: Duration,
    /// Bytes of its output.
    pub activation_bytes: usize,
    /// Compute- or memory-bound on this device's roofline.
    pub bound: Bound,
}

/// Time and memory of one phase (forward, backward or optimizer step).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phase {
    /// Wall-clock time.
    pub time: Duration,
    /// The most tensor bytes live on the device at once during the phase.
    pub peak_bytes: usize,
    /// Tensor bytes live when it ended.
    pub end_bytes: usize,
}

/// The profile of one training step of a model.
#[derive(Debug, Clone)]
pub struct Profile {
    /// One row per layer or parameter-free op, in the order they ran.
    pub rows: Vec<LayerRow>,
    /// Every trainable element of the model (`Module::num_parameters`).
    pub total_parameters: usize,
    /// The device the step ran on.
    pub device: Device,
    /// Tensor bytes live on the device before the step.
    pub start_bytes: usize,
    /// The forward pass.
    pub forward: Phase,
    /// The backward pass (of the sum of the outputs).
    pub backward: Phase,
    /// The optimizer step, when one was given.
    pub step: Option<Phase>,
    /// The device's measured peaks.
    pub machine: Machine,
}

impl Profile {
    /// Forward FLOPs of the whole model.
    pub fn total_flops(&self) -> u64 {
        self.rows.iter().map(|r| r.flops).sum()
    }

    /// Forward multiply-adds of the whole model.
    pub fn total_macs(&self) -> u64 {
        self.rows.iter().map(|r| r.macs).sum()
    }
}

/// Profile one forward and backward pass of `model` on `input` (the backward pass starts
/// from the sum of the output). Gradients are left as they were; one untimed pass first
/// warms the caches.
pub fn summary(model: &dyn Module, input: &Tensor) -> Result<Profile> {
    run(model, input, None)
}

/// [`summary`] with an optimizer step after the backward pass (it updates the parameters).
pub fn summary_with_step(
    model: &dyn Module,
    input: &Tensor,
    optimizer: &mut dyn Optimizer,
) -> Result<Profile> {
    run(model, input, Some(optimizer))
}

/// Stops the trace however the profiled step ends.
struct TraceGuard;
impl Drop for TraceGuard {
    fn drop(&mut self) {
        if trace::is_active() {
            trace::stop();
        }
    }
}

fn run(
    model: &dyn Module,
    input: &Tensor,
    optimizer: Option<&mut dyn Optimizer>,
) -> Result<Profile> {
    if trace::is_active() {
        return Err(Error::invalid("profile", "another profile is running"));
    }
    let params = model.named_parameters();
    let grads_before: Vec<Option<Tensor>> = params.iter().map(|(_, p)| p.grad()).collect();
    let loss_of = |y: &Tensor| -> Result<Tensor> {
        if !y.dtype().is_float() {
            return Err(Error::dtype(
                "profile",
                format!(
                    "the model's output is {}; a float output is needed for its backward pass",
                    y.dtype()
                ),
            ));
        }
        y.sum_all()
    };
    // Warm-up: first-call costs (buffer caches, convolution plans) stay out of the figures.
    loss_of(&model.forward(input)?)?.backward()?;
    restore_grads(&params, &grads_before);

    let device = input.device();
    let machine = Machine::of(device)?;
    let start_bytes = memory_allocated(device);
    let _guard = TraceGuard;
    trace::start();

    let (y, forward) = phase(device, || model.forward(input))?;
    let loss = loss_of(&y)?;
    drop(y);
    let (_, backward) = phase(device, || loss.backward())?;
    let loss_id = loss.id();
    drop(loss);
    let step = match optimizer {
        Some(opt) => Some(phase(device, || opt.step())?.1),
        None => None,
    };
    let records = trace::stop();
    restore_grads(&params, &grads_before);
    Ok(Profile {
        rows: layer_rows(&params, &records, loss_id, &machine),
        total_parameters: model.num_parameters(),
        device,
        start_bytes,
        forward,
        backward,
        step,
        machine,
    })
}

/// Run one phase from a fresh peak and a fresh trace clock.
fn phase<T>(device: Device, f: impl FnOnce() -> Result<T>) -> Result<(T, Phase)> {
    reset_peak_memory_stats(device);
    trace::mark();
    let start = Instant::now();
    let out = f()?;
    device.synchronize()?;
    let time = start.elapsed();
    Ok((
        out,
        Phase {
            time,
            peak_bytes: max_memory_allocated(device),
            end_bytes: memory_allocated(device),
        },
    ))
}

fn restore_grads(params: &[(String, Tensor)], grads: &[Option<Tensor>]) {
    for ((_, p), g) in params.iter().zip(grads) {
        p.set_grad(g.clone());
    }
}

/// The layer that owns a parameter: its name without the last part (`"0.weight"` -> `"0"`).
fn layer_of(param: &str) -> &str {
    param.rsplit_once('.').map_or("", |(layer, _)| layer)
}

/// Group the traced ops into rows (see the module docs). `loss` is the op the profiler
/// added for the backward pass, left out.
fn layer_rows(
    params: &[(String, Tensor)],
    records: &[OpRecord],
    loss: TensorId,
    machine: &Machine,
) -> Vec<LayerRow> {
    let mut owner: HashMap<TensorId, String> = params
        .iter()
        .map(|(n, p)| (p.id(), layer_of(n).to_string()))
        .collect();
    let mut size_of_layer: HashMap<&str, usize> = HashMap::new();
    for (n, p) in params {
        *size_of_layer.entry(layer_of(n)).or_default() += p.numel();
    }
    let mut seen: HashSet<String> = HashSet::new();
    let mut rows: Vec<LayerRow> = Vec::new();
    // Per row, the first view it ran: its kind when it ran nothing else (a flatten).
    let mut first_view: Vec<Option<&'static str>> = Vec::new();
    for rec in records.iter().filter(|r| r.output.id != loss) {
        let layer = rec.inputs.iter().find_map(|i| owner.get(&i.id)).cloned();
        if let (Some(l), [_]) = (&layer, rec.inputs.as_slice()) {
            // A view or cast of a parameter (Linear's transposed weight) stays the layer's.
            owner.insert(rec.output.id, l.clone());
        }
        let same_layer = layer.is_some() && rows.last().is_some_and(|r| r.name == layer);
        if !same_layer {
            let parameters = match &layer {
                Some(l) if seen.insert(l.clone()) => {
                    size_of_layer.get(l.as_str()).copied().unwrap_or(0)
                }
                _ => 0,
            };
            rows.push(LayerRow {
                name: layer,
                kind: String::new(),
                output_shape: Vec::new(),
                parameters,
                macs: 0,
                flops: 0,
                bytes: 0,
                forward: Duration::ZERO,
                backward: Duration::ZERO,
                activation_bytes: 0,
                bound: Bound::Memory,
            });
            first_view.push(None);
        }
        let row = rows.last_mut().expect("a row was pushed");
        if flops::is_view(rec.name) {
            first_view
                .last_mut()
                .expect("one per row")
                .get_or_insert(rec.name);
        } else if !row.kind.split('+').any(|k| k == rec.name) {
            if !row.kind.is_empty() {
                row.kind.push('+');
            }
            row.kind.push_str(rec.name);
        }
        row.output_shape = rec.output.shape.clone();
        row.activation_bytes = rec.output.bytes();
        row.macs += flops::forward_macs(rec);
        row.flops += flops::forward_flops(rec);
        row.bytes += flops::forward_bytes(rec);
        row.forward += rec.forward;
        row.backward += rec.backward;
    }
    for (row, view) in rows.iter_mut().zip(first_view) {
        row.bound = machine.bound(row.flops, row.bytes);
        if row.kind.is_empty() {
            row.kind = view.unwrap_or("view").to_string();
        }
    }
    rows
}
