//! Memory statistics of tensor storage per device, as `torch.cuda.memory_allocated` and
//! `max_memory_allocated` count them: the bytes of every live tensor buffer (not the caching
//! allocators' spare buffers), and the high-water mark since the last
//! [`reset_peak_memory_stats`]. A buffer is counted from the moment a tensor first holds it
//! until its last handle drops; moving a tensor in place (`move_to_`) moves its bytes to
//! the new device.

use crate::base::Device;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Devices tracked: the CPU and up to this many GPUs (more are counted as the last one).
const MAX_GPUS: usize = 16;

struct Counter {
    now: AtomicUsize,
    peak: AtomicUsize,
}

#[allow(clippy::declare_interior_mutable_const)] // the initialiser of each array slot
const ZERO: Counter = Counter {
    now: AtomicUsize::new(0),
    peak: AtomicUsize::new(0),
};

/// Slot 0 the CPU, slot `1 + i` `cuda:i`.
static COUNTERS: [Counter; MAX_GPUS + 1] = [ZERO; MAX_GPUS + 1];

fn counter(device: Device) -> &'static Counter {
    match device {
        Device::Cpu => &COUNTERS[0],
        Device::Cuda(i) => &COUNTERS[1 + i.min(MAX_GPUS - 1)],
    }
}

/// `bytes` more of live tensor storage on `device`.
pub(crate) fn allocated(device: Device, bytes: usize) {
    let c = counter(device);
    let now = c.now.fetch_add(bytes, Ordering::Relaxed) + bytes;
    c.peak.fetch_max(now, Ordering::Relaxed);
}

/// `bytes` of live tensor storage on `device` freed.
pub(crate) fn freed(device: Device, bytes: usize) {
    // Saturating: a reset between a buffer's allocation and its release must not wrap.
    let _ = counter(device)
        .now
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
            Some(n.saturating_sub(bytes))
        });
}

/// Bytes of live tensor storage on `device` now (`torch.cuda.memory_allocated`).
pub fn memory_allocated(device: Device) -> usize {
    counter(device).now.load(Ordering::Relaxed)
}

/// The most bytes of live tensor storage `device` held at once since the program started
/// or [`reset_peak_memory_stats`] last ran (`torch.cuda.max_memory_allocated`).
pub fn max_memory_allocated(device: Device) -> usize {
    counter(device).peak.load(Ordering::Relaxed)
}

/// Start the high-water mark of `device` again from what it holds now
/// (`torch.cuda.reset_peak_memory_stats`), e.g. before each phase of a training step.
pub fn reset_peak_memory_stats(device: Device) {
    let c = counter(device);
    c.peak
        .store(c.now.load(Ordering::Relaxed), Ordering::Relaxed);
}

/// CPU bytes that are not tensor storage but belong in the statistics (an int8 layer's
/// packed weights and its scratch buffers), counted while this lives, so that the memory of a
/// model that is not made of tensors alone is measured like any other's.
#[derive(Debug)]
pub struct CountedBytes {
    bytes: usize,
}

impl CountedBytes {
    /// Count `bytes` of CPU memory until the guard drops.
    pub fn cpu(bytes: usize) -> CountedBytes {
        allocated(Device::Cpu, bytes);
        CountedBytes { bytes }
    }
}

impl Clone for CountedBytes {
    /// A clone counts the bytes once more (it stands for a copy of the memory).
    fn clone(&self) -> CountedBytes {
        CountedBytes::cpu(self.bytes)
    }
}

impl Drop for CountedBytes {
    fn drop(&mut self) {
        freed(Device::Cpu, self.bytes);
    }
}
