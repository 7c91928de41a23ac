//! The randomized differential suite (PyTorch's OpInfo sample inputs): every case of
//! `tests/fixtures/random_ops.safetensors`, drawn by `scripts/fixtures/gen_random_cases.py` for every
//! op of the op table (ranks 0-4, empty and 0-d tensors, a view applied to each input first,
//! every dtype, mixed dtypes, values at singular points, and inputs PyTorch rejects), replayed
//! here against PyTorch's results:
//!
//! - a case PyTorch accepts must give PyTorch's outputs (dtype, shape, values) and, where
//!   PyTorch differentiated it, PyTorch's gradients with respect to each input's base;
//! - a case PyTorch rejects must give an `Err`;
//! - nothing may panic: each case runs under `catch_unwind`, and a panic is a failure that
//!   names the case and the panic message.
//!
//! Deliberate differences are listed in [`DELIBERATE`] with their reason and checked to
//! still hold; everything else must agree. The test prints how many cases agree, how many
//! are rejected like PyTorch rejects them, and how many each deliberate difference covers.

mod common;
#[path = "op_table/compare.rs"]
mod compare;
#[path = "op_table/fixture.rs"]
mod fixture;
#[path = "op_table/ops.rs"]
mod ops;
#[path = "op_table/run.rs"]
mod run;

use fixture::Case;
use ops::OpInfo;
use run::{finish, grad_leaves, grads_against_torch, label, run_backward};
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;
use tinytorch::{Device, Tensor};

/// Which side refuses the inputs in a deliberate difference.
#[derive(Clone, Copy, PartialEq)]
enum Refuses {
    /// PyTorch raises; TinyTorch computes a result.
    PyTorch,
    /// PyTorch computes a result; TinyTorch returns an error.
    TinyTorch,
}

/// A difference from PyTorch kept on purpose: for `op`, the side that refuses, a piece of
/// its error message, and why. Every entry must still match a case (the test checks), so
/// the list stays true.
struct Deliberate {
    op: &'static str,
    refuses: Refuses,
    message: &'static str,
    why: &'static str,
}

const fn deliberate(
    op: &'static str,
    refuses: Refuses,
    message: &'static str,
    why: &'static str,
) -> Deliberate {
    Deliberate {
        op,
        refuses,
        message,
        why,
    }
}

const EMPTY_CHECKS: &str = "PyTorch skips this check when a tensor is empty; TinyTorch makes \
                            it always, so code that runs on empty tensors runs on any";
const MORE_PADS: &str = "reflect/replicate padding works on any number of dims and on every \
                         dtype (an index_select), where PyTorch's kernels take 1-3 dims of \
                         numeric tensors";

const DELIBERATE: &[Deliberate] = &[
    deliberate(
        "pad_reflect",
        Refuses::PyTorch,
        "is not supported for",
        MORE_PADS,
    ),
    deliberate(
        "pad_replicate",
        Refuses::PyTorch,
        "is not supported for",
        MORE_PADS,
    ),
    deliberate(
        "pad_replicate",
        Refuses::PyTorch,
        "not implemented for 'Bool'",
        MORE_PADS,
    ),
    deliberate("bmm", Refuses::TinyTorch, "same dtype", EMPTY_CHECKS),
    deliberate(
        "gather",
        Refuses::TinyTorch,
        "index must be an int64",
        EMPTY_CHECKS,
    ),
    deliberate(
        "scatter",
        Refuses::TinyTorch,
        "index must be an int64",
        EMPTY_CHECKS,
    ),
    deliberate(
        "scatter_add",
        Refuses::TinyTorch,
        "index must be an int64",
        EMPTY_CHECKS,
    ),
    deliberate(
        "scatter_value",
        Refuses::TinyTorch,
        "index must be an int64",
        EMPTY_CHECKS,
    ),
    deliberate("roll", Refuses::TinyTorch, "out of range", EMPTY_CHECKS),
    deliberate("conv2d", Refuses::TinyTorch, "floating-point", EMPTY_CHECKS),
    deliberate(
        "batch_norm",
        Refuses::TinyTorch,
        "floating-point",
        EMPTY_CHECKS,
    ),
    deliberate(
        "batch_norm_eval",
        Refuses::TinyTorch,
        "must have shape",
        EMPTY_CHECKS,
    ),
    deliberate(
        "log_softmax",
        Refuses::TinyTorch,
        "floating-point",
        EMPTY_CHECKS,
    ),
    deliberate(
        "sdpa_float_mask",
        Refuses::TinyTorch,
        "float dtype",
        EMPTY_CHECKS,
    ),
    deliberate(
        "avg_pool1d",
        Refuses::TinyTorch,
        "floating-point",
        "average pooling takes float inputs, as avg_pool2d does; PyTorch's CPU kernel also \
         averages integers (rounding toward zero)",
    ),
    deliberate(
        "einsum",
        Refuses::TinyTorch,
        "one dtype",
        "einsum asks for one dtype up front; PyTorch promotes only where its plan happens to \
         use `mul` (no contracted index) and refuses where it uses `bmm`",
    ),
    deliberate(
        "interpolate",
        Refuses::TinyTorch,
        "floating-point",
        "interpolate takes float inputs; PyTorch's (bi)linear modes also resample u8 images",
    ),
];

/// The entry of [`DELIBERATE`] that explains `refuses` refusing `case` with `message`.
fn deliberate_for(case: &Case, refuses: Refuses, message: &str) -> Option<usize> {
    DELIBERATE
        .iter()
        .position(|d| d.op == case.op && d.refuses == refuses && message.contains(d.message))
}

/// The message of the last panic, recorded by the hook installed in the test.
static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// Run `f`, turning a panic into `Err("panicked: <message at location>")`.
fn guarded<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => {
            let msg = LAST_PANIC.lock().unwrap().take().unwrap_or_default();
            Err(format!("PANICKED: {msg}"))
        }
    }
}

/// The case's inputs on `device`: each stored base (a gradient leaf when PyTorch
/// differentiated it), then its view recipe. Returns (bases, views).
fn inputs(case: &Case, device: Device) -> Result<(Vec<Tensor>, Vec<Tensor>), String> {
    let bases = case
        .input_tensors()
        .iter()
        .map(|t| t.to_device(device))
        .collect::<tinytorch::Result<Vec<_>>>()
        .map_err(|e| format!("to {device}: {e}"))?;
    let bases = if case.expect_error.is_some() {
        bases
    } else {
        grad_leaves(case, bases)?
    };
    let mut views = Vec::with_capacity(bases.len());
    for (i, base) in bases.iter().enumerate() {
        let mut x = base.clone();
        for step in case.views.get(i).map(Vec::as_slice).unwrap_or_default() {
            x = step
                .apply(&x)
                .map_err(|e| format!("view {step:?} of input {i}: {e}"))?;
        }
        views.push(x);
    }
    Ok((bases, views))
}

/// Replay one case on `device`; `Ok(Some(i))` when it matched the deliberate difference `i`.
fn replay(case: &Case, info: &OpInfo, device: Device) -> Result<Option<usize>, String> {
    let (bases, xs) = inputs(case, device)?;
    // Reading every output back synchronises a device, so an error a kernel raises (an
    // index out of range on CUDA) surfaces here.
    let result = (info.run)(&xs, &case.kwargs).and_then(|outs| {
        for o in &outs {
            o.to_vec_f64()?;
        }
        Ok(outs)
    });
    if let Some(torch_error) = &case.expect_error {
        return match result {
            Err(_) => Ok(None),
            Ok(outs) => deliberate_for(case, Refuses::PyTorch, torch_error)
                .map(Some)
                .ok_or_else(|| {
                    format!(
                        "PyTorch raises ({torch_error}) but TinyTorch returned {:?}",
                        outs.iter()
                            .map(|o| format!("{} {:?}", o.dtype(), o.shape()))
                            .collect::<Vec<_>>()
                    )
                }),
        };
    }
    let outs = match result {
        Ok(outs) => outs,
        Err(e) => {
            let message = e.to_string();
            return deliberate_for(case, Refuses::TinyTorch, &message)
                .map(Some)
                .ok_or(format!("returned an error: {message}"));
        }
    };
    if outs.len() != case.outputs.len() {
        return Err(format!(
            "{} outputs but PyTorch gives {}",
            outs.len(),
            case.outputs.len()
        ));
    }
    for (i, (got, want)) in outs.iter().zip(&case.outputs).enumerate() {
        if got.device() != device {
            return Err(format!("output {i} is on {}", got.device()));
        }
        compare::against_torch(got, want, 1.0).map_err(|m| format!("output {i}: {m}"))?;
    }
    if info.grad && case.has_grad() {
        grads_against_torch(case, &run_backward(case, &bases, &outs)?)?;
    }
    Ok(None)
}

/// Replay every case on `device` and fail with the disagreements.
fn replay_all(device: Device) {
    let cases = fixture::load_cases("random_ops.safetensors");
    let table = ops::table();
    let by_name: BTreeMap<&str, &OpInfo> = table.iter().map(|o| (o.name, o)).collect();
    std::panic::set_hook(Box::new(|info| {
        *LAST_PANIC.lock().unwrap() = Some(info.to_string());
    }));
    let (mut agree, mut rejected) = (0, 0);
    let mut matched = vec![0usize; DELIBERATE.len()];
    let mut failures = Vec::new();
    let mut per_op: BTreeMap<&str, usize> = BTreeMap::new();
    for case in &cases {
        let Some(info) = by_name.get(case.op.as_str()) else {
            failures.push(format!(
                "case {}: op {} is not in the op table",
                case.name, case.op
            ));
            continue;
        };
        *per_op.entry(info.name).or_default() += 1;
        match guarded(|| replay(case, info, device)) {
            Ok(Some(i)) => matched[i] += 1,
            Ok(None) if case.expect_error.is_some() => rejected += 1,
            Ok(None) => agree += 1,
            Err(m) => failures.push(format!("{}: {m}", label(case, info))),
        }
    }
    let _ = std::panic::take_hook();
    println!(
        "{} random cases over {} ops on {device}: {agree} agree with PyTorch, {rejected} \
         rejected like PyTorch, {} differ on purpose",
        cases.len(),
        per_op.len(),
        matched.iter().sum::<usize>()
    );
    for (d, n) in DELIBERATE.iter().zip(&matched) {
        let side = match d.refuses {
            Refuses::PyTorch => "PyTorch refuses",
            Refuses::TinyTorch => "TinyTorch refuses",
        };
        println!("  {n:3} x {} ({side}: \"{}\"): {}", d.op, d.message, d.why);
        if *n == 0 {
            failures.push(format!(
                "deliberate difference {} / \"{}\" matches no case any more: remove it",
                d.op, d.message
            ));
        }
    }
    for op in table.iter().map(|o| o.name) {
        if !per_op.contains_key(op) {
            failures.push(format!("op {op} of the table has no random case"));
        }
    }
    finish(
        &format!("random cases vs PyTorch on {device}"),
        cases.len(),
        failures,
    );
}

#[test]
fn random_cases_match_pytorch() {
    replay_all(Device::Cpu);
}

/// The same cases on `cuda:0`: every op on transposed, permuted, sliced, selected and
/// expanded inputs, empty and 0-d tensors, all dtypes. Skipped where no GPU is present.
#[cfg(feature = "cuda")]
#[test]
fn random_cases_match_pytorch_on_cuda() {
    if !tinytorch::backend::cuda::is_available() {
        println!("skipped: no CUDA device");
        return;
    }
    replay_all(Device::Cuda(0));
}
