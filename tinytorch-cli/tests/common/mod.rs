//! Helpers shared by the command-line tests: run the binary, make a fresh scratch directory.

// Each test binary compiles this module and uses only some of it.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// Run the `tinytorch` binary with `args`, capturing its output.
pub fn tinytorch(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tinytorch"))
        .args(args)
        .output()
        .expect("run tinytorch")
}

/// Run the `tinytorch` binary with `args`, which must fail; returns its standard error.
#[track_caller]
pub fn tinytorch_fails(args: &[&str]) -> String {
    let o = tinytorch(args);
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        !o.status.success(),
        "tinytorch {args:?} succeeded: {stderr}"
    );
    stderr
}

/// Start the `tinytorch` binary with `args`, `stdin` and `stdout`; its standard error is
/// piped.
pub fn spawn_tinytorch(
    args: impl IntoIterator<Item = impl AsRef<OsStr>>,
    stdin: Stdio,
    stdout: Stdio,
) -> Child {
    Command::new(env!("CARGO_BIN_EXE_tinytorch"))
        .args(args)
        .stdin(stdin)
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .expect("run tinytorch")
}

/// An empty directory `tinytorch-{name}-{pid}` under the system's temporary directory (a
/// leftover of an earlier run is removed first).
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tinytorch-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// An IDX file: magic (two zero bytes, type 0x08 = u8, number of dims), big-endian dims, data.
pub fn write_idx(path: &Path, dims: &[u32], data: &[u8]) {
    let mut bytes = vec![0, 0, 0x08, dims.len() as u8];
    for d in dims {
        bytes.extend_from_slice(&d.to_be_bytes());
    }
    bytes.extend_from_slice(data);
    std::fs::write(path, bytes).unwrap();
}

/// A learnable MNIST-format data set: the label says which of ten 7x7 cells is bright.
pub fn synthetic_mnist(dir: &Path) {
    for (split, n) in [("train", 256u32), ("t10k", 64)] {
        let mut images = Vec::new();
        let mut labels = Vec::new();
        for i in 0..n {
            let label = (i * 7 + i / 10) % 10;
            labels.push(label as u8);
            let (cy, cx) = ((label / 4) * 7, (label % 4) * 7);
            for y in 0..28u32 {
                for x in 0..28u32 {
                    let inside = (cy..cy + 7).contains(&y) && (cx..cx + 7).contains(&x);
                    let noise = ((i * 31 + y * 28 + x).wrapping_mul(2654435761) >> 24) as u8 / 4;
                    images.push(if inside { 200 + noise / 2 } else { noise });
                }
            }
        }
        write_idx(
            &dir.join(format!("{split}-images-idx3-ubyte")),
            &[n, 28, 28],
            &images,
        );
        write_idx(
            &dir.join(format!("{split}-labels-idx1-ubyte")),
            &[n],
            &labels,
        );
    }
}

pub fn last_json(out: &Output) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "failed:\n{stdout}\n{stderr}");
    let last = stdout.lines().last().expect("some output");
    serde_json::from_str(last).unwrap_or_else(|e| panic!("last line is not JSON ({e}): {last}"))
}

/// `train` of the mlp on the synthetic MNIST set in `data` (SGD with momentum, batch 16),
/// writing to `out`, with the final JSON line.
pub fn train_args<'a>(data: &'a str, out: &'a str) -> Vec<&'a str> {
    vec![
        "train",
        "--dataset",
        "mnist",
        "--data",
        data,
        "--model",
        "mlp",
        "--batch-size",
        "16",
        "--lr",
        "0.1",
        "--optimizer",
        "sgd",
        "--momentum",
        "0.9",
        "--seed",
        "3",
        "--out",
        out,
        "--json",
    ]
}
