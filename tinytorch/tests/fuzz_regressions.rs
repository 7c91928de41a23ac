//! Inputs the fuzzers once found failing (fuzz/regressions/TARGET/*), replayed on the
//! stable toolchain through the same readers as the fuzz targets in fuzz/fuzz_targets: each
//! must now give an `Ok` or an `Err`, never a panic.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use tinytorch::models::bert::BertConfig;
use tinytorch::models::llama::LlamaConfig;
use tinytorch::text::hf_tokenizer::HfTokenizer;

/// Feed `data` to the reader(s) that fuzz target `target` exercises.
fn replay(target: &str, data: &[u8]) {
    let text = std::str::from_utf8(data).ok();
    match target {
        "idx" => drop(tinytorch::data::idx::parse_idx_file(data)),
        "cifar10" => drop(tinytorch::data::cifar10::parse_cifar10_batch(data)),
        "safetensors" => drop(tinytorch::io::deserialize_safetensors(data)),
        "checkpoint" => {
            if let Ok(c) = tinytorch::io::deserialize_checkpoint(data) {
                c.extra
                    .values()
                    .for_each(|t| drop(tinytorch::text::tokenizer_from_json(t)));
            }
        }
        "hf_tokenizer" => {
            if let Ok(tok) = HfTokenizer::from_bytes(data) {
                drop(tok.encode_batch(&["Hello, world!", "ünïcode ☃ text"]));
            }
        }
        "bpe_json" => {
            if let Some(Ok(tok)) = text.map(tinytorch::text::tokenizer_from_json) {
                drop(tok.encode("The quick brown fox, 42 times."));
                drop(tok.decode(&[0, 1, 255, 256, 1 << 20]));
            }
        }
        "hf_config" => {
            if let Some(t) = text {
                drop(LlamaConfig::from_json(t));
                drop(BertConfig::from_json(t));
            }
        }
        // torch_load inputs are replayed by scripts/reliability/fuzz.sh, under the Python package.
        "torch_load" => {}
        other => panic!("fuzz/regressions/{other}: no such fuzz target"),
    }
}

#[test]
fn every_saved_fuzz_input_is_handled() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/regressions");
    let mut replayed = 0;
    let mut failures = Vec::new();
    for dir in std::fs::read_dir(&root).expect("fuzz/regressions") {
        let dir = dir.unwrap().path();
        let target = dir.file_name().unwrap().to_string_lossy().into_owned();
        for file in std::fs::read_dir(&dir).unwrap() {
            let path = file.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            if catch_unwind(AssertUnwindSafe(|| replay(&target, &data))).is_err() {
                failures.push(path.display().to_string());
            }
            replayed += 1;
        }
    }
    assert!(replayed > 0, "no inputs under {}", root.display());
    assert!(failures.is_empty(), "inputs that panic: {failures:?}");
}
