//! The `tinytorch` command: `train` and `eval` image classifiers, `train-lm` and `generate`
//! with a GPT, `bench` the suites, `dashboard` the runs. Every
//! error is printed as one line and exits non-zero.

mod bench;
mod dashboard;
mod embed;
mod lm;
mod profile;
mod train;

use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

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
    /// Train a model on an image classification data set (Fashion-MNIST by default).
    Train(Box<train::TrainArgs>),
    /// Evaluate a checkpoint written by `train` on the test set.
    Eval(train::EvalArgs),
    /// Prune a trained model by weight magnitude (and remove whole channels with ln-structured).
    Prune(train::PruneArgs),
    /// Quantize a trained model to int8 (static with --calibrate N, else dynamic) and save it.
    Quantize(train::QuantizeArgs),
    /// Distill a trained teacher into a small student, beside the student trained alone.
    Distill(train::DistillArgs),
    /// Train a GPT language model on a text file.
    TrainLm(lm::TrainLmArgs),
    /// Continue a prompt with a `train-lm` checkpoint.
    Generate(lm::GenerateArgs),
    /// Time TinyTorch on a benchmark suite (scripts/bench/bench_vs_torch.py adds PyTorch beside it).
    Bench(bench::BenchArgs),
    /// Profile one training step of a model layer by layer: FLOPs, time, memory, roofline.
    Profile(profile::ProfileArgs),
    /// Sentence embeddings of stdin's lines with a sentence-transformers BERT model.
    Embed(embed::EmbedArgs),
    /// Serve a web page of the training runs under a log directory, updated while they train.
    Dashboard(dashboard::DashboardArgs),
}

/// Every option that takes a value takes a negative number as its value (`--lr -1`,
/// `--momentum -0.5`), where clap would call it an unknown flag: the option's own check
/// then says what is wrong with the number.
fn allow_negative_values(cmd: clap::Command) -> clap::Command {
    cmd.mut_args(|a| {
        let takes_value = a.get_action().takes_values();
        a.allow_negative_numbers(takes_value)
    })
    .mut_subcommands(allow_negative_values)
}

fn main() {
    // Rust ignores SIGPIPE, so printing into a closed pipe (`tinytorch bench | head`)
    // panics; with the default action the process ends quietly, as command-line tools do.
    #[cfg(unix)]
    // SAFETY: called before any other thread exists; SIG_DFL is a valid disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // `train --config FILE` is a recipe of flags, spliced in before the command line's own.
    let args = match train::expand_config_args(std::env::args_os().collect()) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let matches = allow_negative_values(Cli::command()).get_matches_from(args);
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // `train --resume` refuses flags that would change the resumed run: it needs to know
    // which flags were given rather than defaulted.
    if let (Command::Train(t), Some(("train", sub))) = (&mut cli.command, matches.subcommand()) {
        t.given = sub
            .ids()
            .filter(|id| sub.value_source(id.as_str()) == Some(ValueSource::CommandLine))
            .map(|id| id.to_string())
            .collect();
    }
    // The main thread joins the compute pool (with one thread or more beside it), so the ops
    // it calls split their work in place instead of handing every kernel to a pool thread
    // (see tinytorch::parallel). Nothing has used rayon yet, so this cannot fail; if it did,
    // the ops would still run, handed over.
    let _ = tinytorch::parallel::use_current_thread();
    let result = match cli.command {
        Command::Train(args) => train::train(&args),
        Command::Eval(args) => train::eval_checkpoint(&args),
        Command::Distill(args) => train::distill(&args),
        Command::Prune(args) => train::prune(&args),
        Command::Quantize(args) => train::quantize(&args),
        Command::TrainLm(args) => lm::train_lm(&args),
        Command::Generate(args) => lm::generate(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Embed(args) => embed::run(&args),
        Command::Profile(args) => profile::run(&args),
        Command::Dashboard(args) => dashboard::run(&args),
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
