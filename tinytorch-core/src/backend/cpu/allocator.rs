//! A caching allocator for large CPU buffers.
//!
//! Large allocations come straight from the kernel (`mmap`): every fresh 64 MiB output costs
//! 16,384 page faults and the zeroing of every page before a kernel writes a byte, which on a
//! bandwidth-bound op costs more than the op itself. A training loop allocates the same sizes
//! step after step, so buffers of at least [`MIN_BYTES`] are kept when their tensor dies and
//! handed out again for the next request of the same dtype and length.
//!
//! A buffer is kept only while its size is in demand: the pool counts, for each dtype and
//! length, how many buffers [`take`] has handed out and not yet seen come back, and the most
//! ever out at once (the size's peak). A dying buffer is kept only if the free ones of its size
//! plus those still out stay below that peak, so a steady loop caches its own working set
//! and no more, and buffers made elsewhere (a `collect`, a `vec!`) in sizes nobody asks for go
//! straight back to the system. Without this bound a LeNet training run filled the cache to
//! its cap (RSS 1.25 GB against 211 MB uncached).
//!
//! The cache holds at most `TINYTORCH_CPU_CACHE_MB` mebibytes (default 1024); beyond that the
//! oldest buffers are freed. [`empty_cache`] frees everything (as `torch.cuda.empty_cache`
//! does for the GPU). Buffers come back with stale contents: callers either write every
//! element ([`take`]) or ask for zeros ([`zeros`]).

use super::{CpuElement, CpuStorage};
use crate::backend::BackendStorage;
use crate::base::{DType, Device, Element};
use crate::error::{Error, Result};
use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Buffers smaller than this are left to the system allocator, which recycles them cheaply.
/// glibc serves requests from 128 KiB up with a fresh `mmap` (its default threshold), so each
/// costs page faults and zeroing: a data loader's 200 KB batch of 64 Fashion-MNIST images
/// did, once per step, before the bound came down from 256 KiB.
pub const MIN_BYTES: usize = 128 << 10;

/// Elements the buffer has room for.
fn capacity(s: &CpuStorage) -> usize {
    crate::with_cpu_storage!(s, v => v.capacity())
}

/// Bytes of the buffer's allocation.
fn capacity_bytes(s: &CpuStorage) -> usize {
    capacity(s) * s.dtype().size_in_bytes()
}

/// A buffer size: element type and length.
type Key = (DType, usize);

/// How one buffer size is used: what bounds the free buffers the pool keeps of it.
#[derive(Default)]
struct Demand {
    /// Buffers of this size handed out by `take` and not yet come back (approximate: a
    /// buffer made elsewhere that dies also counts as one coming back).
    out: usize,
    /// The most ever out at once.
    peak: usize,
    /// Free buffers of this size in the pool.
    free: usize,
}

/// Free buffers, oldest first, and their total size against a limit. Requests are served
/// from the newest end, evictions from the oldest.
struct Pool {
    free: VecDeque<CpuStorage>,
    demand: HashMap<Key, Demand>,
    bytes: usize,
    limit: usize,
}

fn key(s: &CpuStorage) -> Key {
    (s.dtype(), capacity(s))
}

impl Pool {
    fn new(limit: usize) -> Self {
        Pool {
            free: VecDeque::new(),
            demand: HashMap::new(),
            bytes: 0,
            limit,
        }
    }

    /// Record a request for a buffer of `dtype` and `n` elements, served from the pool or not.
    fn note_request(&mut self, dtype: DType, n: usize) {
        let d = self.demand.entry((dtype, n)).or_default();
        d.out += 1;
        d.peak = d.peak.max(d.out);
    }

    /// Forget one free buffer of `s`'s size (taken or evicted).
    fn note_removed(&mut self, s: &CpuStorage) {
        self.bytes -= capacity_bytes(s);
        if let Some(d) = self.demand.get_mut(&key(s)) {
            d.free -= 1;
        }
    }

    /// A free buffer of `dtype` with room for exactly `n` elements: the one freed last, whose
    /// lines are the likeliest to be in cache. (Handing out the oldest made a loop that frees
    /// and asks for one size cycle through every cached buffer of that size: ten 4 MB
    /// buffers are more than the last-level cache holds.)
    fn take(&mut self, dtype: DType, n: usize) -> Option<CpuStorage> {
        self.note_request(dtype, n);
        let i = self
            .free
            .iter()
            .rposition(|s| s.dtype() == dtype && capacity(s) == n)?;
        let s = self.free.remove(i)?;
        self.note_removed(&s);
        Some(s)
    }

    /// Keep `s` if it is large enough and its size in demand; returns the buffers to free
    /// (the oldest ones beyond the limit, or `s` itself), for the caller to drop outside the
    /// lock.
    fn put(&mut self, s: CpuStorage) -> Vec<CpuStorage> {
        let bytes = capacity_bytes(&s);
        if bytes < MIN_BYTES || bytes > self.limit {
            return vec![s];
        }
        let Some(d) = self.demand.get_mut(&key(&s)) else {
            return vec![s]; // a size nobody has asked the pool for
        };
        d.out = d.out.saturating_sub(1);
        if d.free + d.out >= d.peak {
            return vec![s]; // enough of this size kept for the most ever out at once
        }
        d.free += 1;
        self.bytes += bytes;
        self.free.push_back(s);
        let mut evicted = Vec::new();
        while self.bytes > self.limit {
            let old = self.free.pop_front().expect("bytes > 0 implies a buffer");
            self.note_removed(&old);
            evicted.push(old);
        }
        evicted
    }
}

fn global() -> MutexGuard<'static, Pool> {
    static POOL: OnceLock<Mutex<Pool>> = OnceLock::new();
    let pool = POOL.get_or_init(|| {
        let mb = std::env::var("TINYTORCH_CPU_CACHE_MB")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(1024);
        Mutex::new(Pool::new(mb << 20))
    });
    // Every mutation is a push or remove plus its byte count, so a pool whose lock was
    // poisoned by a panic elsewhere is still consistent.
    pool.lock().unwrap_or_else(|e| e.into_inner())
}

/// An empty Vec with room for exactly `n` elements, reusing a cached buffer when one of that
/// dtype and length is free. The caller fills it.
///
/// For a kernel's output or scratch: when the system refuses the memory this panics with
/// [`Error::OutOfMemory`]'s message instead of aborting the process as `Vec::with_capacity`
/// does (the Python bindings raise the panic as a `RuntimeError`). Creation functions use
/// [`try_take`], which returns the error.
pub fn take<T: CpuElement>(n: usize) -> Vec<T> {
    try_take(n).unwrap_or_else(|e| panic!("{e}"))
}

/// [`take`] that returns [`Error::OutOfMemory`] when the system allocator refuses (or when
/// `n` elements of `T` are more bytes than an address holds).
pub fn try_take<T: CpuElement>(n: usize) -> Result<Vec<T>> {
    // An op is starting: its splits will want the other compute threads awake.
    super::warm::keep_warm();
    let bytes = bytes_of::<T>(n)?;
    if bytes >= MIN_BYTES {
        // Counts the request even when it misses, so the buffer made below is kept when it dies.
        let hit = global().take(<T as Element>::DTYPE, n);
        if let Some(Ok(mut v)) = hit.map(T::from_storage) {
            v.clear();
            return Ok(v);
        }
    }
    let mut v = Vec::new();
    // try_reserve_exact: `Vec::with_capacity` calls `handle_alloc_error`, which aborts.
    v.try_reserve_exact(n)
        .map_err(|_| Error::out_of_memory(Device::Cpu, <T as Element>::DTYPE, n))?;
    advise_huge_pages(&v);
    Ok(v)
}

/// Bytes of `n` elements of `T`, or the out-of-memory error when no allocation can be that
/// large (Rust's allocations stop at `isize::MAX` bytes).
fn bytes_of<T: CpuElement>(n: usize) -> Result<usize> {
    n.checked_mul(std::mem::size_of::<T>())
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(|| Error::out_of_memory(Device::Cpu, <T as Element>::DTYPE, n))
}

/// Buffers from this size up are backed by 2 MiB pages where the kernel allows it.
#[cfg(target_os = "linux")]
const HUGE_PAGE_MIN_BYTES: usize = 4 << 20;

/// Ask Linux to back a fresh, untouched allocation with transparent huge pages (2 MiB)
/// where its 2 MiB-aligned stretches allow. The system allocator maps large buffers with
/// 4 KiB pages: streaming over a 12.8 MB tensor then takes a TLB miss and page walk every
/// 4 KiB and, the first time, a page fault every 4 KiB. Distributions that set THP to
/// `madvise` (the default of many) give huge pages only to ranges advised so; with `always`
/// this changes nothing, with `never` it is ignored.
#[cfg(target_os = "linux")]
fn advise_huge_pages<T>(v: &Vec<T>) {
    let bytes = v.capacity() * std::mem::size_of::<T>();
    if bytes < HUGE_PAGE_MIN_BYTES {
        return;
    }
    const PAGE: usize = 4096;
    let start = (v.as_ptr() as usize).next_multiple_of(PAGE);
    let end = (v.as_ptr() as usize + bytes) / PAGE * PAGE;
    if end > start {
        // SAFETY: the range lies inside the Vec's own allocation; MADV_HUGEPAGE is a hint
        // that changes no contents, and a refusal (e.g. THP compiled out) is harmless, so
        // its result is ignored.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

/// Other systems: nothing to advise.
#[cfg(not(target_os = "linux"))]
fn advise_huge_pages<T>(_: &Vec<T>) {}

/// `n` zeros, in a cached buffer when one fits. Panics where [`take`] does.
pub fn zeros<T: CpuElement>(n: usize) -> Vec<T> {
    try_zeros(n).unwrap_or_else(|e| panic!("{e}"))
}

/// [`zeros`] that returns [`Error::OutOfMemory`] when the memory is not there.
pub fn try_zeros<T: CpuElement>(n: usize) -> Result<Vec<T>> {
    let mut v = try_take::<T>(n)?;
    v.resize(n, T::zero());
    Ok(v)
}

/// `n` initialised elements of unspecified value: a cached buffer's stale contents, or zeros
/// when none is free. For scratch space whose every element the caller writes before it
/// reads it, without the memset of [`zeros`] (5-7% of a 512-channel Winograd convolution).
pub fn scratch<T: CpuElement>(n: usize) -> Vec<T> {
    let bytes = bytes_of::<T>(n).unwrap_or_else(|e| panic!("{e}"));
    if bytes >= MIN_BYTES {
        let hit = global().take(<T as Element>::DTYPE, n);
        if let Some(Ok(mut v)) = hit.map(T::from_storage) {
            // A cached buffer is as long as its capacity unless its tensor was shorter.
            if v.len() != n {
                v.clear();
                v.resize(n, T::zero());
            }
            return v;
        }
    }
    // Fresh zeroed memory comes from the kernel as zero pages, without a memset.
    zeroed(n).unwrap_or_else(|e| panic!("{e}"))
}

/// `n` zeros in fresh memory from `alloc_zeroed` (calloc: zero pages from the kernel, no
/// memset), as `vec![T::zero(); n]` gets it, but with an error where that would abort.
fn zeroed<T: CpuElement>(n: usize) -> Result<Vec<T>> {
    let oom = || Error::out_of_memory(Device::Cpu, <T as Element>::DTYPE, n);
    let layout = std::alloc::Layout::array::<T>(n).map_err(|_| oom())?;
    if layout.size() == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: the layout has a non-zero size.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
    if ptr.is_null() {
        return Err(oom());
    }
    // SAFETY: `ptr` comes from the global allocator with `Layout::array::<T>(n)`, the layout
    // a Vec of capacity `n` frees with; all-zero bytes are a valid `T` for every element
    // type (false, 0, +0.0), and that value is `T::zero()`.
    Ok(unsafe { Vec::from_raw_parts(ptr, n, n) })
}

/// Keep the buffer of a dying storage for reuse (large buffers only, within the limit).
/// Foreign memory goes back to its owner, never into the pool.
pub fn recycle(s: CpuStorage) {
    if capacity_bytes(&s) < MIN_BYTES || crate::with_cpu_storage!(&s, v => v.is_foreign()) {
        return; // small: back to the system allocator without taking the lock
    }
    let freed = global().put(s);
    drop(freed);
}

/// Bytes held by the cache now.
pub fn cached_bytes() -> usize {
    global().bytes
}

/// Free every cached buffer.
pub fn empty_cache() {
    let freed: Vec<CpuStorage> = {
        let mut p = global();
        p.bytes = 0;
        p.demand.values_mut().for_each(|d| d.free = 0);
        p.free.drain(..).collect()
    };
    drop(freed);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_buffer(n: usize) -> CpuStorage {
        CpuStorage::F32(vec![1.0; n].into())
    }

    fn ptr(s: &CpuStorage) -> *const f32 {
        s.as_slice::<f32>().unwrap().as_ptr()
    }

    #[test]
    fn a_freed_buffer_is_handed_out_again_for_the_same_dtype_and_length() {
        let n = MIN_BYTES / 4 + 17;
        let mut p = Pool::new(1 << 30);
        assert!(p.take(DType::F32, n).is_none(), "a first request misses");
        let s = f32_buffer(n);
        let first = ptr(&s);
        assert!(p.put(s).is_empty());
        assert_eq!(p.bytes, n * 4);
        assert!(p.take(DType::F32, n + 1).is_none());
        assert!(p.take(DType::I64, n).is_none());
        let again = p.take(DType::F32, n).unwrap();
        assert_eq!(ptr(&again), first);
        assert_eq!(p.bytes, 0);
    }

    #[test]
    fn the_buffer_freed_last_is_handed_out_first() {
        let n = MIN_BYTES / 4 + 3;
        let mut p = Pool::new(1 << 30);
        p.take(DType::F32, n);
        p.take(DType::F32, n);
        let (a, b) = (f32_buffer(n), f32_buffer(n));
        let (pa, pb) = (ptr(&a), ptr(&b));
        p.put(a);
        p.put(b);
        let first = p.take(DType::F32, n).unwrap();
        assert_eq!(ptr(&first), pb);
        p.put(first);
        // Taken and freed again, b is still the newest; a comes last.
        let order: Vec<_> = (0..2)
            .map(|_| ptr(&p.take(DType::F32, n).unwrap()))
            .collect();
        assert_eq!(order, [pb, pa]);
    }

    #[test]
    fn small_buffers_and_sizes_nobody_asked_for_are_not_kept() {
        let n = MIN_BYTES / 4;
        let mut p = Pool::new(1 << 30);
        p.take(DType::F32, 16);
        assert_eq!(p.put(f32_buffer(16)).len(), 1, "small");
        assert_eq!(p.put(f32_buffer(n)).len(), 1, "never requested");
        p.take(DType::F32, n);
        assert_eq!(
            p.put(CpuStorage::I64(vec![0; n].into())).len(),
            1,
            "other dtype"
        );
        assert!(p.put(f32_buffer(n)).is_empty());
        assert_eq!(p.bytes, n * 4);
    }

    #[test]
    fn the_oldest_go_beyond_the_limit() {
        let n = MIN_BYTES / 4;
        let mut p = Pool::new(2 * n * 4);
        p.take(DType::F32, n);
        p.take(DType::F32, n);
        p.take(DType::I64, n / 2);
        assert!(p.put(f32_buffer(n)).is_empty());
        assert!(p.put(CpuStorage::I64(vec![0; n / 2].into())).is_empty());
        let evicted = p.put(f32_buffer(n));
        assert_eq!(evicted.len(), 1);
        assert_eq!(evicted[0].dtype(), DType::F32);
        assert_eq!(p.bytes, 2 * n * 4);
        p.take(DType::F32, 3 * n);
        assert_eq!(
            p.put(f32_buffer(3 * n)).len(),
            1,
            "larger than the whole limit"
        );
    }

    #[test]
    fn a_steady_loop_keeps_no_more_than_its_peak_working_set() {
        // Each step takes three buffers of one size, and something else (a `collect`, say)
        // makes two more of that size; all five die at the end of the step.
        let n = MIN_BYTES / 4 + 5;
        let mut p = Pool::new(1 << 30);
        for step in 0..50 {
            let mut live: Vec<CpuStorage> = (0..3)
                .map(|_| p.take(DType::F32, n).unwrap_or_else(|| f32_buffer(n)))
                .collect();
            live.extend((0..2).map(|_| f32_buffer(n)));
            for s in live {
                p.put(s);
            }
            assert!(p.bytes <= 3 * n * 4, "step {step}: {} bytes kept", p.bytes);
        }
        assert_eq!(p.bytes, 3 * n * 4, "the working set stays cached");
    }

    #[test]
    fn take_reuses_through_the_global_pool() {
        // A length no other test asks for, so parallel tests do not take this buffer.
        let n = MIN_BYTES / 8 + 1231;
        let v = take::<f64>(n);
        let v = [v, vec![2.0; n]].concat(); // a buffer of the same size made elsewhere
        let ptr = v.as_ptr();
        recycle(CpuStorage::F64(v.into()));
        let again = take::<f64>(n);
        assert_eq!((again.as_ptr(), again.len(), again.capacity()), (ptr, 0, n));
        recycle(CpuStorage::F64(again.into()));
        let z = zeros::<f64>(n);
        assert!(z.iter().all(|&x| x == 0.0));
    }

    #[test]
    fn an_allocation_the_system_refuses_is_an_error_not_an_abort() {
        // 4e18 bytes: below isize::MAX, so it reaches the system allocator, which refuses
        // (no machine has 3.5 EiB); Vec::with_capacity would abort the process here.
        let n = 1_000_000_000_000_000_000usize;
        let e = try_take::<f32>(n).unwrap_err();
        assert!(
            matches!(e, Error::OutOfMemory { device: Device::Cpu, bytes } if bytes == 4 * n as u128),
            "{e}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains("not enough memory: you tried to allocate 4000000000000000000 bytes"),
            "{msg}"
        );
        assert!(try_zeros::<f64>(n).is_err());
        assert!(zeroed::<f64>(n).is_err());
        let panic = std::panic::catch_unwind(|| take::<f32>(n)).unwrap_err();
        let text = panic.downcast_ref::<String>().unwrap();
        assert!(text.contains("you tried to allocate"), "{text}");
    }

    #[test]
    fn a_byte_count_that_overflows_is_an_error_naming_the_bytes_asked_for() {
        let n = usize::MAX / 2;
        match try_take::<f64>(n).unwrap_err() {
            Error::OutOfMemory { bytes, .. } => assert_eq!(bytes, n as u128 * 8),
            e => panic!("{e}"),
        }
        assert!(zeroed::<f64>(n).is_err());
        // An empty request needs no memory.
        assert!(try_zeros::<f64>(0).unwrap().is_empty());
        assert!(zeroed::<f32>(0).unwrap().is_empty());
    }

    #[test]
    fn scratch_hands_out_a_cached_buffer_whole_with_its_contents() {
        // Lengths no other test asks for.
        let n = MIN_BYTES / 8 + 1237;
        let fresh = scratch::<f64>(n);
        assert_eq!(fresh.len(), n);
        assert!(fresh.iter().all(|&x| x == 0.0), "fresh memory is zeroed");
        let v = vec![3.0; n];
        let ptr = v.as_ptr();
        recycle(CpuStorage::F64(v.into()));
        let again = scratch::<f64>(n);
        assert_eq!((again.as_ptr(), again.len()), (ptr, n));
        assert!(again.iter().all(|&x| x == 3.0), "no memset");
        // A cached buffer whose tensor was shorter than its capacity is filled up.
        let m = MIN_BYTES / 8 + 1239;
        let mut short = Vec::with_capacity(m);
        short.resize(m - 5, 1.0f64);
        let _ = take::<f64>(m); // demand for the size, so the pool keeps it
        recycle(CpuStorage::F64(short.into()));
        let filled = scratch::<f64>(m);
        assert_eq!(filled.len(), m);
    }
}
