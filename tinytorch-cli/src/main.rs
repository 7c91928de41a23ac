//! The `tinytorch` command: benchmarks now; training and evaluation arrive with the training
//! issue. Every error is printed as one line and exits non-zero.

mod bench;

use clap::{Parser, Subcommand};

/// TinyTorch command-line interface.
#[derive(Parser)]
#[command(
    name = "tinytorch",
    version,
    about = "TinyTorch: a PyTorch-style deep learning framework in Rust"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Time TinyTorch on a benchmark suite (scripts/bench_vs_torch.py adds PyTorch beside it).
    Bench(bench::BenchArgs),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(args) => bench::run(&args),
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
