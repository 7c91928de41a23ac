//! Phase two of `tinytorch train`: the run directory. A resumed run continues its logs (cut
//! back to whole lines and to the epochs its checkpoint holds); a fresh run in an old run's
//! directory starts every log anew. Opens the metrics log and, on rank 0, the dashboard's
//! step logger, and writes the layer table once.

use super::state::Run;
use crate::train::args::TrainArgs;
use crate::train::run_files::StepLogger;
use std::path::{Path, PathBuf};
use tinytorch::io::remove_torn_saves;
use tinytorch::train::run_log::{drop_torn_line, write_json_atomic};
use tinytorch::train::{EpochMetrics, MetricsLog};
use tinytorch::Result;

/// The logs a run appends to, line by line.
const APPENDED: [&str; 4] = [
    "metrics.jsonl",
    "metrics.csv",
    "steps.jsonl",
    "histograms.jsonl",
];

/// The files a run rewrites whole (the layer table, the last evaluation).
const REWRITTEN: [&str; 2] = ["model.json", "eval.json"];

/// The run directory's files, open for the epoch loop.
pub(super) struct RunFiles {
    /// Where the checkpoint goes.
    pub ckpt_path: PathBuf,
    /// The metrics of every epoch so far (a resumed run's read back): what curves.png draws.
    pub history: Vec<EpochMetrics>,
    /// metrics.csv and metrics.jsonl.
    pub log: MetricsLog,
    /// steps.jsonl and histograms.jsonl (rank 0 only).
    pub steps: Option<StepLogger>,
}

/// Prepare `--out` for `run` and open its logs.
pub(super) fn open(args: &TrainArgs, run: &Run) -> Result<RunFiles> {
    std::fs::create_dir_all(&args.out)?;
    let ckpt_path = args.out.join("checkpoint.safetensors");
    if run.lead {
        remove_torn_saves(&ckpt_path);
    }
    if run.resumed && run.lead {
        // A crash while a log line was being appended leaves it torn: cut it before
        // reading the history back and appending to the logs.
        for f in APPENDED {
            drop_torn_line(&args.out.join(f))?;
        }
    }
    let jsonl = args.out.join("metrics.jsonl");
    let history = if run.resumed && jsonl.exists() {
        history_until(&jsonl, run.pos.epoch)?
    } else {
        start_anew(&args.out);
        Vec::new()
    };
    let log = MetricsLog::open(&args.out)?;
    // The dashboard's files: steps and histograms while training, the layer table once.
    let steps = if run.lead {
        Some(StepLogger::open(
            &args.out,
            args.log_every,
            args.log_histograms,
            run.loader.len() as u64,
        )?)
    } else {
        None
    };
    if let Some(doc) = &run.model_doc {
        write_json_atomic(&args.out.join("model.json"), doc)?;
    }
    Ok(RunFiles {
        ckpt_path,
        history,
        log,
        steps,
    })
}

/// The metrics in `jsonl` of the epochs up to `epoch`: lines of later epochs were written
/// after the checkpoint the run resumes from, and the run writes them again.
fn history_until(jsonl: &Path, epoch: usize) -> Result<Vec<EpochMetrics>> {
    Ok(MetricsLog::read_jsonl(jsonl)?
        .into_iter()
        .filter(|m| m.epoch <= epoch)
        .collect())
}

/// Remove an old run's logs from `dir`. (A resumed run appends instead; the dashboard keeps
/// the last line of each step.)
fn start_anew(dir: &Path) {
    for f in APPENDED.iter().chain(&REWRITTEN) {
        // A file that is not there is what this wants.
        let _ = std::fs::remove_file(dir.join(f));
    }
}
