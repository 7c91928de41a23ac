//! `gather_rows_scaled`: rows of a u8 tensor as f32 in [0, 1], the gather of a data
//! loader's batch and `ToTensor`'s scaling in one pass where the device has the kernel
//! (`Storage::gather_rows_scaled`), `index_select`, the cast and the division elsewhere.
//! Both give the same bits: the kernel divides by 255 as the composite does.

use super::with_spans;
use crate::backend::Storage;
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};

const OP: &str = "gather_rows_scaled";

impl Tensor {
    /// `self.index_select(0, rows).float() / 255` of a u8 tensor with at least one dimension:
    /// the rows (samples) listed, in that order, repeats allowed, their pixels scaled to
    /// f32 in [0, 1]. u8 has no gradient, so neither has the result.
    pub fn gather_rows_scaled(&self, rows: &[usize]) -> Result<Tensor> {
        if self.dtype() != DType::U8 || self.ndim() == 0 {
            return Err(Error::dtype(
                OP,
                format!(
                    "expected a u8 tensor with a row dimension, got {} of shape {:?}",
                    self.dtype(),
                    self.shape()
                ),
            ));
        }
        let count = self.shape()[0];
        if let Some(&bad) = rows.iter().find(|&&i| i >= count) {
            return Err(Error::index(
                OP,
                format!("row {bad} is out of range for {count} rows"),
            ));
        }
        let mut shape = self.shape().to_vec();
        shape[0] = rows.len();
        let row_len = self.shape()[1..].iter().product::<usize>();
        let x = self.contiguous()?;
        if let Some(out) = with_spans(&[Some(&x)], |s| {
            Storage::gather_rows_scaled(s[0].expect("given"), row_len, rows)
        })? {
            return Ok(Tensor::from_contiguous(out, &shape));
        }
        let index: Vec<i64> = rows.iter().map(|&i| i as i64).collect();
        let index = Tensor::from_vec(index, &[rows.len()])?.to_device(self.device())?;
        x.index_select(0, &index)?
            .to_dtype(DType::F32)?
            .div_scalar(255.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::Device;

    fn bits(t: &Tensor) -> Vec<u32> {
        t.to_vec::<f32>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect()
    }

    #[test]
    fn the_kernel_gives_the_bits_of_the_composite_for_every_pixel_value() {
        // Every pixel value, in rows of 2 x 4 x 4, read through a non-contiguous view too.
        let pixels: Vec<u8> = (0..=255u8).chain(0..=255).collect();
        let images = Tensor::from_vec(pixels, &[16, 2, 4, 4]).unwrap();
        let rows = [3, 0, 15, 3, 9];
        let index = Tensor::from_vec(rows.map(|i| i as i64).to_vec(), &[5]).unwrap();
        for x in [images.clone(), images.transpose(2, 3).unwrap()] {
            let got = x.gather_rows_scaled(&rows).unwrap();
            assert_eq!(got.shape(), &[5, 2, 4, 4]);
            let want = x
                .index_select(0, &index)
                .unwrap()
                .to_dtype(DType::F32)
                .unwrap()
                .div_scalar(255.0)
                .unwrap();
            assert_eq!(bits(&got), bits(&want));
        }
        let none = images.gather_rows_scaled(&[]).unwrap();
        assert_eq!(none.shape(), &[0, 2, 4, 4]);
    }

    #[test]
    fn bad_rows_and_dtypes_are_refused() {
        let u = Tensor::zeros(&[4, 3], DType::U8, Device::Cpu).unwrap();
        let err = u.gather_rows_scaled(&[1, 4]).unwrap_err().to_string();
        assert!(
            err.contains("gather_rows_scaled") && err.contains("row 4"),
            "{err}"
        );
        let f = Tensor::zeros(&[4, 3], DType::F32, Device::Cpu).unwrap();
        assert!(f.gather_rows_scaled(&[0]).is_err());
        let scalar = Tensor::zeros(&[], DType::U8, Device::Cpu).unwrap();
        assert!(scalar.gather_rows_scaled(&[0]).is_err());
    }
}
