//! `tinytorch embed`: sentence embeddings of the lines of standard input, one JSON array of
//! floats per line on standard output, in input order, with a sentence-transformers BERT
//! model directory (e.g. all-MiniLM-L6-v2).
//!
//! Lines are read in chunks and each chunk is embedded in batches sorted by length, so that
//! output starts before the input ends and batches pad little.

use clap::Args;
use std::io::{BufRead, BufWriter, Write};
use std::path::PathBuf;
use std::time::Instant;
use tinytorch::models::bert::SentenceEncoder;
use tinytorch::{Error, Result};

/// Lines embedded together: enough to sort into well-filled batches.
const CHUNK_LINES: usize = 1024;

/// Arguments of `tinytorch embed`.
#[derive(Args)]
pub struct EmbedArgs {
    /// A sentence-transformers model directory (config.json, model.safetensors,
    /// tokenizer.json, modules.json, ...).
    #[arg(long, value_name = "DIR")]
    model_dir: PathBuf,
    /// Sentences per forward pass (each batch is padded to its longest sentence).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..))]
    batch_size: u64,
    /// Print the number of sentences and the throughput to standard error at the end.
    #[arg(long)]
    stats: bool,
}

/// Embed standard input line by line. A line is one sentence; a trailing `\r` is dropped
/// and an empty line is embedded as the empty text.
pub fn run(args: &EmbedArgs) -> Result<()> {
    let encoder = SentenceEncoder::from_dir(&args.model_dir)?;
    let stdin = std::io::stdin().lock();
    let mut out = BufWriter::new(std::io::stdout().lock());
    let start = Instant::now();
    let mut count = 0usize;
    let mut lines = stdin.lines();
    loop {
        let mut chunk = Vec::with_capacity(CHUNK_LINES);
        for line in lines.by_ref().take(CHUNK_LINES) {
            let line = line.map_err(|e| {
                Error::invalid(
                    "embed",
                    format!(
                        "cannot read line {} of standard input: {e}",
                        count + chunk.len() + 1
                    ),
                )
            })?;
            chunk.push(match line.strip_suffix('\r') {
                Some(s) => s.to_string(),
                None => line,
            });
        }
        if chunk.is_empty() {
            break;
        }
        for vector in encoder.encode(&chunk, args.batch_size as usize)? {
            let json = serde_json::to_string(&vector)
                .map_err(|e| Error::invalid("embed", format!("cannot encode JSON: {e}")))?;
            writeln!(out, "{json}")?;
        }
        count += chunk.len();
        out.flush()?;
    }
    if args.stats {
        let secs = start.elapsed().as_secs_f64();
        eprintln!(
            "embedded {count} sentences in {secs:.3} s ({:.1} sentences/s)",
            count as f64 / secs
        );
    }
    Ok(())
}
