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

/// The largest absolute difference between two tensors of the same shape, in f64; NaN
/// where either has a NaN the other has not at the same place.
pub fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
    assert_eq!(a.shape(), b.shape());
    let (a, b) = (a.to_vec_f64().unwrap(), b.to_vec_f64().unwrap());
    a.iter()
        .zip(&b)
        .map(|(x, y)| match (x.is_nan(), y.is_nan()) {
            (true, true) => 0.0,
            (false, false) => (x - y).abs(),
            _ => f64::NAN,
        })
        .fold(0.0, |m, d| {
            if d.is_nan() || m.is_nan() {
                f64::NAN
            } else {
                m.max(d)
            }
        })
}

/// Puts a buffer of `len` NaNs of `dtype` (f32 or f64) into the CPU allocator's cache, where
/// the next kernel asking for that many elements gets it: a kernel that skips the memset of
/// a buffer it does not wholly write then shows NaNs.
pub fn poison_cached_buffer(dtype: tinytorch::DType, len: usize) {
    use tinytorch::backend::cpu::{allocator, CpuStorage};
    let bytes = len * dtype.size_in_bytes();
    assert!(
        bytes >= allocator::MIN_BYTES,
        "{bytes} bytes: the cache keeps only buffers of at least {}",
        allocator::MIN_BYTES
    );
    // Asked for once, the size is in demand, so the cache keeps the buffer handed back.
    let storage = match dtype {
        tinytorch::DType::F64 => {
            let mut v = allocator::take::<f64>(len);
            v.resize(len, f64::NAN);
            CpuStorage::from_vec(v)
        }
        _ => {
            let mut v = allocator::take::<f32>(len);
            v.resize(len, f32::NAN);
            CpuStorage::from_vec(v)
        }
    };
    allocator::recycle(storage);
}
