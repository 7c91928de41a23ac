//! The op table against PyTorch (PyTorch's OpInfo, tinygrad's test_ops): every fixture case of
//! `tests/fixtures/ops.safetensors` (from `scripts/fixtures/gen_fixtures.py`) whose op is in the table
//! runs through the same checks:
//!
//! - forward: dtype, shape and values against PyTorch's, with dtype-aware tolerances;
//! - backward: `backward_with` the stored upstream gradient, input gradients against PyTorch's;
//! - non-contiguous inputs (strided with an offset, and transposed): the same results, bit for
//!   bit unless the op accumulates in floating point;
//! - f64 cases: central-difference `gradcheck`.
//!
//! Every failure names the case (`<op>__<variant>__<dtype>`), the op, the dtype and the worst
//! mismatch; all failures of a check are listed together.

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
use run::{finish, grad_leaves, grads_against_torch, label, run_backward, run_op};
use std::collections::{BTreeMap, BTreeSet};
use tinytorch::autograd::gradcheck::gradcheck;
use tinytorch::{DType, Tensor};

/// Cases that disagree with PyTorch on purpose or by a known, reported bug: (case-name
/// prefix, reason). They are skipped by every check and listed in the test output.
const KNOWN_FAILURES: &[(&str, &str)] = &[];

/// The cases of `ops.safetensors` (`gen_fixtures.py`) and of `ops_nn.safetensors`
/// (`gen_nn_op_fixtures.py`: conv2d, layer and batch norm, cross-entropy).
fn load_cases() -> Vec<Case> {
    let mut cases = fixture::load_cases("ops.safetensors");
    cases.extend(fixture::load_cases("ops_nn.safetensors"));
    cases
}

fn known_failure(case: &Case) -> Option<&'static str> {
    KNOWN_FAILURES
        .iter()
        .find(|(prefix, _)| case.name.starts_with(prefix))
        .map(|(_, why)| *why)
}

/// The cases the table can run, each with its op record.
fn runnable<'a>(cases: &'a [Case], table: &'a [OpInfo]) -> Vec<(&'a Case, &'a OpInfo)> {
    let by_name: BTreeMap<&str, &OpInfo> = table.iter().map(|o| (o.name, o)).collect();
    let mut out = Vec::new();
    for case in cases {
        let Some(info) = by_name.get(case.op.as_str()) else {
            continue;
        };
        if !info.dtypes.contains(&case.dtype) {
            continue;
        }
        if let Some(why) = known_failure(case) {
            println!("skipping {} (known failure: {why})", case.name);
            continue;
        }
        out.push((case, *info));
    }
    out
}

#[test]
fn every_fixture_op_is_in_the_table() {
    let cases = load_cases();
    let table = ops::table();
    let mut failures = Vec::new();
    let mut names = BTreeSet::new();
    for info in &table {
        if !names.insert(info.name) {
            failures.push(format!("op {} is in the table twice", info.name));
        }
        for dt in info.dtypes {
            if !cases.iter().any(|c| c.op == info.name && c.dtype == *dt) {
                failures.push(format!(
                    "op {} claims dtype {dt} but no fixture case has it",
                    info.name
                ));
            }
        }
    }
    let mut pending: BTreeMap<&str, usize> = BTreeMap::new();
    let mut unsupported: BTreeMap<String, usize> = BTreeMap::new();
    for case in &cases {
        match table.iter().find(|o| o.name == case.op) {
            None => *pending.entry(case.op.as_str()).or_default() += 1,
            Some(info) => {
                if info.arity != 0 && info.arity != case.inputs.len() {
                    failures.push(format!(
                        "{}: {} inputs, table arity {}",
                        label(case, info),
                        case.inputs.len(),
                        info.arity
                    ));
                }
                if !info.dtypes.contains(&case.dtype) {
                    *unsupported
                        .entry(format!("{} {}", case.op, case.dtype))
                        .or_default() += 1;
                }
            }
        }
    }
    println!(
        "{} fixture cases, {} ops in the table",
        cases.len(),
        table.len()
    );
    println!("ops with fixtures but no table entry yet (family not merged): {pending:?}");
    println!("op/dtype pairs PyTorch accepts that the table does not run: {unsupported:?}");
    finish("table consistency", cases.len(), failures);
}

#[test]
fn forward_matches_pytorch() {
    let cases = load_cases();
    let table = ops::table();
    let todo = runnable(&cases, &table);
    let mut failures = Vec::new();
    for (case, info) in &todo {
        let result = run_op(info, case, &case.input_tensors()).and_then(|outs| {
            for (i, (got, want)) in outs.iter().zip(&case.outputs).enumerate() {
                compare::against_torch(got, want, 1.0).map_err(|m| format!("output {i}: {m}"))?;
            }
            Ok(())
        });
        if let Err(m) = result {
            failures.push(format!("{}: {m}", label(case, info)));
        }
    }
    finish("forward vs PyTorch", todo.len(), failures);
}

#[test]
fn backward_matches_pytorch() {
    let cases = load_cases();
    let table = ops::table();
    let todo: Vec<_> = runnable(&cases, &table)
        .into_iter()
        .filter(|(c, o)| o.grad && c.has_grad())
        .collect();
    let mut failures = Vec::new();
    for (case, info) in &todo {
        let result = grad_leaves(case, case.input_tensors()).and_then(|inputs| {
            let outs = run_op(info, case, &inputs)?;
            grads_against_torch(case, &run_backward(case, &inputs, &outs)?)
        });
        if let Err(m) = result {
            failures.push(format!("{}: {m}", label(case, info)));
        }
    }
    finish("backward vs PyTorch", todo.len(), failures);
}

/// The non-contiguous layouts tried for each input: (name, builder); `None` when the layout
/// does not apply (transposing needs two dims).
type Relayout = fn(&Tensor) -> Option<tinytorch::Result<Tensor>>;
const RELAYOUTS: &[(&str, Relayout)] = &[
    ("strided+offset", |t| Some(compare::strided_copy(t))),
    ("transposed", |t| {
        (t.ndim() >= 2).then(|| compare::transposed_copy(t))
    }),
];

#[test]
fn non_contiguous_inputs_give_identical_results() {
    let cases = load_cases();
    let table = ops::table();
    let todo = runnable(&cases, &table);
    let mut failures = Vec::new();
    let mut ran = 0;
    for (case, info) in &todo {
        let with_grad = info.grad && case.has_grad();
        let reference = grad_leaves(case, case.input_tensors()).and_then(|inputs| {
            let outs = run_op(info, case, &inputs)?;
            let grads = if with_grad {
                run_backward(case, &inputs, &outs)?
            } else {
                vec![]
            };
            Ok((outs, grads))
        });
        // A contiguous run that fails is reported by the forward/backward checks.
        let Ok((want_outs, want_grads)) = reference else {
            continue;
        };
        for (layout, relayout) in RELAYOUTS {
            // `view` must refuse layouts it cannot view, as PyTorch's does (tests/errors.rs).
            if info.name == "view" && *layout == "transposed" {
                continue;
            }
            let mut changed = false;
            let mut inputs = Vec::new();
            for x in case.input_tensors() {
                match relayout(&x) {
                    Some(Ok(y)) => {
                        changed = true;
                        inputs.push(y);
                    }
                    Some(Err(e)) => panic!("building a {layout} copy for {}: {e}", case.name),
                    None => inputs.push(x),
                }
            }
            if !changed {
                continue;
            }
            ran += 1;
            let result = grad_leaves(case, inputs).and_then(|inputs| {
                let outs = run_op(info, case, &inputs)?;
                for (i, (got, want)) in outs.iter().zip(&want_outs).enumerate() {
                    compare::against_self(got, want, info.order_sensitive)
                        .map_err(|m| format!("output {i}: {m}"))?;
                }
                if with_grad {
                    let grads = run_backward(case, &inputs, &outs)?;
                    for (i, (got, want)) in grads.iter().zip(&want_grads).enumerate() {
                        if let (Some(got), Some(want)) = (got, want) {
                            compare::against_self(got, want, info.order_sensitive)
                                .map_err(|m| format!("grad of input {i}: {m}"))?;
                        }
                    }
                }
                Ok(())
            });
            if let Err(m) = result {
                failures.push(format!("{} with {layout} inputs: {m}", label(case, info)));
            }
        }
    }
    finish("non-contiguous inputs", ran, failures);
}

#[test]
fn gradcheck_f64() {
    let cases = load_cases();
    let table = ops::table();
    let todo: Vec<_> = runnable(&cases, &table)
        .into_iter()
        .filter(|(c, o)| {
            o.grad
                && c.dtype == DType::F64
                && c.has_grad()
                // A check through a lower-precision output measures rounding, not the rule.
                && c.outputs.iter().zip(&c.gouts).all(|(o, g)| g.is_none() || o.dtype == DType::F64)
        })
        .collect();
    let mut failures = Vec::new();
    for (case, info) in &todo {
        let fixed = case.input_tensors();
        let diff: Vec<usize> = (0..fixed.len())
            .filter(|&i| case.grads[i].is_some())
            .collect();
        let gouts: Vec<Option<Tensor>> = case
            .gouts
            .iter()
            .map(|g| g.as_ref().map(|g| g.tensor()))
            .collect();
        let f = |xs: &[Tensor]| -> tinytorch::Result<Tensor> {
            let mut inputs = fixed.clone();
            for (j, &i) in diff.iter().enumerate() {
                inputs[i] = xs[j].clone();
            }
            let outs = (info.run)(&inputs, &case.kwargs)?;
            if outs.len() == 1 {
                return Ok(outs.into_iter().next().expect("one output"));
            }
            // Several outputs: check the scalar that PyTorch's gradients were taken of.
            let mut loss = Tensor::scalar(0.0f64);
            for (o, g) in outs.iter().zip(&gouts) {
                if let Some(g) = g {
                    loss = loss.add(&o.mul(g)?.sum_all()?)?;
                }
            }
            Ok(loss)
        };
        let xs: Vec<Tensor> = diff.iter().map(|&i| fixed[i].clone()).collect();
        if let Err(e) = gradcheck(f, &xs, 1e-6, 1e-7, 1e-5) {
            failures.push(format!("{}: {e}", label(case, info)));
        }
    }
    finish("f64 gradcheck", todo.len(), failures);
}

#[test]
fn inplace_ops_write_only_through_their_view() {
    let cases = load_cases();
    let table = ops::table();
    let todo: Vec<_> = runnable(&cases, &table)
        .into_iter()
        .filter(|(c, _)| c.op.ends_with('_'))
        .collect();
    let mut failures = Vec::new();
    for (case, info) in &todo {
        let mut inputs = case.input_tensors();
        let (view, buffer) = compare::strided_copy_in_buffer(&inputs[0]).expect("strided copy");
        inputs[0] = view;
        let result = run_op(info, case, &inputs).and_then(|_| {
            let err = |e: tinytorch::Error| e.to_string();
            // The same layout over zeros: non-zero exactly at the junk positions.
            let zeros = case.inputs[0].tensor().zeros_like().map_err(err)?;
            let junk = compare::strided_copy_in_buffer(&zeros)
                .map_err(err)?
                .1
                .to_vec_f64()
                .map_err(err)?;
            let after = buffer.to_vec_f64().map_err(err)?;
            match after
                .iter()
                .zip(&junk)
                .position(|(a, j)| *j != 0.0 && a != j)
            {
                Some(i) => Err(format!(
                    "wrote outside the view: buffer element {i} is {} (was {})",
                    after[i], junk[i]
                )),
                None => Ok(()),
            }
        });
        if let Err(m) = result {
            failures.push(format!("{}: {m}", label(case, info)));
        }
    }
    finish("in-place through a strided view", todo.len(), failures);
}

/// The whole table on `cuda:0`: every case's forward outputs and input gradients against
/// PyTorch's values, as on the CPU. Skipped (with a message) where no GPU is present.
#[cfg(feature = "cuda")]
#[test]
fn cuda_forward_and_backward_match_pytorch() {
    use tinytorch::Device;
    if !tinytorch::backend::cuda::is_available() {
        println!("skipped: no CUDA device (the table runs on cuda:0 where one exists)");
        return;
    }
    let cases = load_cases();
    let table = ops::table();
    let todo = runnable(&cases, &table);
    let mut failures = Vec::new();
    for (case, info) in &todo {
        let with_grad = info.grad && case.has_grad();
        let result = case
            .input_tensors()
            .iter()
            .map(|x| x.to_device(Device::Cuda(0)))
            .collect::<tinytorch::Result<Vec<_>>>()
            .map_err(|e| format!("to cuda: {e}"))
            .and_then(|inputs| grad_leaves(case, inputs))
            .and_then(|inputs| {
                let outs = run_op(info, case, &inputs)?;
                for (i, (got, want)) in outs.iter().zip(&case.outputs).enumerate() {
                    if got.device() != Device::Cuda(0) {
                        return Err(format!("output {i} is on {}", got.device()));
                    }
                    compare::against_torch(got, want, 1.0)
                        .map_err(|m| format!("output {i}: {m}"))?;
                }
                if with_grad {
                    grads_against_torch(case, &run_backward(case, &inputs, &outs)?)?;
                }
                Ok(())
            });
        if let Err(m) = result {
            failures.push(format!("{}: {m}", label(case, info)));
        }
    }
    finish("CUDA forward/backward vs PyTorch", todo.len(), failures);
}
