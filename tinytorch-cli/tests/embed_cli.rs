//! `tinytorch embed` end to end, through the binary: one JSON array per input line in input
//! order (on a tiny random model built here), one-line errors for a missing directory, bad
//! files and bad input, and all-MiniLM-L6-v2 against sentence-transformers' vectors when
//! TINYTORCH_MINILM_DIR names its files (scripts/test_all.sh sets it; required under CI).

mod common;

use common::{spawn_tinytorch, temp_dir};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use tinytorch::io::save_module;
use tinytorch::models::bert::{BertConfig, BertModel, Init, SentenceEncoder};

const TINY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tinytorch/tests/fixtures/tiny_bert"
);

/// Run `tinytorch embed` with `args` and `input` on standard input.
fn embed(args: &[&str], input: &[u8]) -> Output {
    let args = [&["embed"], args].concat();
    let mut child = spawn_tinytorch(args, Stdio::piped(), Stdio::piped());
    // The command may fail before reading its input; a broken pipe is then expected.
    let _ = child.stdin.take().unwrap().write_all(input);
    child.wait_with_output().expect("wait for tinytorch")
}

/// A copy of the tiny fixture model directory with random weights.
fn tiny_model_dir(name: &str) -> PathBuf {
    let dir = temp_dir(&format!("embed-{name}"));
    std::fs::create_dir_all(dir.join("1_Pooling")).unwrap();
    for f in [
        "config.json",
        "tokenizer.json",
        "modules.json",
        "sentence_bert_config.json",
        "1_Pooling/config.json",
    ] {
        std::fs::copy(Path::new(TINY).join(f), dir.join(f)).unwrap();
    }
    tinytorch::manual_seed(3);
    let config = BertConfig::from_file(dir.join("config.json")).unwrap();
    let model = BertModel::new(config, Init::Normal { std: 0.5 }).unwrap();
    save_module(dir.join("model.safetensors"), &model).unwrap();
    dir
}

fn vectors(out: &Output) -> Vec<Vec<f32>> {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON array per line"))
        .collect()
}

fn one_line_error(out: &Output, needle: &str) {
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: ") && err.contains(needle), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn embeds_each_line_in_order() {
    let dir = tiny_model_dir("order");
    let d = dir.to_str().unwrap();
    let input = "the cat\n\na dog sat on the mat.\r\n東京 café\nthe cat";
    let out = embed(&["--model-dir", d, "--batch-size", "2"], input.as_bytes());
    assert!(out.status.success(), "{out:?}");
    let got = vectors(&out);
    assert_eq!(got.len(), 5);
    let encoder = SentenceEncoder::from_dir(&dir).unwrap();
    let texts = [
        "the cat",
        "",
        "a dog sat on the mat.",
        "東京 café",
        "the cat",
    ];
    let want = encoder.encode(&texts, 32).unwrap();
    for ((g, w), t) in got.iter().zip(&want).zip(texts) {
        assert_eq!(g.len(), 8);
        let diff = g
            .iter()
            .zip(w)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
        assert!(diff < 1e-5, "{t:?}: {diff}");
    }
    assert_eq!(got[0], got[4]);
    // No input, no output.
    let out = embed(&["--model-dir", d], b"");
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn errors_are_one_clear_line() {
    one_line_error(
        &embed(&["--model-dir", "/nonexistent/model"], b"x\n"),
        "'/nonexistent/model' does not exist",
    );
    let dir = tiny_model_dir("errors");
    let d = dir.to_str().unwrap();
    one_line_error(&embed(&["--model-dir", d], b"ok\n\xff\xfe\n"), "line 2");

    std::fs::write(dir.join("tokenizer.json"), "{not json").unwrap();
    one_line_error(&embed(&["--model-dir", d], b"x\n"), "tokenizer.json");
    std::fs::write(dir.join("model.safetensors"), b"truncated").unwrap();
    one_line_error(&embed(&["--model-dir", d], b"x\n"), "model.safetensors");
    std::fs::write(dir.join("config.json"), "{\"hidden_size\": 8}").unwrap();
    one_line_error(&embed(&["--model-dir", d], b"x\n"), "vocab_size");

    let out = embed(&["--model-dir", d, "--batch-size", "0"], b"x\n");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn minilm_matches_sentence_transformers() {
    let Ok(dir) = std::env::var("TINYTORCH_MINILM_DIR") else {
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "TINYTORCH_MINILM_DIR is not set under CI: scripts/test_all.sh sets it from \
             scripts/install/install_minilm.sh"
        );
        eprintln!(
            "skipping: TINYTORCH_MINILM_DIR is not set (bash scripts/install/install_minilm.sh)"
        );
        return;
    };
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tinytorch/tests/fixtures/minilm.json"
    );
    let fixture: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    // Short, empty, CJK and emoji, and 256 tokens after truncation.
    let picked: Vec<&serde_json::Value> = fixture["sentences"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| {
            let t = s["text"].as_str().unwrap();
            t.is_empty() || t.starts_with("This is") || t.contains('東') || t.starts_with("In the")
        })
        .collect();
    assert_eq!(picked.len(), 4);
    let input: String = picked
        .iter()
        .map(|s| format!("{}\n", s["text"].as_str().unwrap()))
        .collect();
    let out = embed(&["--model-dir", &dir], input.as_bytes());
    assert!(out.status.success(), "{out:?}");
    let got = vectors(&out);
    assert_eq!(got.len(), picked.len());
    for (g, s) in got.iter().zip(&picked) {
        let want = s["embedding"].as_array().unwrap();
        assert_eq!(g.len(), want.len());
        for (a, b) in g.iter().zip(want) {
            let diff = (*a as f64 - b.as_f64().unwrap()).abs();
            assert!(diff <= 1e-4, "{:?}: {diff}", s["text"]);
        }
    }
}
