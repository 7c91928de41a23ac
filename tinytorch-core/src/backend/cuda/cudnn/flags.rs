//! The process-wide switches of `torch.backends.cudnn`, with PyTorch's defaults: `enabled`
//! (use cuDNN at all), `benchmark` (time the algorithms once per shape instead of asking
//! cuDNN's heuristic), `deterministic` (only algorithms that give bit-identical results run
//! to run) and `allow_tf32` (f32 convolutions may use TF32 tensor cores).
//!
//! They are atomics rather than a settings struct behind a lock because every convolution
//! reads them and programs set them once, at start; a convolution reads each flag once, so
//! a change takes effect from the next convolution on.

use std::sync::atomic::{AtomicBool, Ordering};

static ENABLED: AtomicBool = AtomicBool::new(true);
static BENCHMARK: AtomicBool = AtomicBool::new(false);
static DETERMINISTIC: AtomicBool = AtomicBool::new(false);
// True by default for convolutions, unlike matmul's (`torch.backends.cudnn.allow_tf32`).
static ALLOW_TF32: AtomicBool = AtomicBool::new(true);

/// Whether CUDA convolutions may run through cuDNN (`torch.backends.cudnn.enabled`,
/// default true). Off, they run as im2col + cuBLAS matmul.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Set [`enabled`].
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Whether the first convolution of each shape times cuDNN's algorithms
/// (`cudnnFind*AlgorithmEx`) and keeps the fastest (`torch.backends.cudnn.benchmark`,
/// default false: cuDNN's heuristic picks, without running anything).
pub fn benchmark() -> bool {
    BENCHMARK.load(Ordering::Relaxed)
}

/// Set [`benchmark`].
pub fn set_benchmark(on: bool) {
    BENCHMARK.store(on, Ordering::Relaxed);
}

/// Whether only deterministic cuDNN algorithms may run (`torch.backends.cudnn.deterministic`,
/// default false).
pub fn deterministic() -> bool {
    DETERMINISTIC.load(Ordering::Relaxed)
}

/// Set [`deterministic`].
pub fn set_deterministic(on: bool) {
    DETERMINISTIC.store(on, Ordering::Relaxed);
}

/// Whether f32 convolutions may use TF32 tensor cores (`torch.backends.cudnn.allow_tf32`,
/// default true, as in PyTorch; the matmul flag is separate and off by default).
pub fn allow_tf32() -> bool {
    ALLOW_TF32.load(Ordering::Relaxed)
}

/// Set [`allow_tf32`].
pub fn set_allow_tf32(on: bool) {
    ALLOW_TF32.store(on, Ordering::Relaxed);
}

/// The four flags as one convolution reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Flags {
    pub benchmark: bool,
    pub deterministic: bool,
    pub allow_tf32: bool,
}

impl Flags {
    /// The flags now (`enabled` is asked separately, before any cuDNN work).
    pub fn now() -> Flags {
        Flags {
            benchmark: benchmark(),
            deterministic: deterministic(),
            allow_tf32: allow_tf32(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test owns the process-wide flags (parallel tests must not race on them): PyTorch's
    /// defaults first, then each setter reaches its getter and `Flags::now`.
    #[test]
    fn the_flags_start_at_pytorchs_defaults_and_round_trip() {
        assert!(enabled() && !benchmark() && !deterministic() && allow_tf32());
        set_benchmark(true);
        set_deterministic(true);
        set_allow_tf32(false);
        set_enabled(false);
        assert_eq!(
            Flags::now(),
            Flags {
                benchmark: true,
                deterministic: true,
                allow_tf32: false
            }
        );
        assert!(!enabled());
        set_benchmark(false);
        set_deterministic(false);
        set_allow_tf32(true);
        set_enabled(true);
        assert!(enabled() && !benchmark() && !deterministic() && allow_tf32());
    }
}
