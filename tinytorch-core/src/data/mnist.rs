//! MNIST and Fashion-MNIST from their IDX files (`torchvision.datasets.MNIST` /
//! `FashionMNIST`, reading the files already on disk; nothing is downloaded).

use super::idx::read_idx;
use super::transforms::to_float_scaled;
use super::TensorDataset;
use crate::error::{Error, Result};
use crate::tensor::DType;
use crate::Tensor;
use std::path::{Path, PathBuf};

/// Where the Debian package `dataset-fashion-mnist` installs Fashion-MNIST (.gz files).
pub const FASHION_MNIST_DIR: &str = "/usr/share/datasets/fashion-mnist";

const OP: &str = "load_mnist";

/// The images and labels of one MNIST split as stored: u8 pixels `[N, 1, 28, 28]` and i64
/// labels `[N]`.
#[derive(Clone)]
pub struct MnistDataset {
    /// Pixels in 0..=255, shape `[N, 1, H, W]`, dtype U8.
    pub images_u8: Tensor,
    /// Class labels, shape `[N]`, dtype I64.
    pub labels_i64: Tensor,
}

/// `dir/name` or `dir/name.gz`, whichever exists; errors name the file and how to get it.
fn find_file(dir: &Path, name: &str) -> Result<PathBuf> {
    if !dir.is_dir() {
        return Err(Error::invalid(
            OP,
            format!(
                "data directory {} does not exist (for Fashion-MNIST: `apt-get install dataset-fashion-mnist`, \
                 which fills {FASHION_MNIST_DIR}, or pass the directory with a --data DIR option)",
                dir.display()
            ),
        ));
    }
    let plain = dir.join(name);
    let gz = dir.join(format!("{name}.gz"));
    [plain.clone(), gz.clone()]
        .into_iter()
        .find(|p| p.is_file())
        .ok_or_else(|| {
            Error::invalid(
                OP,
                format!(
                    "neither {} nor {} exists (for Fashion-MNIST: `apt-get install dataset-fashion-mnist`, \
                     or pass the directory holding the IDX files with a --data DIR option)",
                    plain.display(),
                    gz.display()
                ),
            )
        })
}

impl MnistDataset {
    /// Read the training (`train-*`) or test (`t10k-*`) split from `dir`, which holds
    /// `{train,t10k}-{images-idx3,labels-idx1}-ubyte`, each raw or `.gz`.
    pub fn load(dir: impl AsRef<Path>, train: bool) -> Result<MnistDataset> {
        let dir = dir.as_ref();
        let prefix = if train { "train" } else { "t10k" };
        let images_path = find_file(dir, &format!("{prefix}-images-idx3-ubyte"))?;
        let labels_path = find_file(dir, &format!("{prefix}-labels-idx1-ubyte"))?;
        let images = read_idx(&images_path)?;
        let labels = read_idx(&labels_path)?;
        if images.dtype() != DType::U8 || images.ndim() != 3 {
            return Err(Error::invalid(
                OP,
                format!(
                    "{}: expected u8 images [N, H, W], got {} {:?}",
                    images_path.display(),
                    images.dtype(),
                    images.shape()
                ),
            ));
        }
        if labels.dtype() != DType::U8 || labels.ndim() != 1 {
            return Err(Error::invalid(
                OP,
                format!(
                    "{}: expected u8 labels [N], got {} {:?}",
                    labels_path.display(),
                    labels.dtype(),
                    labels.shape()
                ),
            ));
        }
        if labels.shape()[0] != images.shape()[0] {
            return Err(Error::invalid(
                OP,
                format!(
                    "{} has {} images but {} has {} labels",
                    images_path.display(),
                    images.shape()[0],
                    labels_path.display(),
                    labels.shape()[0]
                ),
            ));
        }
        Ok(MnistDataset {
            images_u8: images.unsqueeze(1)?.contiguous()?,
            labels_i64: labels.to_dtype(DType::I64)?,
        })
    }

    /// Number of images.
    pub fn len(&self) -> usize {
        self.labels_i64.shape()[0]
    }

    /// Whether there are no images.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Images as f32 in [0, 1] (`ToTensor()`) with i64 labels.
    pub fn to_tensor_dataset(&self) -> Result<TensorDataset> {
        TensorDataset::new(to_float_scaled(&self.images_u8)?, self.labels_i64.clone())
    }

    /// Images kept as u8 with i64 labels, for a loader that scales each batch with
    /// [`super::transforms::ToFloatScaled`] (a quarter of the memory).
    pub fn to_u8_dataset(&self) -> Result<TensorDataset> {
        TensorDataset::new(self.images_u8.clone(), self.labels_i64.clone())
    }
}

/// The training or test split in `dir` as f32 images `[N, 1, 28, 28]` in [0, 1] with i64
/// labels (`torchvision.datasets.MNIST(dir, train, transform=ToTensor())`).
pub fn load_mnist_dir(dir: impl AsRef<Path>, train: bool) -> Result<TensorDataset> {
    MnistDataset::load(dir, train)?.to_tensor_dataset()
}
