//! `tinytorch bench`: the op suite of the foundation issue. Each row times one operation and
//! reports its median time; `--json` prints one JSON object per row for
//! scripts/bench/bench_vs_torch.py, which runs the same rows in PyTorch and prints the ratios.

mod bandwidth;
mod cpu;
mod gpt_train;
mod int8;
mod kv_cache;
mod layers;
mod llm_cache;
mod timer;

use clap::Args;
use std::time::Duration;
use timer::{cells, time_ms, to_json, CELLS_HEADER};
use tinytorch::benchmark::Summary;
use tinytorch::{DType, Device, Result, Tensor};

/// Arguments of `tinytorch bench`.
#[derive(Args)]
pub struct BenchArgs {
    /// Which suite to run: `ops`, `cpu` (training steps, op overhead, bandwidth, matmul and
    /// the layer table: the CPU-performance suite), `layers` (the seed's layer table,
    /// forward and backward), `bandwidth` (GB/s of ReLU, add and a transpose copy on
    /// `--device`), `kv-cache` (GPT generation speed with and without the cache),
    /// `llm-cache` (a Llama's and a Mistral's cost per cached token from context 64 to 1024),
    /// `gpt-train` (one training step of a small GPT) or `int8` (dynamically quantized Linear
    /// beside f32).
    #[arg(long, default_value = "ops")]
    suite: String,
    /// Device of the `layers` and `bandwidth` suites: cpu, cuda or cuda:N.
    #[arg(long, default_value = "cpu")]
    device: tinytorch::Device,
    /// The device's peak memory bandwidth in GB/s, to print each `bandwidth` row as a
    /// fraction of it.
    #[arg(long)]
    peak_gbs: Option<f64>,
    /// Print one JSON object per row instead of a table.
    #[arg(long)]
    json: bool,
    /// Run only rows whose name contains this string.
    #[arg(long)]
    filter: Option<String>,
    /// Time budget per row, in milliseconds.
    #[arg(long, default_value_t = 1000)]
    budget_ms: u64,
}

/// One measured row.
struct Row {
    name: &'static str,
    shape: String,
    stats: Summary,
    /// Throughput: (value, unit), e.g. (12.3, "GB/s").
    rate: Option<(f64, &'static str)>,
}

/// A benchmark: name, shape label, setup returning the closure to time, and the work per call
/// for a throughput figure.
struct Case {
    name: &'static str,
    shape: String,
    work: Option<(f64, &'static str)>,
    run: Box<dyn Fn() -> Result<()>>,
}

fn randn(shape: &[usize]) -> Result<Tensor> {
    Tensor::randn(shape, DType::F32, Device::Cpu)
}

fn ops_suite() -> Result<Vec<Case>> {
    let mut cases = Vec::new();
    let one = Tensor::from_vec(vec![1.0f32], &[1])?;
    let one2 = one.clone();
    cases.push(Case {
        name: "add (per-op overhead)",
        shape: "1".into(),
        work: None,
        run: Box::new(move || one.add(&one2).map(drop)),
    });
    for &n in &[1usize << 20, 1 << 24] {
        let (a, b) = (randn(&[n])?, randn(&[n])?);
        let label = if n == 1 << 20 { "1M" } else { "16M" };
        let bytes = (n * 4) as f64;
        let (a2, b2) = (a.clone(), b.clone());
        cases.push(Case {
            name: "add",
            shape: label.into(),
            work: Some((3.0 * bytes / 1e9, "GB/s")),
            run: Box::new(move || a2.add(&b2).map(drop)),
        });
        let (a2, b2) = (a.clone(), b.clone());
        cases.push(Case {
            name: "mul",
            shape: label.into(),
            work: Some((3.0 * bytes / 1e9, "GB/s")),
            run: Box::new(move || a2.mul(&b2).map(drop)),
        });
        let a2 = a.clone();
        cases.push(Case {
            name: "relu",
            shape: label.into(),
            work: Some((2.0 * bytes / 1e9, "GB/s")),
            run: Box::new(move || a2.relu().map(drop)),
        });
        if n == 1 << 24 {
            cases.push(Case {
                name: "sum",
                shape: label.into(),
                work: Some((bytes / 1e9, "GB/s")),
                run: Box::new(move || a.sum_all().map(drop)),
            });
        }
    }
    let x = randn(&[4096, 1024])?;
    cases.push(Case {
        name: "softmax",
        shape: "4096x1024".into(),
        work: Some((2.0 * 4096.0 * 1024.0 * 4.0 / 1e9, "GB/s")),
        run: Box::new(move || x.softmax(-1).map(drop)),
    });
    for &n in &[256usize, 1024, 2048] {
        let (a, b) = (randn(&[n, n])?, randn(&[n, n])?);
        cases.push(Case {
            name: "matmul",
            shape: format!("{n}x{n}x{n}"),
            work: Some((2.0 * (n * n * n) as f64 / 1e9, "GFLOP/s")),
            run: Box::new(move || a.matmul(&b).map(drop)),
        });
    }
    Ok(cases)
}

/// Run the suite and print the rows.
pub fn run(args: &BenchArgs) -> Result<()> {
    let cases = match args.suite.as_str() {
        "ops" => ops_suite()?,
        "cpu" => return run_cpu(args),
        "layers" => return run_layers(args),
        "bandwidth" => return run_bandwidth(args),
        "kv-cache" => return run_kv_cache(args.json),
        "llm-cache" => return run_llm_cache(args.json),
        "gpt-train" => return run_gpt_train(args),
        "int8" => return run_int8(args),
        other => {
            return Err(tinytorch::Error::invalid(
                "bench",
                format!(
                    "unknown suite '{other}' (available: ops, cpu, layers, bandwidth, kv-cache, llm-cache, gpt-train, int8)"
                ),
            ));
        }
    };
    let budget = Duration::from_millis(args.budget_ms);
    if !args.json {
        println!(
            "{:<24} {:>12} {:>12} {:>14}  {CELLS_HEADER}",
            "op", "shape", "median ms", "rate"
        );
    }
    for case in cases {
        if args
            .filter
            .as_ref()
            .is_some_and(|f| !case.name.contains(f.as_str()))
        {
            continue;
        }
        let stats = time_ms(5, budget, &case.run)?;
        let row = Row {
            name: case.name,
            shape: case.shape,
            rate: case.work.map(|(w, unit)| (w / (stats.median / 1e3), unit)),
            stats,
        };
        print_row(&row, args.json);
    }
    Ok(())
}

/// The layer table on `args.device`: a table, or one JSON object per row with its
/// parameters for scripts/bench/bench_layers_torch.py.
fn run_layers(args: &BenchArgs) -> Result<()> {
    let device = args.device;
    let budget = Duration::from_millis(args.budget_ms);
    let mut family = "";
    if !args.json {
        println!(
            "{:<16} {:<64} {:>12}  {CELLS_HEADER}",
            "layer", "parameters", "median ms"
        );
    }
    for row in layers::rows(device, args.filter.as_deref())? {
        if row.family != family {
            layers::flush_l2(device)?;
            family = row.family;
        }
        let stats = layers::time_row(&row, device, budget)?;
        print_param_row(row.family, &row.params, device, &stats, args.json);
    }
    Ok(())
}

/// GB/s of the elementwise paths on `args.device`, and the fraction of `--peak-gbs`.
fn run_bandwidth(args: &BenchArgs) -> Result<()> {
    let budget = Duration::from_millis(args.budget_ms);
    if !args.json {
        println!(
            "{:<16} {:>12} {:>12} {:>10}  {CELLS_HEADER}",
            "row", "median ms", "GB/s", "of peak"
        );
    }
    for row in bandwidth::rows(args.device, budget)? {
        let of_peak = args.peak_gbs.map(|p| row.gbs() / p);
        if args.json {
            let obj = serde_json::json!({
                "name": row.name, "device": args.device.to_string(),
                "tinytorch_ms": row.stats.median, "stats": to_json(&row.stats),
                "gb_per_s": row.gbs(), "peak_gb_per_s": args.peak_gbs, "of_peak": of_peak,
            });
            println!("{obj}");
        } else {
            let share = of_peak.map_or("-".into(), |f| format!("{:.0}%", 100.0 * f));
            println!(
                "{:<16} {:>12.4} {:>12.1} {:>10}  {}",
                row.name,
                row.stats.median,
                row.gbs(),
                share,
                cells(&row.stats)
            );
        }
    }
    Ok(())
}

/// The CPU-performance suite: a table, or one JSON object per row with its parameters for
/// scripts/bench/bench_cpu_torch.py.
fn run_cpu(args: &BenchArgs) -> Result<()> {
    let budget = Duration::from_millis(args.budget_ms);
    if !args.json {
        println!(
            "{:<16} {:<64} {:>12}  {CELLS_HEADER}",
            "row", "parameters", "median ms"
        );
    }
    for mut row in cpu::rows(args.filter.as_deref())? {
        let stats = time_ms(5, budget, &mut row.run)?;
        print_param_row(row.name, &row.params, Device::Cpu, &stats, args.json);
    }
    Ok(())
}

/// Dynamically quantized Linear against f32: a table, or one JSON object per row for
/// scripts/bench/bench_int8_torch.py.
fn run_int8(args: &BenchArgs) -> Result<()> {
    let budget = Duration::from_millis(args.budget_ms);
    if !args.json {
        println!(
            "{:<40} {:>12} {:>12} {:>8}  int8 {CELLS_HEADER}",
            "int8_linear", "int8 ms", "f32 ms", "f32/int8"
        );
    }
    for row in int8::rows(budget, args.filter.as_deref())? {
        let (q, f) = (row.int8.median, row.f32.median);
        if args.json {
            let obj = serde_json::json!({
                "name": "int8_linear", "params": row.params, "tinytorch_ms": q,
                "stats": to_json(&row.int8), "f32_ms": f, "f32_stats": to_json(&row.f32),
            });
            println!("{obj}");
        } else {
            println!(
                "{:<40} {q:>12.4} {f:>12.4} {:>8.2}  {}",
                row.params.to_string(),
                f / q,
                cells(&row.int8)
            );
        }
    }
    Ok(())
}

/// A row described by its parameters: a table line, or a JSON object that carries them.
fn print_param_row(
    name: &str,
    params: &serde_json::Value,
    device: Device,
    stats: &Summary,
    json: bool,
) {
    if json {
        let obj = serde_json::json!({
            "name": name, "shape": params.to_string(), "params": params,
            "device": device.to_string(), "tinytorch_ms": stats.median, "stats": to_json(stats),
        });
        println!("{obj}");
    } else {
        println!(
            "{name:<16} {:<64} {:>12.4}  {}",
            params.to_string(),
            stats.median,
            cells(stats)
        );
    }
}

/// Tokens/s of GPT generation at contexts 64, 256 and 1024, with and without the KV cache.
fn run_kv_cache(json: bool) -> Result<()> {
    if !json {
        println!(
            "{:>8} {:>18} {:>18}",
            "context", "cached tokens/s", "uncached tokens/s"
        );
    }
    for (context, cached, uncached) in kv_cache::rows()? {
        if json {
            println!(
                "{}",
                serde_json::json!({"name": "generate", "context": context, "cached_tokens_per_s": cached, "uncached_tokens_per_s": uncached})
            );
        } else {
            println!("{context:>8} {cached:>18.1} {uncached:>18.1}");
        }
    }
    Ok(())
}

/// Per-token cost of cached generation of a Llama and a Mistral at contexts 64 to 1024, and
/// its ratio to the cost at context 64.
fn run_llm_cache(json: bool) -> Result<()> {
    if !json {
        println!(
            "{:>8} {:>8} {:>14} {:>12}",
            "family", "context", "ms per token", "vs ctx 64"
        );
    }
    let rows = llm_cache::rows()?;
    for &(family, context, ms) in &rows {
        let base = rows
            .iter()
            .find(|r| r.0 == family && r.1 == llm_cache::CONTEXTS[0])
            .map_or(ms, |r| r.2);
        if json {
            println!(
                "{}",
                serde_json::json!({"name": "llm-cache", "family": family, "context": context, "ms_per_token": ms, "vs_context_64": ms / base})
            );
        } else {
            println!("{family:>8} {context:>8} {ms:>14.3} {:>12.2}", ms / base);
        }
    }
    Ok(())
}

/// One GPT training step (forward, cross-entropy, backward, AdamW): median ms and tokens/s.
fn run_gpt_train(args: &BenchArgs) -> Result<()> {
    let stats = gpt_train::step_ms(10, Duration::from_millis(args.budget_ms))?;
    let ms = stats.median;
    let c = gpt_train::CONFIG;
    let tokens_per_s = (gpt_train::BATCH * c.block_size) as f64 / (ms / 1e3);
    if args.json {
        let obj = serde_json::json!({
            "name": "gpt-train", "batch": gpt_train::BATCH, "block_size": c.block_size,
            "n_layer": c.n_layer, "n_head": c.n_head, "n_embd": c.n_embd,
            "vocab_size": c.vocab_size, "tinytorch_ms": ms, "stats": to_json(&stats),
            "tokens_per_s": tokens_per_s,
        });
        println!("{obj}");
    } else {
        println!(
            "GPT training step ({} layers, d={}, {} heads, context {}, vocabulary {}, batch {}): \
             {ms:.2} ms (median; {stats}), {tokens_per_s:.0} tokens/s",
            c.n_layer,
            c.n_embd,
            c.n_head,
            c.block_size,
            c.vocab_size,
            gpt_train::BATCH
        );
    }
    Ok(())
}

fn print_row(row: &Row, json: bool) {
    if json {
        let mut obj = serde_json::json!({
            "name": row.name, "shape": row.shape, "tinytorch_ms": row.stats.median,
            "stats": to_json(&row.stats),
        });
        if let Some((v, unit)) = row.rate {
            obj["rate"] = serde_json::json!(v);
            obj["rate_unit"] = serde_json::json!(unit);
        }
        println!("{obj}");
    } else {
        let rate = row
            .rate
            .map_or(String::new(), |(v, u)| format!("{v:.1} {u}"));
        println!(
            "{:<24} {:>12} {:>12.4} {:>14}  {}",
            row.name,
            row.shape,
            row.stats.median,
            rate,
            cells(&row.stats)
        );
    }
}
