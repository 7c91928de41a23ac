//! Helpers shared by the command-line tests: run the binary, make a fresh scratch directory.

// Each test binary compiles this module and uses only some of it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// Run the `tinytorch` binary with `args`, capturing its output.
pub fn tinytorch(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tinytorch"))
        .args(args)
        .output()
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
