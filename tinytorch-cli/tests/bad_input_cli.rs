//! The bad-input matrix of the command line: one table of invocations a careless or hostile
//! user makes — missing, empty, truncated and mismatched data, corrupt and foreign
//! checkpoints, out-of-range and conflicting flags — each of which must exit non-zero with
//! one clear line on stderr that names the problem and its values, within a time limit,
//! never a panic.

mod common;

use common::{synthetic_mnist, temp_dir, train_args, write_idx};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tinytorch::io::{load_checkpoint, save_checkpoint};

/// Run `args` with a deadline; (exit status success, stderr). A run past the deadline is
/// killed and fails the row as a hang.
fn run(args: &[String], deadline: Duration) -> Result<(bool, String), String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tinytorch"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run tinytorch");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let out = child.wait_with_output().expect("output");
            return Ok((
                status.success(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            ));
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            return Err(format!("still running after {deadline:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A finished run's checkpoint: one epoch of the mlp, 4 steps.
fn trained_checkpoint(data: &str, out: &Path) -> String {
    let out_s = out.to_str().unwrap();
    let mut args = train_args(data, out_s);
    args.extend(["--epochs", "1", "--max-steps", "4", "--no-eval"]);
    let o = common::tinytorch(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out.join("checkpoint.safetensors").display().to_string()
}

#[test]
fn every_bad_invocation_is_one_clear_line() {
    let dir = temp_dir("bad-input-cli");
    let d = |name: &str| dir.join(name).display().to_string();

    let data = d("data");
    std::fs::create_dir_all(&data).unwrap();
    synthetic_mnist(Path::new(&data));
    let ckpt = trained_checkpoint(&data, &dir.join("run"));

    // A data set with no images, one whose label file is shorter, one truncated file.
    let empty = d("empty");
    std::fs::create_dir_all(&empty).unwrap();
    for split in ["train", "t10k"] {
        write_idx(
            &Path::new(&empty).join(format!("{split}-images-idx3-ubyte")),
            &[0, 28, 28],
            &[],
        );
        write_idx(
            &Path::new(&empty).join(format!("{split}-labels-idx1-ubyte")),
            &[0],
            &[],
        );
    }
    let mismatched = d("mismatched");
    std::fs::create_dir_all(&mismatched).unwrap();
    for name in [
        "train-images-idx3-ubyte",
        "t10k-images-idx3-ubyte",
        "t10k-labels-idx1-ubyte",
    ] {
        std::fs::copy(
            Path::new(&data).join(name),
            Path::new(&mismatched).join(name),
        )
        .unwrap();
    }
    write_idx(
        &Path::new(&mismatched).join("train-labels-idx1-ubyte"),
        &[100],
        &[1; 100],
    );
    let truncated = d("truncated");
    std::fs::create_dir_all(&truncated).unwrap();
    for name in [
        "train-labels-idx1-ubyte",
        "t10k-images-idx3-ubyte",
        "t10k-labels-idx1-ubyte",
    ] {
        std::fs::copy(
            Path::new(&data).join(name),
            Path::new(&truncated).join(name),
        )
        .unwrap();
    }
    let images = std::fs::read(Path::new(&data).join("train-images-idx3-ubyte")).unwrap();
    std::fs::write(
        Path::new(&truncated).join("train-images-idx3-ubyte"),
        &images[..images.len() / 2],
    )
    .unwrap();

    // Checkpoints: truncated, not a checkpoint, and one whose run configuration asks for a
    // model far larger than its weights (it must be refused before anything is allocated).
    let ckpt_bytes = std::fs::read(&ckpt).unwrap();
    let cut = d("cut.safetensors");
    std::fs::write(&cut, &ckpt_bytes[..ckpt_bytes.len() - 100]).unwrap();
    let plain = d("plain.safetensors");
    std::fs::write(&plain, b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all").unwrap();
    let huge = d("huge.safetensors");
    let mut c = load_checkpoint(&ckpt).unwrap();
    let config = c.extra.get_mut("config").expect("run configuration");
    *config = config.replace("\"widths\":null", "\"widths\":[1000000000000]");
    assert!(config.contains("1000000000000"), "{config}");
    save_checkpoint(&huge, &c).unwrap();
    let corpus = d("corpus.txt");
    std::fs::write(&corpus, "the cat sat on the mat. ".repeat(200)).unwrap();
    let corpus_empty = d("empty.txt");
    std::fs::write(&corpus_empty, "").unwrap();
    let toml_bad = d("bad.toml");
    std::fs::write(&toml_bad, "epochs = \"three\"\nno-such-flag = 1\n").unwrap();

    let missing = d("nothing-here");
    let out = d("out");
    let train = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = train_args(&data, &out)
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let cmd = |args: &[&str]| -> Vec<String> { args.iter().map(|s| s.to_string()).collect() };

    let rows: Vec<(&str, Vec<String>, Vec<&str>)> = vec![
        // data
        (
            "missing data directory",
            cmd(&["train", "--dataset", "mnist", "--data", &missing]),
            vec!["nothing-here does not exist"],
        ),
        (
            "a data set with no images",
            train(&["--data", &empty, "--max-steps", "1"]),
            vec!["empty", "0 images"],
        ),
        (
            "images and labels of different counts",
            train(&["--data", &mismatched]),
            vec!["256", "100"],
        ),
        (
            "a truncated image file",
            train(&["--data", &truncated]),
            vec!["train-images-idx3-ubyte", "truncated"],
        ),
        (
            "CIFAR-10 without its files",
            cmd(&["train", "--dataset", "cifar10", "--data", &missing]),
            vec!["data_batch_1.bin"],
        ),
        // flags
        (
            "unknown model",
            cmd(&["train", "--model", "vgg"]),
            vec!["unknown model 'vgg'"],
        ),
        (
            "batch size 0",
            cmd(&["train", "--batch-size", "0"]),
            vec!["batch-size", "0"],
        ),
        (
            "zero epochs",
            cmd(&["train", "--epochs", "0"]),
            vec!["--epochs", "0"],
        ),
        (
            "negative learning rate",
            train(&["--lr", "-1", "--max-steps", "1"]),
            vec!["Invalid learning rate: -1"],
        ),
        (
            "NaN learning rate",
            train(&["--lr", "nan", "--max-steps", "1"]),
            vec!["learning rate", "NaN"],
        ),
        (
            "a learning rate that diverges",
            train(&["--lr", "1e30", "--max-steps", "40", "--no-eval"]),
            vec!["training diverged"],
        ),
        (
            "negative momentum",
            train(&["--momentum", "-0.5", "--max-steps", "1"]),
            vec!["momentum", "-0.5"],
        ),
        (
            "accumulation 0",
            train(&["--accumulate", "0"]),
            vec!["accumulate", "at least 1"],
        ),
        (
            "accumulation above the batch",
            train(&["--accumulate", "32"]),
            vec!["32", "16"],
        ),
        (
            "negative clipping norm",
            train(&["--clip-grad-norm", "-1"]),
            vec!["clip-grad-norm", "-1"],
        ),
        (
            "EMA decay above 1",
            train(&["--ema", "1.5"]),
            vec!["decay", "1.5"],
        ),
        (
            "normalisation with a zero std",
            train(&["--normalize-mean", "0.5", "--normalize-std", "0"]),
            vec!["std", "0"],
        ),
        (
            "normalisation for 3 channels on 1",
            train(&[
                "--normalize-mean",
                "0.5,0.5,0.5",
                "--normalize-std",
                "0.2,0.2,0.2",
            ]),
            vec!["3", "1"],
        ),
        (
            "negative crop padding",
            train(&["--augment-crop", "-1"]),
            vec!["-1", "--augment-crop"],
        ),
        ("a bad device", train(&["--device", "tpu"]), vec!["tpu"]),
        (
            "a CUDA device index",
            train(&["--device", "cuda:99", "--max-steps", "1"]),
            vec!["CUDA"],
        ),
        (
            "unknown flag",
            cmd(&["train", "--no-such-flag"]),
            vec!["--no-such-flag"],
        ),
        (
            "a config file with a wrong type and an unknown key",
            cmd(&["train", "--config", &toml_bad]),
            vec!["three", "--epochs"],
        ),
        (
            "a missing config file",
            cmd(&["train", "--config", &missing]),
            vec!["nothing-here"],
        ),
        // checkpoints
        (
            "resume from a missing checkpoint",
            train(&["--resume", &missing]),
            vec!["nothing-here"],
        ),
        (
            "resume from a truncated checkpoint",
            train(&["--resume", &cut]),
            vec!["cut.safetensors", "truncated"],
        ),
        (
            "resume with another model",
            cmd(&["train", "--resume", &ckpt, "--model", "seed-cnn"]),
            vec!["--model", "mlp"],
        ),
        (
            "eval of a file that is not a checkpoint",
            cmd(&["eval", "--checkpoint", &plain]),
            vec!["plain.safetensors"],
        ),
        (
            "eval of a checkpoint asking for a huge model",
            cmd(&["eval", "--checkpoint", &huge, "--data", &data]),
            vec!["widths", "1000000000000"],
        ),
        (
            "prune amount above 1",
            cmd(&[
                "prune",
                "--checkpoint",
                &ckpt,
                "--amount",
                "1.5",
                "--data",
                &data,
            ]),
            vec!["amount", "1.5"],
        ),
        (
            "quantize a missing checkpoint",
            cmd(&["quantize", "--checkpoint", &missing, "--out", &out]),
            vec!["nothing-here"],
        ),
        (
            "distill with alpha above 1",
            cmd(&[
                "distill",
                "--teacher",
                &ckpt,
                "--alpha",
                "2",
                "--data",
                &data,
            ]),
            vec!["alpha", "2"],
        ),
        (
            "distill with a zero temperature",
            cmd(&[
                "distill",
                "--teacher",
                &ckpt,
                "--temperature",
                "0",
                "--data",
                &data,
            ]),
            vec!["temperature", "0"],
        ),
        // language models
        (
            "train-lm on an empty corpus",
            cmd(&["train-lm", "--corpus", &corpus_empty, "--out", &out]),
            vec!["empty.txt"],
        ),
        (
            "train-lm with heads that do not divide the width",
            cmd(&[
                "train-lm", "--corpus", &corpus, "--out", &out, "--n-embd", "30", "--n-head", "4",
            ]),
            vec!["30", "4"],
        ),
        (
            "generate from a classifier checkpoint",
            cmd(&["generate", "--checkpoint", &ckpt]),
            vec!["checkpoint.safetensors"],
        ),
        (
            "generate with a negative temperature",
            cmd(&["generate", "--checkpoint", &ckpt, "--temperature", "-1"]),
            vec!["temperature -1"],
        ),
        (
            "generate with top-p above 1",
            cmd(&["generate", "--checkpoint", &ckpt, "--top-p", "1.5"]),
            vec!["top_p", "1.5"],
        ),
        (
            "generate from a missing model directory",
            cmd(&["generate", "--model-dir", &missing]),
            vec!["nothing-here"],
        ),
        // others
        (
            "embed from a directory without a model",
            cmd(&["embed", "--model-dir", &data]),
            vec!["config.json"],
        ),
        (
            "bench of an unknown suite",
            cmd(&["bench", "--suite", "nosuch"]),
            vec!["nosuch"],
        ),
        (
            "profile of an unknown model",
            cmd(&["profile", "--model", "vgg"]),
            vec!["vgg"],
        ),
        (
            "dashboard on a missing directory",
            cmd(&["dashboard", "--logdir", &missing, "--port", "0"]),
            vec!["nothing-here"],
        ),
    ];

    let mut failures = Vec::new();
    for (what, args, needles) in &rows {
        match run(args, Duration::from_secs(60)) {
            Err(hang) => failures.push(format!("{what}: {hang}")),
            Ok((true, _)) => failures.push(format!("{what}: exited 0")),
            Ok((false, stderr)) => {
                let text = stderr.trim();
                let missing: Vec<_> = needles.iter().filter(|n| !text.contains(*n)).collect();
                if text.contains("panicked") || !missing.is_empty() {
                    failures.push(format!("{what}: stderr {text:?} lacks {missing:?}"));
                } else if text.lines().count() != 1
                    && !text.starts_with("error: invalid value")
                    && !text.starts_with("error: unexpected argument")
                {
                    failures.push(format!("{what}: more than one line: {text:?}"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
