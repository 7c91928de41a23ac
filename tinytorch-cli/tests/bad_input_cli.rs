//! The bad-input matrix of the command line: one table of invocations a careless or hostile
//! user makes — missing, empty, truncated and mismatched data, corrupt and foreign
//! checkpoints, out-of-range and conflicting flags — each of which must exit non-zero with
//! one clear line on stderr that names the problem and its values, within a time limit,
//! never a panic.

mod common;

use common::{spawn_tinytorch, synthetic_mnist, temp_dir, train_args, write_idx};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tinytorch::io::{load_checkpoint, save_checkpoint};

/// Run `args` with a deadline; (exit status success, stderr). A run past the deadline is
/// killed and fails the row as a hang.
fn run(args: &[String], deadline: Duration) -> Result<(bool, String), String> {
    let mut child = spawn_tinytorch(args, Stdio::null(), Stdio::null());
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

/// One failing row: what it tries, its arguments and the words its error must contain.
type Row = (&'static str, Vec<String>, Vec<&'static str>);

/// Command-line arguments from string slices.
fn cmd(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// The files the rows name, all under one temporary directory.
struct Fixtures {
    /// A good synthetic MNIST.
    data: String,
    /// A finished run's checkpoint on `data`.
    ckpt: String,
    /// A data set with no images.
    empty: String,
    /// A data set whose training labels are fewer than its images.
    mismatched: String,
    /// A data set whose training images are cut in half.
    truncated: String,
    /// `ckpt` without its last 100 bytes.
    cut: String,
    /// A file that is not a checkpoint.
    plain: String,
    /// `ckpt` with a run configuration asking for a huge model.
    huge: String,
    /// A small text corpus.
    corpus: String,
    /// An empty one.
    corpus_empty: String,
    /// A recipe file with a wrong type and an unknown key.
    toml_bad: String,
    /// A path where nothing is.
    missing: String,
    /// The runs' output directory.
    out: String,
}

impl Fixtures {
    /// Write every fixture under `dir`.
    fn new(dir: &Path) -> Fixtures {
        let d = |name: &str| dir.join(name).display().to_string();
        let data = d("data");
        std::fs::create_dir_all(&data).unwrap();
        synthetic_mnist(Path::new(&data));
        let ckpt = trained_checkpoint(&data, &dir.join("run"));
        let (empty, mismatched, truncated) = (d("empty"), d("mismatched"), d("truncated"));
        bad_data_sets(
            Path::new(&data),
            Path::new(&empty),
            Path::new(&mismatched),
            Path::new(&truncated),
        );
        let (cut, plain, huge) = (
            d("cut.safetensors"),
            d("plain.safetensors"),
            d("huge.safetensors"),
        );
        bad_checkpoints(&ckpt, &cut, &plain, &huge);
        let corpus = d("corpus.txt");
        std::fs::write(&corpus, "the cat sat on the mat. ".repeat(200)).unwrap();
        let corpus_empty = d("empty.txt");
        std::fs::write(&corpus_empty, "").unwrap();
        let toml_bad = d("bad.toml");
        std::fs::write(&toml_bad, "epochs = \"three\"\nno-such-flag = 1\n").unwrap();
        Fixtures {
            data,
            ckpt,
            empty,
            mismatched,
            truncated,
            cut,
            plain,
            huge,
            corpus,
            corpus_empty,
            toml_bad,
            missing: d("nothing-here"),
            out: d("out"),
        }
    }

    /// `tinytorch train` on the good data with `extra` flags.
    fn train(&self, extra: &[&str]) -> Vec<String> {
        let mut a: Vec<String> = train_args(&self.data, &self.out)
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    }
}

/// Three broken copies of `data`: no images at `empty`, fewer training labels than images
/// at `mismatched`, training images cut in half at `truncated`.
fn bad_data_sets(data: &Path, empty: &Path, mismatched: &Path, truncated: &Path) {
    std::fs::create_dir_all(empty).unwrap();
    for split in ["train", "t10k"] {
        write_idx(
            &empty.join(format!("{split}-images-idx3-ubyte")),
            &[0, 28, 28],
            &[],
        );
        write_idx(&empty.join(format!("{split}-labels-idx1-ubyte")), &[0], &[]);
    }
    std::fs::create_dir_all(mismatched).unwrap();
    for name in [
        "train-images-idx3-ubyte",
        "t10k-images-idx3-ubyte",
        "t10k-labels-idx1-ubyte",
    ] {
        std::fs::copy(data.join(name), mismatched.join(name)).unwrap();
    }
    write_idx(
        &mismatched.join("train-labels-idx1-ubyte"),
        &[100],
        &[1; 100],
    );
    std::fs::create_dir_all(truncated).unwrap();
    for name in [
        "train-labels-idx1-ubyte",
        "t10k-images-idx3-ubyte",
        "t10k-labels-idx1-ubyte",
    ] {
        std::fs::copy(data.join(name), truncated.join(name)).unwrap();
    }
    let images = std::fs::read(data.join("train-images-idx3-ubyte")).unwrap();
    std::fs::write(
        truncated.join("train-images-idx3-ubyte"),
        &images[..images.len() / 2],
    )
    .unwrap();
}

/// Broken checkpoints made from `ckpt`: truncated (`cut`), not a checkpoint (`plain`), and
/// one whose run configuration asks for a model far larger than its weights (`huge`: it
/// must be refused before anything is allocated).
fn bad_checkpoints(ckpt: &str, cut: &str, plain: &str, huge: &str) {
    let ckpt_bytes = std::fs::read(ckpt).unwrap();
    std::fs::write(cut, &ckpt_bytes[..ckpt_bytes.len() - 100]).unwrap();
    std::fs::write(plain, b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all").unwrap();
    let mut c = load_checkpoint(ckpt).unwrap();
    let config = c.extra.get_mut("config").expect("run configuration");
    *config = config.replace("\"widths\":null", "\"widths\":[1000000000000]");
    assert!(config.contains("1000000000000"), "{config}");
    save_checkpoint(huge, &c).unwrap();
}

/// Missing, empty, mismatched and truncated data sets.
fn data_rows(f: &Fixtures) -> Vec<Row> {
    vec![
        (
            "missing data directory",
            cmd(&["train", "--dataset", "mnist", "--data", &f.missing]),
            vec!["nothing-here does not exist"],
        ),
        (
            "a data set with no images",
            f.train(&["--data", &f.empty, "--max-steps", "1"]),
            vec!["empty", "0 images"],
        ),
        (
            "images and labels of different counts",
            f.train(&["--data", &f.mismatched]),
            vec!["256", "100"],
        ),
        (
            "a truncated image file",
            f.train(&["--data", &f.truncated]),
            vec!["train-images-idx3-ubyte", "truncated"],
        ),
        (
            "CIFAR-10 without its files",
            cmd(&["train", "--dataset", "cifar10", "--data", &f.missing]),
            vec!["data_batch_1.bin"],
        ),
    ]
}

/// Flags out of range: the model, the batch and the optimizer's numbers.
fn flag_rows(f: &Fixtures) -> Vec<Row> {
    vec![
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
            f.train(&["--lr", "-1", "--max-steps", "1"]),
            vec!["Invalid learning rate: -1"],
        ),
        (
            "NaN learning rate",
            f.train(&["--lr", "nan", "--max-steps", "1"]),
            vec!["learning rate", "NaN"],
        ),
        (
            "a learning rate that diverges",
            f.train(&["--lr", "1e30", "--max-steps", "40", "--no-eval"]),
            vec!["training diverged"],
        ),
        (
            "negative momentum",
            f.train(&["--momentum", "-0.5", "--max-steps", "1"]),
            vec!["momentum", "-0.5"],
        ),
        (
            "accumulation 0",
            f.train(&["--accumulate", "0"]),
            vec!["accumulate", "at least 1"],
        ),
        (
            "accumulation above the batch",
            f.train(&["--accumulate", "32"]),
            vec!["32", "16"],
        ),
        (
            "negative clipping norm",
            f.train(&["--clip-grad-norm", "-1"]),
            vec!["clip-grad-norm", "-1"],
        ),
        (
            "EMA decay above 1",
            f.train(&["--ema", "1.5"]),
            vec!["decay", "1.5"],
        ),
    ]
}

/// The recipe's flags, the device, unknown flags and config files.
fn recipe_rows(f: &Fixtures) -> Vec<Row> {
    vec![
        (
            "normalisation with a zero std",
            f.train(&["--normalize-mean", "0.5", "--normalize-std", "0"]),
            vec!["std", "0"],
        ),
        (
            "normalisation for 3 channels on 1",
            f.train(&[
                "--normalize-mean",
                "0.5,0.5,0.5",
                "--normalize-std",
                "0.2,0.2,0.2",
            ]),
            vec!["3", "1"],
        ),
        (
            "negative crop padding",
            f.train(&["--augment-crop", "-1"]),
            vec!["-1", "--augment-crop"],
        ),
        ("a bad device", f.train(&["--device", "tpu"]), vec!["tpu"]),
        (
            "a CUDA device index",
            f.train(&["--device", "cuda:99", "--max-steps", "1"]),
            vec!["CUDA"],
        ),
        (
            "unknown flag",
            cmd(&["train", "--no-such-flag"]),
            vec!["--no-such-flag"],
        ),
        (
            "a config file with a wrong type and an unknown key",
            cmd(&["train", "--config", &f.toml_bad]),
            vec!["three", "--epochs"],
        ),
        (
            "a missing config file",
            cmd(&["train", "--config", &f.missing]),
            vec!["nothing-here"],
        ),
    ]
}

/// Missing, truncated, foreign and mismatched checkpoints, and the commands that read them.
fn checkpoint_rows(f: &Fixtures) -> Vec<Row> {
    vec![
        (
            "resume from a missing checkpoint",
            f.train(&["--resume", &f.missing]),
            vec!["nothing-here"],
        ),
        (
            "resume from a truncated checkpoint",
            f.train(&["--resume", &f.cut]),
            vec!["cut.safetensors", "truncated"],
        ),
        (
            "resume with another model",
            cmd(&["train", "--resume", &f.ckpt, "--model", "seed-cnn"]),
            vec!["--model", "mlp"],
        ),
        (
            "eval of a file that is not a checkpoint",
            cmd(&["eval", "--checkpoint", &f.plain]),
            vec!["plain.safetensors"],
        ),
        (
            "eval of a checkpoint asking for a huge model",
            cmd(&["eval", "--checkpoint", &f.huge, "--data", &f.data]),
            vec!["widths", "1000000000000"],
        ),
        (
            "prune amount above 1",
            cmd(&[
                "prune",
                "--checkpoint",
                &f.ckpt,
                "--amount",
                "1.5",
                "--data",
                &f.data,
            ]),
            vec!["amount", "1.5"],
        ),
        (
            "quantize a missing checkpoint",
            cmd(&["quantize", "--checkpoint", &f.missing, "--out", &f.out]),
            vec!["nothing-here"],
        ),
        (
            "distill with alpha above 1",
            cmd(&[
                "distill",
                "--teacher",
                &f.ckpt,
                "--alpha",
                "2",
                "--data",
                &f.data,
            ]),
            vec!["alpha", "2"],
        ),
        (
            "distill with a zero temperature",
            cmd(&[
                "distill",
                "--teacher",
                &f.ckpt,
                "--temperature",
                "0",
                "--data",
                &f.data,
            ]),
            vec!["temperature", "0"],
        ),
    ]
}

/// The language-model commands.
fn lm_rows(f: &Fixtures) -> Vec<Row> {
    vec![
        (
            "train-lm on an empty corpus",
            cmd(&["train-lm", "--corpus", &f.corpus_empty, "--out", &f.out]),
            vec!["empty.txt"],
        ),
        (
            "train-lm with heads that do not divide the width",
            cmd(&[
                "train-lm", "--corpus", &f.corpus, "--out", &f.out, "--n-embd", "30", "--n-head",
                "4",
            ]),
            vec!["30", "4"],
        ),
        (
            "generate from a classifier checkpoint",
            cmd(&["generate", "--checkpoint", &f.ckpt]),
            vec!["checkpoint.safetensors"],
        ),
        (
            "generate with a negative temperature",
            cmd(&["generate", "--checkpoint", &f.ckpt, "--temperature", "-1"]),
            vec!["temperature -1"],
        ),
        (
            "generate with top-p above 1",
            cmd(&["generate", "--checkpoint", &f.ckpt, "--top-p", "1.5"]),
            vec!["top_p", "1.5"],
        ),
        (
            "generate from a missing model directory",
            cmd(&["generate", "--model-dir", &f.missing]),
            vec!["nothing-here"],
        ),
    ]
}

/// The other commands.
fn other_rows(f: &Fixtures) -> Vec<Row> {
    vec![
        (
            "embed from a directory without a model",
            cmd(&["embed", "--model-dir", &f.data]),
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
            cmd(&["dashboard", "--logdir", &f.missing, "--port", "0"]),
            vec!["nothing-here"],
        ),
    ]
}

/// Run every row; a description of each that exits 0, hangs, panics, lacks a needle or
/// says more than one line.
fn failed_rows(rows: &[Row]) -> Vec<String> {
    let mut failures = Vec::new();
    for (what, args, needles) in rows {
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
    failures
}

#[test]
fn every_bad_invocation_is_one_clear_line() {
    let dir = temp_dir("bad-input-cli");
    let f = Fixtures::new(&dir);
    let rows: Vec<Row> = [
        data_rows(&f),
        flag_rows(&f),
        recipe_rows(&f),
        checkpoint_rows(&f),
        lm_rows(&f),
        other_rows(&f),
    ]
    .concat();
    let failures = failed_rows(&rows);
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
