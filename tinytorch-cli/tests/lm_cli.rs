//! `tinytorch train-lm` and `tinytorch generate` end to end: a small GPT learns a repetitive
//! text (its validation loss must fall well below the uniform guess), the checkpoint
//! generates with and without the KV cache identically, and errors are one line.

mod common;

use common::{temp_dir, tinytorch, tinytorch_fails};
use std::process::Output;

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

#[test]
fn train_lm_learns_and_generate_reads_its_checkpoint() {
    let dir = temp_dir("lm-train");
    let corpus = dir.join("corpus.txt");
    std::fs::write(
        &corpus,
        "the quick brown fox jumps over the lazy dog. ".repeat(200),
    )
    .unwrap();
    let out = dir.join("run");
    for tokenizer in ["char", "bpe"] {
        let o = tinytorch(&[
            "train-lm",
            "--corpus",
            corpus.to_str().unwrap(),
            "--tokenizer",
            tokenizer,
            "--vocab-size",
            "300",
            "--n-layer",
            "2",
            "--n-head",
            "2",
            "--n-embd",
            "32",
            "--block-size",
            "16",
            "--batch-size",
            "8",
            "--max-steps",
            "120",
            "--eval-every",
            "60",
            "--lr",
            "3e-3",
            "--out",
            out.to_str().unwrap(),
            "--json",
        ]);
        let text = stdout(&o);
        let v: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        let vocab = v["vocab_size"].as_f64().unwrap();
        let val = v["val_loss"].as_f64().unwrap();
        // A uniform guess costs ln(vocab); the text is nearly deterministic.
        assert!(
            val < 0.5 * vocab.ln(),
            "{tokenizer}: val loss {val} (vocab {vocab})"
        );
        for f in [
            "checkpoint.safetensors",
            "metrics.jsonl",
            "metrics.csv",
            "curves.png",
        ] {
            assert!(out.join(f).exists(), "{f}");
        }
    }
    let ckpt = out.join("checkpoint.safetensors");
    let gen = |extra: &[&str]| {
        let mut args = vec![
            "generate",
            "--checkpoint",
            ckpt.to_str().unwrap(),
            "--prompt",
            "the quick",
            "--max-new-tokens",
            "24",
            "--temperature",
            "0",
        ];
        args.extend_from_slice(extra);
        stdout(&tinytorch(&args))
    };
    let cached = gen(&[]);
    assert!(cached.starts_with("the quick"), "{cached}");
    assert_eq!(cached, gen(&["--no-cache"]), "the KV cache changes nothing");
}

#[test]
fn lm_errors_are_one_line() {
    let err = tinytorch_fails(&["train-lm", "--corpus", "/nonexistent/corpus.txt"]);
    assert!(
        err.starts_with("error: ") && err.contains("corpus") && err.lines().count() == 1,
        "{err}"
    );
    let err = tinytorch_fails(&["generate", "--checkpoint", "/nonexistent.safetensors"]);
    assert_eq!(err.lines().count(), 1);
}

/// The tiny Qwen2 and Mistral directories of tinytorch's fixtures (with a tokenizer.json).
fn family_dir(family: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tinytorch/tests/fixtures/llm_families")
        .join(family)
}

#[test]
fn generate_reads_hugging_face_directories_of_the_llama_family() {
    let reference: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(family_dir("generate.json")).unwrap())
            .unwrap();
    for family in ["qwen2", "mistral"] {
        let want = &reference[family];
        let o = tinytorch(&[
            "generate",
            "--model-dir",
            family_dir(family).to_str().unwrap(),
            "--prompt",
            want["prompt"].as_str().unwrap(),
            "--max-new-tokens",
            "12",
            "--temperature",
            "0",
        ]);
        // transformers' greedy generate, decoded by the same tokenizer.json.
        assert_eq!(
            stdout(&o).trim_end_matches('\n'),
            want["text"].as_str().unwrap(),
            "{family}"
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("12 tokens in") && err.contains("tokens/s"),
            "{err}"
        );
    }
    // A directory without tokenizer.json, and both sources at once, are one-line errors.
    let dir = temp_dir("lm-no-tokenizer");
    for f in ["config.json", "model.safetensors"] {
        std::fs::copy(family_dir("qwen2").join(f), dir.join(f)).unwrap();
    }
    let dir_s = dir.to_str().unwrap();
    let stderr = tinytorch_fails(&["generate", "--model-dir", dir_s]);
    assert!(stderr.contains("tokenizer.json"), "{stderr}");
    let stderr = tinytorch_fails(&["generate", "--model-dir", dir_s, "--checkpoint", "x"]);
    assert!(stderr.contains("cannot be used with"), "{stderr}");
}
