//! Image transforms (`torchvision.transforms`) on single images `[C, H, W]` and on batches
//! `[N, C, H, W]`. Random transforms draw from the generator they are given, once per image,
//! so a batch gets independent crops and flips.

use crate::error::{Error, Result};
use crate::ops::PadMode;
use crate::tensor::{DType, Device, Generator};
use crate::Tensor;

/// A transformation of an image or of a batch of images (the callables of
/// `torchvision.transforms`). Random ones draw from `gen`; deterministic ones ignore it.
pub trait Transform: Send + Sync {
    /// Transform `x` (`[C, H, W]` or `[N, C, H, W]`).
    fn apply(&self, x: &Tensor, gen: &mut Generator) -> Result<Tensor>;
}

/// Several transforms applied in order (`torchvision.transforms.Compose`).
#[derive(Default)]
pub struct Compose {
    transforms: Vec<Box<dyn Transform>>,
}

impl Compose {
    /// Chain `transforms`, first to last.
    pub fn new(transforms: Vec<Box<dyn Transform>>) -> Compose {
        Compose { transforms }
    }
}

impl Transform for Compose {
    fn apply(&self, x: &Tensor, gen: &mut Generator) -> Result<Tensor> {
        let mut out = x.clone();
        for t in &self.transforms {
            out = t.apply(&out, gen)?;
        }
        Ok(out)
    }
}

/// u8 pixels to f32 in [0, 1] by dividing by 255 (the scaling of
/// `torchvision.transforms.ToTensor`, without its HWC -> CHW move).
pub fn to_float_scaled(x: &Tensor) -> Result<Tensor> {
    if x.dtype() != DType::U8 {
        return Err(Error::dtype(
            "to_float_scaled",
            format!("expected a u8 tensor of pixels, got {}", x.dtype()),
        ));
    }
    x.to_dtype(DType::F32)?.div_scalar(255.0)
}

/// [`to_float_scaled`] as a [`Transform`], to keep a data set in u8 (4x smaller) and scale
/// each batch as it is loaded.
#[derive(Clone, Copy, Debug, Default)]
pub struct ToFloatScaled;

impl Transform for ToFloatScaled {
    fn apply(&self, x: &Tensor, _gen: &mut Generator) -> Result<Tensor> {
        to_float_scaled(x)
    }
}

/// Whether `x` is one image (`[C, H, W]`, or `[H, W]` where channels do not matter) or a
/// batch (`[N, C, H, W]`); errors on other ranks.
fn is_batch(op: &'static str, x: &Tensor, min_ndim: usize) -> Result<bool> {
    match x.ndim() {
        4 => Ok(true),
        n if n >= min_ndim && n <= 3 => Ok(false),
        _ => Err(Error::shape(
            op,
            format!(
                "expected an image [C, H, W] or a batch [N, C, H, W], got shape {:?}",
                x.shape()
            ),
        )),
    }
}

/// Per-channel standardisation `(x - mean[c]) / std[c]` (`torchvision.transforms.Normalize`).
/// `mean` and `std` have one value per channel, or one value for all.
#[derive(Clone, Debug, PartialEq)]
pub struct Normalize {
    /// Channel means.
    pub mean: Vec<f64>,
    /// Channel standard deviations (none may be 0).
    pub std: Vec<f64>,
}

impl Normalize {
    /// `Normalize(mean, std)`.
    pub fn new(mean: Vec<f64>, std: Vec<f64>) -> Normalize {
        Normalize { mean, std }
    }

    /// The statistics as `[C, 1, 1]` tensors of `dtype`, checked against `channels`.
    fn stats(&self, channels: usize, dtype: DType, device: Device) -> Result<(Tensor, Tensor)> {
        const OP: &str = "Normalize";
        for (name, v) in [("mean", &self.mean), ("std", &self.std)] {
            if v.len() != 1 && v.len() != channels {
                return Err(Error::shape(
                    OP,
                    format!(
                        "{name} has {} values, expected 1 or one per channel ({channels})",
                        v.len()
                    ),
                ));
            }
        }
        if self.std.contains(&0.0) {
            return Err(Error::invalid(
                OP,
                format!(
                    "std evaluated to zero, leading to division by zero (std = {:?})",
                    self.std
                ),
            ));
        }
        let as_tensor = |v: &[f64]| -> Result<Tensor> {
            Tensor::from_vec(v.to_vec(), &[v.len(), 1, 1])?
                .to_dtype(dtype)?
                .to_device(device)
        };
        Ok((as_tensor(&self.mean)?, as_tensor(&self.std)?))
    }
}

impl Transform for Normalize {
    fn apply(&self, x: &Tensor, _gen: &mut Generator) -> Result<Tensor> {
        const OP: &str = "Normalize";
        if !x.dtype().is_float() {
            return Err(Error::dtype(
                OP,
                format!("input tensor should be a float tensor, got {}", x.dtype()),
            ));
        }
        if x.ndim() != 3 && x.ndim() != 4 {
            return Err(Error::shape(
                OP,
                format!(
                    "expected an image [C, H, W] or a batch [N, C, H, W], got shape {:?}",
                    x.shape()
                ),
            ));
        }
        let channels = x.shape()[x.ndim() - 3];
        let (mean, std) = self.stats(channels, x.dtype(), x.device())?;
        x.sub(&mean)?.div(&std)
    }
}

/// Zero-pad by `padding` on every side, then cut a random `size` window
/// (`torchvision.transforms.RandomCrop(size, padding)`), with its own offset for each image
/// of a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RandomCrop {
    /// Output (height, width).
    pub size: (usize, usize),
    /// Zeros added on each of the four sides first.
    pub padding: usize,
}

impl RandomCrop {
    /// `RandomCrop(size, padding)`.
    pub fn new(size: (usize, usize), padding: usize) -> RandomCrop {
        RandomCrop { size, padding }
    }

    /// The crop of one padded image at a random offset.
    fn crop_one(&self, img: &Tensor, gen: &mut Generator) -> Result<Tensor> {
        let nd = img.ndim() as isize;
        let (h, w) = (img.shape()[img.ndim() - 2], img.shape()[img.ndim() - 1]);
        let (th, tw) = self.size;
        let i =
            Tensor::randint_with(0, (h - th + 1) as i64, &[], Device::Cpu, gen)?.item::<i64>()?;
        let j =
            Tensor::randint_with(0, (w - tw + 1) as i64, &[], Device::Cpu, gen)?.item::<i64>()?;
        img.narrow(nd - 2, i as isize, th)?
            .narrow(nd - 1, j as isize, tw)
    }
}

impl Transform for RandomCrop {
    fn apply(&self, x: &Tensor, gen: &mut Generator) -> Result<Tensor> {
        const OP: &str = "RandomCrop";
        let batch = is_batch(OP, x, 2)?;
        let p = self.padding;
        let padded = if p > 0 {
            x.pad(&[p as isize; 4], PadMode::Constant(0.0))?
        } else {
            x.clone()
        };
        let nd = padded.ndim();
        let (h, w) = (padded.shape()[nd - 2], padded.shape()[nd - 1]);
        let (th, tw) = self.size;
        if th > h || tw > w {
            return Err(Error::invalid(
                OP,
                format!(
                    "required crop size {:?} is larger than the input image size {:?} (after padding {p})",
                    (th, tw),
                    (h, w)
                ),
            ));
        }
        if !batch {
            return self.crop_one(&padded, gen)?.contiguous();
        }
        let crops = (0..padded.shape()[0])
            .map(|n| self.crop_one(&padded.select(0, n as isize)?, gen))
            .collect::<Result<Vec<_>>>()?;
        if crops.is_empty() {
            let mut shape = padded.shape().to_vec();
            shape[nd - 2] = th;
            shape[nd - 1] = tw;
            return Tensor::zeros(&shape, x.dtype(), x.device());
        }
        Tensor::stack(&crops.iter().collect::<Vec<_>>(), 0)
    }
}

/// Mirror left-right with probability `p` (`torchvision.transforms.RandomHorizontalFlip(p)`),
/// decided independently for each image of a batch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RandomHorizontalFlip {
    /// Probability of flipping an image.
    pub p: f64,
}

impl RandomHorizontalFlip {
    /// `RandomHorizontalFlip(p)`.
    pub fn new(p: f64) -> RandomHorizontalFlip {
        RandomHorizontalFlip { p }
    }
}

impl Default for RandomHorizontalFlip {
    /// PyTorch's default `p = 0.5`.
    fn default() -> Self {
        RandomHorizontalFlip { p: 0.5 }
    }
}

impl Transform for RandomHorizontalFlip {
    fn apply(&self, x: &Tensor, gen: &mut Generator) -> Result<Tensor> {
        const OP: &str = "RandomHorizontalFlip";
        if !(0.0..=1.0).contains(&self.p) {
            return Err(Error::invalid(
                OP,
                format!("p should be a probability in [0, 1], got {}", self.p),
            ));
        }
        let batch = is_batch(OP, x, 2)?;
        let n = if batch { x.shape()[0] } else { 1 };
        let draws = Tensor::rand_with(&[n], DType::F64, Device::Cpu, gen)?;
        let flip = draws.lt_scalar(self.p)?;
        if !batch {
            return if flip.to_vec::<bool>()?[0] {
                x.flip(&[-1])
            } else {
                x.contiguous_copy()
            };
        }
        let mask = flip.to_device(x.device())?.view(&[n, 1, 1, 1])?;
        Tensor::where_cond(&mask, &x.flip(&[-1])?, x)
    }
}
