//! Where CPU work runs. Every parallel CPU kernel splits its work over rayon's global pool
//! (`RAYON_NUM_THREADS` threads). Called from a thread outside the pool (a program's main
//! thread), each such kernel hands its work to the pool and puts the caller to sleep until
//! it is done: a futex wake-up and a context switch in both directions per op, tens of
//! microseconds on a busy 2-core machine, which is most of the time of a small model's step.
//! [`run`] moves a whole sequence of ops onto a pool thread instead, so that the kernels
//! inside split their work in place. `Tensor::backward` (through a graph of a few nodes or
//! more: moving costs one hand-off) and every optimizer's `step` use it, and so does
//! `train::train_step`; wrap a hand-written training step in it to cover the forward too.
//!
//! A program can do better by calling [`use_current_thread`] first thing in `main`: its main
//! thread then becomes compute thread 0 of the pool (as OpenMP's master thread is in
//! PyTorch), every op called from it splits its work in place, and [`run`] costs nothing.

use crate::amp::autocast::{autocast_dtype, set_autocast_dtype};
use crate::autograd::{is_grad_enabled, set_grad_enabled};
use crate::Device;

/// Run `f` on one of the CPU compute threads and return its result. The caller's grad mode
/// and autocast state hold inside `f` (they are per thread). On a thread of a rayon pool
/// already (inside `run`, or in a pool the program built and installed), `f` runs in place.
pub fn run<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() {
        return f();
    }
    let grad = is_grad_enabled();
    let cast = autocast_dtype();
    // `rayon::scope` runs its closure on a pool thread and blocks the caller once for all of
    // it; the scope spawns nothing.
    rayon::scope(|_| {
        let _grad = set_grad_enabled(grad);
        let _cast = set_autocast_dtype(cast);
        f()
    })
}

/// Make the calling thread compute thread 0 of rayon's global pool, which gets
/// `RAYON_NUM_THREADS` threads in all (default: one per core), this one included. Ops called
/// from this thread then run their parallel kernels in place, sharing the work with the other
/// compute threads, instead of handing each kernel to the pool and sleeping until it is done.
/// Call it at the start of `main`, before anything uses rayon, from a thread that lives as
/// long as the program (the main thread): the pool is built once per process, so a later
/// call, or one after the pool was started, returns an error and changes nothing.
///
/// Returns `Ok(false)`, and leaves the pool alone, when it would have no thread but this one:
/// then work that other threads (a `DataLoader`'s workers) hand to the pool could not run
/// while this thread waits for them outside rayon.
pub fn use_current_thread() -> crate::Result<bool> {
    let threads = std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if threads < 2 {
        return Ok(false);
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .use_current_thread()
        .build_global()
        .map_err(|e| {
            crate::Error::invalid(
                "parallel::use_current_thread",
                format!("rayon's global pool is already built: {e}"),
            )
        })?;
    Ok(true)
}

/// [`run`] for work on `device`: CPU work moves to a compute thread, CUDA work stays on the
/// calling thread (the one whose device context is current).
pub fn run_for<R: Send>(device: Device, f: impl FnOnce() -> R + Send) -> R {
    if device.is_cpu() {
        run(f)
    } else {
        f()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DType, Device, Tensor};

    #[test]
    fn runs_on_a_pool_thread_with_the_callers_modes() {
        let outside = rayon::current_thread_index();
        let _no_grad = crate::no_grad();
        let _cast = crate::amp::autocast(DType::BF16).unwrap();
        let (index, grad, cast) = run(|| {
            (
                rayon::current_thread_index(),
                is_grad_enabled(),
                autocast_dtype(),
            )
        });
        // Test threads are not pool threads, so `run` must have moved.
        assert!(outside.is_none() && index.is_some());
        assert!(!grad);
        assert_eq!(cast, Some(DType::BF16));
        // Nested calls run in place.
        assert!(run(
            || run(rayon::current_thread_index) == rayon::current_thread_index()
        ));
    }

    #[test]
    fn ops_inside_match_ops_outside() {
        let a = Tensor::rand(&[300, 200], DType::F32, Device::Cpu).unwrap();
        let b = Tensor::rand(&[200, 100], DType::F32, Device::Cpu).unwrap();
        let outside = a.matmul(&b).unwrap().relu().unwrap();
        let inside = run(|| a.matmul(&b).unwrap().relu().unwrap());
        assert_eq!(
            outside.to_vec::<f32>().unwrap(),
            inside.to_vec::<f32>().unwrap()
        );
    }
}
