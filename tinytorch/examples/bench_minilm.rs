//! Times sentence embedding with a sentence-transformers model: the lines of standard input
//! are embedded as one batch (`SentenceEncoder::encode`: tokenize, encoder forward, mean
//! pooling, normalisation), once to warm up and then `RUNS` times. Prints one JSON object:
//! `{"sentences", "tokens", "times_s"}`. scripts/bench/bench_minilm.py feeds it 32 sentences of 128
//! tokens and times sentence-transformers on the same input beside it.
//!
//! Run: RAYON_NUM_THREADS=2 cargo run --release -p tinytorch --example bench_minilm -- DIR RUNS
//! < sentences.txt

use std::io::BufRead;
use std::time::Instant;
use tinytorch::models::bert::SentenceEncoder;
use tinytorch::{Error, Result};

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (dir, runs) = match args.as_slice() {
        [dir, runs] => (dir, runs.parse::<usize>().ok().filter(|&r| r > 0)),
        _ => (&String::new(), None),
    };
    let runs = runs.ok_or_else(|| {
        Error::invalid(
            "bench_minilm",
            "usage: bench_minilm MODEL_DIR RUNS < sentences.txt (RUNS > 0)",
        )
    })?;
    let encoder = SentenceEncoder::from_dir(dir)?;
    let sentences: Vec<String> = std::io::stdin()
        .lock()
        .lines()
        .collect::<std::io::Result<_>>()?;
    let batch = sentences.len().max(1);
    let tokens: usize = encoder
        .tokenizer()
        .encode_batch(&sentences.iter().map(String::as_str).collect::<Vec<_>>())?
        .lengths
        .iter()
        .sum();
    encoder.encode(&sentences, batch)?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        encoder.encode(&sentences, batch)?;
        times.push(start.elapsed().as_secs_f64());
    }
    println!(
        "{}",
        serde_json::json!({"sentences": sentences.len(), "tokens": tokens, "times_s": times})
    );
    Ok(())
}
