//! The steps every op-table check shares: run an op on a case's inputs, mark gradient
//! leaves, run backward with PyTorch's upstream gradients, compare gradients, and report.

// Shared by the op-table and random-case test binaries; each uses a part of it.
#![allow(dead_code)]

use super::compare;
use super::fixture::Case;
use super::ops::OpInfo;
use tinytorch::{DType, Tensor};

/// How a failure names its case: the case, the op and the dtype.
pub fn label(case: &Case, info: &OpInfo) -> String {
    format!(
        "case {} (op {}, dtype {})",
        case.name, info.name, case.dtype
    )
}

/// Print a check's tally and fail with up to 60 of its failures listed.
pub fn finish(check: &str, ran: usize, failures: Vec<String>) {
    println!("{check}: {ran} cases, {} failures", failures.len());
    if !failures.is_empty() {
        let shown: Vec<&str> = failures.iter().take(60).map(String::as_str).collect();
        panic!(
            "{check}: {} of {ran} cases failed:\n  {}",
            failures.len(),
            shown.join("\n  ")
        );
    }
}

/// Forward, then compare each output with `want` (PyTorch's or a reference run).
pub fn run_op(info: &OpInfo, case: &Case, inputs: &[Tensor]) -> Result<Vec<Tensor>, String> {
    let outs = (info.run)(inputs, &case.kwargs).map_err(|e| format!("returned an error: {e}"))?;
    if outs.len() != case.outputs.len() {
        return Err(format!(
            "{} outputs but PyTorch gives {}",
            outs.len(),
            case.outputs.len()
        ));
    }
    Ok(outs)
}

/// Mark the inputs PyTorch differentiated as requiring grad.
pub fn grad_leaves(case: &Case, inputs: Vec<Tensor>) -> Result<Vec<Tensor>, String> {
    inputs
        .into_iter()
        .zip(&case.grads)
        .map(|(x, g)| {
            if g.is_some() {
                x.requires_grad_(true)
            } else {
                Ok(x)
            }
        })
        .collect::<tinytorch::Result<_>>()
        .map_err(|e| format!("requires_grad_: {e}"))
}

/// Backward from `outs` with the case's upstream gradients; the gradient of each input that
/// PyTorch differentiated (zeros when none reached it).
pub fn run_backward(
    case: &Case,
    inputs: &[Tensor],
    outs: &[Tensor],
) -> Result<Vec<Option<Tensor>>, String> {
    let err = |e: tinytorch::Error| format!("backward: {e}");
    // The upstream gradients go where the outputs are (cuda:0 in the CUDA run).
    let with_grad: Vec<(usize, Tensor)> = case
        .gouts
        .iter()
        .enumerate()
        .filter_map(|(i, g)| g.as_ref().map(|g| (i, g.tensor())))
        .map(|(i, g)| g.to_device(outs[i].device()).map(|g| (i, g)))
        .collect::<tinytorch::Result<_>>()
        .map_err(err)?;
    if let [(0, g)] = with_grad.as_slice() {
        outs[0].backward_with(Some(g), false).map_err(err)?;
    } else {
        let mut loss: Option<Tensor> = None;
        for (i, g) in &with_grad {
            let term = outs[*i].mul(g).and_then(|t| t.sum_all()).map_err(err)?;
            loss = Some(match loss {
                Some(l) => l.add(&term).map_err(err)?,
                None => term,
            });
        }
        loss.ok_or("no upstream gradient stored")?
            .backward()
            .map_err(err)?;
    }
    inputs
        .iter()
        .zip(&case.grads)
        .map(|(x, want)| {
            let Some(_) = want else { return Ok(None) };
            Ok(Some(match x.grad() {
                Some(g) => g,
                None => x.zeros_like().map_err(err)?,
            }))
        })
        .collect()
}

/// Compare the input gradients of a backward run with PyTorch's.
pub fn grads_against_torch(case: &Case, grads: &[Option<Tensor>]) -> Result<(), String> {
    for (i, (got, want)) in grads.iter().zip(&case.grads).enumerate() {
        if let (Some(got), Some(want)) = (got, want) {
            // Backward rules round more often than the forward in half precision.
            let scale = if matches!(case.dtype, DType::F16 | DType::BF16) {
                4.0
            } else {
                1.0
            };
            // With mixed dtypes a gradient is held to the narrowest float among the op's
            // operands and outputs: an f64 0-d operand of an f32 op gets an f32-accurate
            // gradient, and where PyTorch rounds an intermediate (pow's `b - 1`) in the
            // narrower dtype the two may differ by that rounding.
            let (atol, rtol) = case
                .outputs
                .iter()
                .chain(&case.inputs)
                .map(|o| o.dtype)
                .filter(|d| d.is_float())
                .chain([want.dtype])
                .map(compare::tolerance)
                .fold((0.0f64, 0.0f64), |(a, r), (a2, r2)| (a.max(a2), r.max(r2)));
            compare::against_torch_within(got, want, atol * scale, rtol * scale)
                .map_err(|m| format!("grad of input {i}: {m}"))?;
        }
    }
    Ok(())
}
