//! [`U8Images`]: images kept as their u8 pixels and scaled to f32 in [0, 1] as a batch is
//! gathered, `ToTensor`'s scaling fused into the gather.
//!
//! An epoch of a small model is bound by how fast batches arrive. Stored as f32, a batch of
//! 64 Fashion-MNIST images is a 200 KB gather from a 188 MB array; kept as u8 the array is
//! 47 MB and a batch reads 50 KB, scaled as it is gathered ([`Tensor::gather_rows_scaled`]).

use super::transforms::to_float_scaled;
use super::{check_index, check_samples, index_tensor, Dataset};
use crate::error::{Error, Result};
use crate::tensor::DType;
use crate::Tensor;

/// u8 images `[N, ...]` and their targets `[N, ...]`; samples come out as f32 images in
/// [0, 1] (`pixel / 255`, the values of [`to_float_scaled`]) with their targets.
#[derive(Clone)]
pub struct U8Images {
    images: Tensor,
    targets: Tensor,
}

impl U8Images {
    /// Pair u8 `images` (any shape with the sample index first) with `targets` (the same
    /// number of samples).
    pub fn new(images: Tensor, targets: Tensor) -> Result<U8Images> {
        const OP: &str = "U8Images";
        if images.dtype() != DType::U8 {
            return Err(Error::dtype(
                OP,
                format!("expected u8 images, got {}", images.dtype()),
            ));
        }
        check_samples(OP, &images, &targets)?;
        // A copy (on the CPU, in a buffer of the caching allocator, which asks for 2 MiB
        // pages): batches read rows from all over the set, and with 4 KiB pages each row cost
        // a TLB miss.
        let images = images.contiguous_copy()?;
        Ok(U8Images { images, targets })
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
        let index = index_tensor(indices, self.targets.device())?;
        Ok((
            self.images.gather_rows_scaled(indices)?,
            self.targets.index_select(0, &index)?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::Device;

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
