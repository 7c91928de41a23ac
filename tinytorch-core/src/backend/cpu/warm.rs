//! Keeping rayon's other compute threads awake between the ops of a step.
//!
//! A rayon worker with nothing to do yields a few dozen times and then sleeps on a futex; the
//! next op that splits its work must wake it (a system call on each side and a context
//! switch), and the split waits for it or runs alone. A small model's training step is a chain
//! of ops tens of microseconds apart: on a 2-core Xeon the MLP step of `tinytorch bench`
//! (784-128-10, batch 64) put its second thread to sleep and woke it about four times per
//! step, and `perf` charged a quarter of the step to the wake-ups and their context switches.
//! PyTorch's OpenMP threads spin for a while after each parallel region for the same reason.
//!
//! [`keep_warm`], called where ops allocate their outputs, makes sure that while ops come,
//! each other thread of the pool runs a *lingerer*: a rayon job that takes the pool's pending
//! work as it appears (`rayon::yield_now`) and spins in between, so that a split op finds its
//! helpers awake. A lingerer returns to rayon, which lets the thread sleep as before, once
//! [`LINGER`] has passed without work: an idle program spins for at most that long.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long a lingerer spins without finding work before it gives its thread back to rayon.
/// Longer than the gaps between the ops of a step (a few to tens of microseconds), short
/// enough that a program that stops computing stops spinning at once to a person.
pub const LINGER: Duration = Duration::from_micros(500);

/// Lingerers running or queued.
static LINGERING: AtomicUsize = AtomicUsize::new(0);

/// Lingerers that ran on a helper thread (for the tests).
#[cfg(test)]
static LINGERED: AtomicUsize = AtomicUsize::new(0);

/// Start lingerers on the pool's other threads unless they are running: one relaxed load
/// when they are. `TINYTORCH_SPIN=0` in the environment turns lingering off.
pub fn keep_warm() {
    let wanted = helpers();
    if wanted == 0 || LINGERING.load(Ordering::Relaxed) >= wanted {
        return;
    }
    let started = LINGERING.fetch_add(1, Ordering::AcqRel);
    if started >= wanted {
        LINGERING.fetch_sub(1, Ordering::AcqRel);
        return;
    }
    let spawner = rayon::current_thread_index();
    rayon::spawn(move || {
        // On the spawning thread itself (it popped its own job while waiting for others)
        // there is nobody to keep awake: return at once, so its wait goes on.
        if rayon::current_thread_index() != spawner {
            linger();
        }
        LINGERING.fetch_sub(1, Ordering::AcqRel);
    });
}

/// How many lingerers to keep: the pool's threads besides the caller's. None when the caller
/// is outside a pool (its ops hand their work to the pool and sleep anyway: see
/// `crate::parallel`), when lingering is off, or when the pool has one thread.
fn helpers() -> usize {
    // Checked first: `current_num_threads` on a thread outside every pool would build
    // rayon's global pool, which `parallel::use_current_thread` must build itself.
    if rayon::current_thread_index().is_none() {
        return 0;
    }
    static ENABLED: OnceLock<bool> = OnceLock::new();
    if !*ENABLED.get_or_init(|| std::env::var("TINYTORCH_SPIN").map_or(true, |v| v != "0")) {
        return 0;
    }
    rayon::current_num_threads() - 1
}

/// Run the pool's pending jobs as they come, spinning in between, until [`LINGER`] passes
/// without one.
fn linger() {
    #[cfg(test)]
    LINGERED.fetch_add(1, Ordering::Relaxed);
    let mut last = Instant::now();
    loop {
        match rayon::yield_now() {
            Some(rayon::Yield::Executed) => last = Instant::now(),
            _ => {
                for _ in 0..8 {
                    std::hint::spin_loop();
                }
                if last.elapsed() > LINGER {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spin_is_off() -> bool {
        std::env::var("TINYTORCH_SPIN").is_ok_and(|v| v == "0")
    }

    #[test]
    fn only_pool_threads_keep_helpers_awake() {
        if spin_is_off() {
            return;
        }
        // A test thread is outside every pool (and asking must not build the global one).
        assert_eq!(helpers(), 0);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        assert_eq!(pool.install(helpers), 2);
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        assert_eq!(one.install(helpers), 0);
    }

    #[test]
    fn lingerers_run_the_work_and_leave_when_it_stops() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let sums: Vec<u64> = pool.install(|| {
            keep_warm();
            // This thread does not look at its own queue while it waits here: the other
            // thread (woken by the spawn) must take the lingerer.
            let start = Instant::now();
            while !spin_is_off() && LINGERED.load(Ordering::Relaxed) == 0 {
                assert!(
                    start.elapsed() < Duration::from_secs(10),
                    "no helper lingered"
                );
                std::hint::spin_loop();
            }
            (0..200u64)
                .map(|k| {
                    keep_warm();
                    // A split whose halves the lingerer may take.
                    let (a, b) = rayon::join(|| (0..k).sum::<u64>(), || (k..2 * k).sum::<u64>());
                    a + b
                })
                .collect()
        });
        assert!((0..200u64).all(|k| sums[k as usize] == (0..2 * k).sum::<u64>()));
        // With no more work the lingerers return (other tests may start their own: wait for
        // a moment with none).
        let start = Instant::now();
        while LINGERING.load(Ordering::Acquire) != 0 {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "a lingerer never left"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}
