//! What several test binaries share (a module of each, not a test binary of its own).
// Each binary uses some of these helpers, not all.
#![allow(dead_code)]

use std::sync::{Mutex, MutexGuard};
use tinytorch::Tensor;

/// The turn of a GPU test: where `available` is false, `None` after printing `skipped: no
/// CUDA device` and `missing` (the GPU bundle's run.sh counts those lines); else the lock
/// that makes the binary's GPU tests take the device in turn (they share its error flag and
/// allocation counter).
pub fn gpu_turn(available: bool, missing: &str) -> Option<MutexGuard<'static, ()>> {
    static SERIAL: Mutex<()> = Mutex::new(());
    if !available {
        println!("skipped: no CUDA device{missing}");
        return None;
    }
    // A test that failed while holding the lock leaves it poisoned; the next still runs.
    Some(SERIAL.lock().unwrap_or_else(|e| e.into_inner()))
}

/// The largest absolute difference between two tensors of the same shape, in f64.
pub fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
    assert_eq!(a.shape(), b.shape());
    let (a, b) = (a.to_vec_f64().unwrap(), b.to_vec_f64().unwrap());
    a.iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}
