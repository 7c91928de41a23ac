//! Times one conv2d forward + backward (sum of the output as the loss) on the CPU:
//! `conv_time N CI CO HW K STRIDE PAD [REPS]`; prints the median in ms. `DTYPE=bf16` in the
//! environment runs it in bf16 (f32 otherwise).
use std::time::Instant;
use tinytorch::ops::ConvPadding;
use tinytorch::{DType, Device, Result, Tensor};

fn main() -> Result<()> {
    let a: Vec<usize> = std::env::args()
        .skip(1)
        .map(|s| s.parse().unwrap())
        .collect();
    let (n, ci, co, hw, k, s, p) = (a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
    let reps = a.get(7).copied().unwrap_or(20);
    let dtype = match std::env::var("DTYPE").as_deref() {
        Ok("bf16") => DType::BF16,
        _ => DType::F32,
    };
    let x = Tensor::randn(&[n, ci, hw, hw], DType::F32, Device::Cpu)?
        .to_dtype(dtype)?
        .requires_grad_(true)?;
    let w = Tensor::randn(&[co, ci, k, k], DType::F32, Device::Cpu)?
        .to_dtype(dtype)?
        .requires_grad_(true)?;
    let mut t = vec![];
    for _ in 0..reps + 2 {
        let s0 = Instant::now();
        let y = x.conv2d(&w, None, [s, s], ConvPadding::Explicit(p, p), [1, 1], 1)?;
        y.sum_all()?.backward()?;
        t.push(s0.elapsed().as_secs_f64() * 1e3);
    }
    t.sort_by(f64::total_cmp);
    println!(
        "n={n} ci={ci} co={co} hw={hw} k={k} s={s} p={p}: {:.3} ms",
        t[t.len() / 2]
    );
    Ok(())
}
