//! Numerical gradient checking by central differences, in f64 (PyTorch's `gradcheck`).

use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};

/// Compare the analytic gradients of `f` at `inputs` with central differences.
///
/// `f` maps the inputs to any tensor; the check uses the scalar `sum(f(x) * w)` with a fixed
/// pseudo-random weight `w`, so every output element contributes. Inputs must be f64. Returns
/// the largest absolute difference, or an error naming the input and element that differ by
/// more than `atol + rtol * |numeric|`.
pub fn gradcheck(
    f: impl Fn(&[Tensor]) -> Result<Tensor>,
    inputs: &[Tensor],
    eps: f64,
    atol: f64,
    rtol: f64,
) -> Result<f64> {
    for (i, x) in inputs.iter().enumerate() {
        if x.dtype() != DType::F64 {
            return Err(Error::dtype(
                "gradcheck",
                format!("input {i} has dtype {}; gradcheck needs f64", x.dtype()),
            ));
        }
    }
    let leaves: Vec<Tensor> = inputs
        .iter()
        .map(|x| x.contiguous_copy()?.requires_grad_(true))
        .collect::<Result<_>>()?;
    let out = f(&leaves)?;
    let weights: Vec<f64> = (0..out.numel())
        .map(|i| 0.5 + ((i * 7919) % 13) as f64 / 13.0)
        .collect();
    let w = Tensor::from_vec(weights, out.shape())?.to_dtype(out.dtype())?;
    let scalar =
        |o: &Tensor| -> Result<f64> { o.mul(&w)?.sum_all()?.to_dtype(DType::F64)?.item::<f64>() };
    out.mul(&w)?.sum_all()?.backward()?;

    let mut worst = 0.0f64;
    for (i, leaf) in leaves.iter().enumerate() {
        let analytic = match leaf.grad() {
            Some(g) => g.to_vec::<f64>()?,
            None => vec![0.0; leaf.numel()],
        };
        let base = leaf.to_vec::<f64>()?;
        for j in 0..base.len() {
            let eval = |delta: f64| -> Result<f64> {
                let _g = no_grad();
                let mut v = base.clone();
                v[j] += delta;
                let mut xs: Vec<Tensor> = leaves.iter().map(|l| l.detach()).collect();
                xs[i] = Tensor::from_vec(v, leaf.shape())?;
                scalar(&f(&xs)?)
            };
            let numeric = (eval(eps)? - eval(-eps)?) / (2.0 * eps);
            let diff = (numeric - analytic[j]).abs();
            worst = worst.max(diff);
            if diff > atol + rtol * numeric.abs() {
                return Err(Error::Autograd(format!(
                    "gradcheck: input {i} element {j}: analytic {} vs numeric {numeric} (diff {diff:e})",
                    analytic[j]
                )));
            }
        }
    }
    Ok(worst)
}
