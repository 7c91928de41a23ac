//! Times one CPU matrix product `(m, k) x (k, n)`, as written or with either operand
//! transposed in place (a linear layer's forward, `A @ W^T`, is `nt`; its weight gradient
//! `G^T @ X` is `tn`): `matmul_time M K N [nn|nt|tn] [f32|bf16] [REPS]`; prints the median
//! in ms and the rate in GFLOP/s.
use std::time::Instant;
use tinytorch::{DType, Device, Result, Tensor};

fn main() -> Result<()> {
    // The main thread computes too, as in the benchmarks (no hand-off to the pool per call).
    tinytorch::parallel::use_current_thread()?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dim = |i: usize| args[i].parse::<usize>().expect("M K N must be integers");
    let (m, k, n) = (dim(0), dim(1), dim(2));
    let form = args.get(3).map_or("nn", String::as_str);
    let dtype = match args.get(4).map_or("f32", String::as_str) {
        "bf16" => DType::BF16,
        _ => DType::F32,
    };
    let reps = args
        .get(5)
        .map_or(50, |s| s.parse().expect("REPS must be an integer"));
    let operand = |rows: usize, cols: usize, transposed: bool| -> Result<Tensor> {
        let t = if transposed {
            Tensor::randn(&[cols, rows], DType::F32, Device::Cpu)?.t()?
        } else {
            Tensor::randn(&[rows, cols], DType::F32, Device::Cpu)?
        };
        t.to_dtype(dtype)
    };
    let a = operand(m, k, form.starts_with('t'))?;
    let b = operand(k, n, form.ends_with('t'))?;
    let mut times = vec![];
    for _ in 0..reps + 3 {
        let start = Instant::now();
        let c = a.matmul(&b)?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
        drop(c);
    }
    times.sort_by(f64::total_cmp);
    let ms = times[times.len() / 2];
    let gflops = 2.0 * (m * k * n) as f64 / ms / 1e6;
    println!("{m}x{k}x{n} {form} {dtype:?}: {ms:.3} ms, {gflops:.1} GFLOP/s");
    Ok(())
}
