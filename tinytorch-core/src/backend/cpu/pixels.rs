//! u8 pixels to f32 in [0, 1] as rows are gathered: a data loader's batch of images read
//! from a u8 set and scaled (`ToTensor`) in one pass.
//!
//! The rows are scattered over the whole set (random batches): their cache lines are all
//! requested first so that the misses overlap instead of one row's latency after another,
//! then each row is scaled 16 pixels an instruction into a pooled buffer. On a loader
//! thread the calling thread does it alone (the compute pool is running the step); called
//! from a compute thread (`num_workers=0`, the batch built between steps) the rows are
//! shared out over the pool, which has nothing else to do then (`tinytorch train --model
//! mlp`'s wait for a batch: 19-26 us a step against 26-39 us on one thread). On the AMD
//! EPYC (batches of 64 Fashion-MNIST images, medians of 2,000): 16-19 us against 20-21 us
//! for an f32 gather on two threads; 8 us against 17 us when the rows are in cache.

use super::strided::{wide, Loop};
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Pixels below which a batch is gathered on the calling thread even from the pool.
const PARALLEL_PIXELS: usize = 1 << 14;

/// Rows `rows` of `pixels` (rows of `row_len` elements), each pixel divided by 255 in f32,
/// in the order listed. Every index must be below `pixels.len() / row_len`.
pub(crate) fn gather_rows_scaled(pixels: &[u8], row_len: usize, rows: &[usize]) -> Vec<f32> {
    let n = rows.len() * row_len;
    let mut out = super::allocator::take::<f32>(n);
    let spare = &mut out.spare_capacity_mut()[..n];
    let threads = rayon::current_num_threads();
    if row_len > 0 && n >= PARALLEL_PIXELS && threads > 1 && rayon::current_thread_index().is_some()
    {
        let per_task = rows.len().div_ceil(threads);
        spare
            .par_chunks_mut(per_task * row_len)
            .zip(rows.par_chunks(per_task))
            .for_each(|(dst, rows)| gather_into(pixels, row_len, rows, dst));
    } else {
        gather_into(pixels, row_len, rows, spare);
    }
    // SAFETY: each of the rows wrote its `row_len` elements (none when `row_len` is 0).
    unsafe { out.set_len(n) };
    out
}

/// [`gather_rows_scaled`] of `rows` into `dst` (`rows.len() * row_len` elements).
fn gather_into(pixels: &[u8], row_len: usize, rows: &[usize], dst: &mut [MaybeUninit<f32>]) {
    #[cfg(target_arch = "x86_64")]
    for &i in rows {
        for line in pixels[i * row_len..(i + 1) * row_len].chunks(64) {
            // SAFETY: a prefetch is a hint; the address is inside `pixels`. T1 (into L2, not
            // L1): more of those misses stay in flight, and 64 rows of 784 bytes are more
            // than L1 holds anyway. AMD EPYC, a batch of 64 Fashion-MNIST images on one
            // thread (a loader worker's case): 12.3-12.7 us against 18.6-18.9 us with T0 in
            // 2 of 3 alternating runs (19.1 and 23.6 in the third); shared over two threads,
            // 16-17 us either way.
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
                _mm_prefetch::<_MM_HINT_T1>(line.as_ptr().cast());
            }
        }
    }
    for (dst, &i) in dst.chunks_exact_mut(row_len.max(1)).zip(rows) {
        let src = &pixels[i * row_len..(i + 1) * row_len];
        wide(Scale { dst, src });
    }
}

/// `dst[i] = src[i] / 255` in f32: the division of `x.float() / 255` (a multiplication by
/// 1/255 rounds differently), in `wide`'s AVX-512 copy where the CPU has it (16 quotients an
/// instruction; 4 in the SSE2 baseline, where 50,000 of them took longer than the gather).
struct Scale<'a> {
    dst: &'a mut [MaybeUninit<f32>],
    src: &'a [u8],
}

impl Loop for Scale<'_> {
    #[inline(always)]
    fn run(self) {
        for (d, &p) in self.dst.iter_mut().zip(self.src) {
            d.write(p as f32 / 255.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_shared_out_over_the_pool_give_the_serial_bits() {
        // 61 rows of 400 pixels (24,400, above PARALLEL_PIXELS): split over a 2-thread
        // pool in uneven pieces, gathered on a test thread in one.
        let pixels: Vec<u8> = (0..100 * 400).map(|i| (i * 7 % 256) as u8).collect();
        let rows: Vec<usize> = (0..61).map(|i| (i * 37) % 100).collect();
        let serial = gather_rows_scaled(&pixels, 400, &rows);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let pooled = pool.install(|| gather_rows_scaled(&pixels, 400, &rows));
        assert!(rows.len() * 400 >= PARALLEL_PIXELS);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&pooled), bits(&serial));
        assert_eq!(serial[400], pixels[rows[1] * 400] as f32 / 255.0);
    }
}
