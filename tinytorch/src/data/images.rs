//! [`U8Images`]: images kept as their u8 pixels and scaled to f32 in [0, 1] as a batch is
//! gathered, `ToTensor`'s scaling fused into the gather.
//!
//! An epoch of a small model is bound by how fast batches arrive. Stored as f32, a batch of
//! 64 Fashion-MNIST images is a 200 KB gather from a 188 MB array, spread over the thread
//! pool that runs the training step. Kept as u8 the array is 47 MB and a batch reads 50 KB:
//! the rows' cache lines are all requested first (random rows otherwise wait for one
//! another's misses), then each row is scaled 16 pixels an instruction into the batch's
//! pooled buffer, on the loading thread alone. On the AMD EPYC (random batches, medians of
//! 2,000): 16-19 us against 20-21 us for the f32 gather on two threads; 8 us against 17 us
//! when the rows are in cache.

use super::transforms::to_float_scaled;
use super::{check_index, Dataset};
use crate::backend::cpu::allocator;
use crate::backend::cpu::strided::{wide, Loop};
use crate::error::{Error, Result};
use crate::tensor::{DType, Device};
use crate::Tensor;
use std::mem::MaybeUninit;

/// u8 images `[N, ...]` and their targets `[N, ...]`; samples come out as f32 images in
/// [0, 1] (`pixel / 255`, the values of [`to_float_scaled`]) with their targets.
#[derive(Clone)]
pub struct U8Images {
    images: Tensor,
    targets: Tensor,
}

impl U8Images {
    /// Pair u8 `images` (any shape with the sample index first, on the CPU) with `targets`
    /// (the same number of samples).
    pub fn new(images: Tensor, targets: Tensor) -> Result<U8Images> {
        const OP: &str = "U8Images";
        if images.dtype() != DType::U8 || images.device() != Device::Cpu {
            return Err(Error::dtype(
                OP,
                format!(
                    "expected u8 images on the CPU, got {} on {}",
                    images.dtype(),
                    images.device()
                ),
            ));
        }
        if images.ndim() == 0 || targets.ndim() == 0 || images.shape()[0] != targets.shape()[0] {
            return Err(Error::shape(
                OP,
                format!(
                    "images {:?} and targets {:?} need the same first dimension",
                    images.shape(),
                    targets.shape()
                ),
            ));
        }
        // A copy in a buffer of the caching allocator, which asks for 2 MiB pages: batches
        // read rows from all over the set, and with 4 KiB pages each row cost a TLB miss.
        let pixels = images.to_vec::<u8>()?;
        let mut buffer = allocator::take::<u8>(pixels.len());
        buffer.extend_from_slice(&pixels);
        Ok(U8Images {
            images: Tensor::from_vec(buffer, images.shape())?,
            targets,
        })
    }

    /// The u8 images.
    pub fn images(&self) -> &Tensor {
        &self.images
    }

    /// The targets.
    pub fn targets(&self) -> &Tensor {
        &self.targets
    }
}

impl Dataset for U8Images {
    fn len(&self) -> usize {
        self.images.shape()[0]
    }

    fn get(&self, index: usize) -> Result<(Tensor, Tensor)> {
        check_index("U8Images::get", index, self.len())?;
        let i = index as isize;
        Ok((
            to_float_scaled(&self.images.select(0, i)?)?,
            self.targets.select(0, i)?,
        ))
    }

    /// The images gathered and scaled in one pass on the calling thread; the targets by
    /// `index_select`.
    fn get_batch(&self, indices: &[usize]) -> Result<(Tensor, Tensor)> {
        let len = self.len();
        if let Some(&bad) = indices.iter().find(|&&i| i >= len) {
            check_index("U8Images::get_batch", bad, len)?;
        }
        let per_image = self.images.shape()[1..].iter().product::<usize>();
        let n = indices.len() * per_image;
        let mut batch = allocator::take::<f32>(n);
        {
            let storage = self.images.storage();
            let pixels = storage
                .as_cpu()
                .and_then(|s| s.as_slice::<u8>())
                .expect("U8Images::new keeps u8 images on the CPU");
            let pixels = &pixels[self.images.storage_offset()..];
            // The rows are scattered over the whole set: ask for all of their cache lines
            // first, so that the misses overlap instead of one row's latency after another.
            #[cfg(target_arch = "x86_64")]
            for &i in indices {
                for line in pixels[i * per_image..(i + 1) * per_image].chunks(64) {
                    // SAFETY: a prefetch is a hint; the address is inside `pixels`.
                    unsafe {
                        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                        _mm_prefetch::<_MM_HINT_T0>(line.as_ptr().cast());
                    }
                }
            }
            let out = &mut batch.spare_capacity_mut()[..n];
            for (dst, &i) in out.chunks_exact_mut(per_image.max(1)).zip(indices) {
                let src = &pixels[i * per_image..(i + 1) * per_image];
                wide(Scale { dst, src });
            }
        }
        // SAFETY: every image's run of `per_image` elements was written.
        unsafe { batch.set_len(n) };
        let mut shape = self.images.shape().to_vec();
        shape[0] = indices.len();
        let index: Vec<i64> = indices.iter().map(|&i| i as i64).collect();
        let index = Tensor::from_vec(index, &[indices.len()])?.to_device(self.targets.device())?;
        Ok((
            Tensor::from_vec(batch, &shape)?,
            self.targets.index_select(0, &index)?,
        ))
    }
}

/// `dst[i] = src[i] / 255` in f32: `to_float_scaled`'s division (a multiplication by 1/255
/// rounds differently), in `wide`'s AVX-512 copy where the CPU has it (16 quotients an
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
    fn batches_equal_the_scaled_f32_images_bit_for_bit() {
        // Every pixel value, in images of 2 x 4 x 4 (the batch's shape keeps the rest).
        let pixels: Vec<u8> = (0..=255u8).chain(0..=255).collect();
        let images = Tensor::from_vec(pixels, &[16, 2, 4, 4]).unwrap();
        let targets = Tensor::from_vec((0..16i64).collect::<Vec<_>>(), &[16]).unwrap();
        let scaled = to_float_scaled(&images).unwrap();
        let set = U8Images::new(images, targets).unwrap();
        let indices = [3, 0, 15, 3, 9];
        let (x, y) = set.get_batch(&indices).unwrap();
        assert_eq!(x.shape(), &[5, 2, 4, 4]);
        assert_eq!(y.to_vec::<i64>().unwrap(), vec![3, 0, 15, 3, 9]);
        let index = Tensor::from_vec(indices.map(|i| i as i64).to_vec(), &[5]).unwrap();
        let want = scaled.index_select(0, &index).unwrap();
        let bits = |t: &Tensor| -> Vec<u32> {
            t.to_vec::<f32>()
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect()
        };
        assert_eq!(bits(&x), bits(&want));
        let (one, label) = set.get(15).unwrap();
        assert_eq!(bits(&one), bits(&scaled.select(0, 15).unwrap()));
        assert_eq!(label.to_vec::<i64>().unwrap(), vec![15]);
        assert!(set.get_batch(&[16]).is_err());
        assert!(set.get(16).is_err());
    }

    #[test]
    fn bad_images_are_refused() {
        let f = Tensor::zeros(&[4, 3], DType::F32, Device::Cpu).unwrap();
        let y = Tensor::zeros(&[4], DType::I64, Device::Cpu).unwrap();
        assert!(U8Images::new(f, y.clone()).is_err());
        let u = Tensor::zeros(&[5, 3], DType::U8, Device::Cpu).unwrap();
        assert!(U8Images::new(u, y).is_err());
    }
}
