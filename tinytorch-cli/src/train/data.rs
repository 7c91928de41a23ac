//! The data sets of `tinytorch train`, loaded whole into memory as u8 pixels and integer
//! labels; batches come out as scaled float images (pixels / 255, scaled as they are
//! gathered) with a recipe's normalisation applied.

use super::config::{DatasetKind, RunConfig};
use std::path::PathBuf;
use std::sync::Arc;
use tinytorch::data::cifar10::load_cifar10_dir;
use tinytorch::data::mnist::{MnistDataset, FASHION_MNIST_DIR};
use tinytorch::data::transforms::Normalize;
use tinytorch::data::{DataLoader, DataLoaderIter, DataLoaderOptions, Dataset, U8Images};
use tinytorch::models::ImageShape;
use tinytorch::{Device, Error, Result, Tensor};

/// Which half of a data set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// The training images.
    Train,
    /// The test images.
    Test,
}

/// One split in memory, with what a model needs to know about it.
pub struct LoadedSplit {
    /// `(image, label)` pairs: f32 `[C, H, W]` in [0, 1] (from u8 pixels) and an i64 class.
    pub dataset: Arc<dyn Dataset>,
    /// The image shape.
    pub shape: ImageShape,
    /// Number of classes.
    pub classes: usize,
    /// The recipe's normalisation of model inputs, applied by [`LoadedSplit::batches`].
    pub normalize: Option<Normalize>,
}

impl LoadedSplit {
    /// The split in file order, in batches of `batch_size` (the last one may be smaller),
    /// normalised as the model expects.
    pub fn batches(&self, batch_size: usize) -> Result<DataLoaderIter> {
        let mut options = DataLoaderOptions::default().batch_size(batch_size);
        if let Some(n) = &self.normalize {
            options = options.transform(Arc::new(n.clone()));
        }
        DataLoader::new(self.dataset.clone(), options)?.iter()
    }
}

fn data_dir(config: &RunConfig) -> Result<PathBuf> {
    match (&config.data, config.dataset) {
        (Some(dir), _) => Ok(dir.clone()),
        (None, DatasetKind::FashionMnist) => Ok(PathBuf::from(FASHION_MNIST_DIR)),
        (None, kind) => Err(Error::invalid(
            "train",
            format!("--dataset {} needs --data DIR", kind.name()),
        )),
    }
}

/// Load `split` of the configured data set.
pub fn load_split(config: &RunConfig, split: Split) -> Result<LoadedSplit> {
    let dir = data_dir(config)?;
    let train = split == Split::Train;
    // Kept as u8 pixels, scaled as each batch is gathered (a quarter of the memory a batch
    // reads).
    let set = match config.dataset {
        DatasetKind::FashionMnist | DatasetKind::Mnist => {
            let m = MnistDataset::load(&dir, train)?;
            U8Images::new(m.images_u8, m.labels_i64)?
        }
        DatasetKind::Cifar10 => {
            let (images, labels) = load_cifar10_dir(&dir, train)?;
            U8Images::new(images, labels)?
        }
    };
    let dims = set.images().shape().to_vec();
    if dims[0] == 0 {
        return Err(Error::invalid(
            "data",
            format!(
                "the {} split in {} is empty (0 images)",
                if train { "training" } else { "test" },
                dir.display()
            ),
        ));
    }
    let shape = ImageShape {
        channels: dims[1],
        height: dims[2],
        width: dims[3],
    };
    Ok(LoadedSplit {
        dataset: Arc::new(set),
        shape,
        classes: 10,
        normalize: config.recipe.eval_normalize(),
    })
}

/// The batches of `batches`, copied to `device` (the loaders build them on the CPU).
pub fn on_device<I>(batches: I, device: Device) -> impl Iterator<Item = Result<(Tensor, Tensor)>>
where
    I: IntoIterator<Item = Result<(Tensor, Tensor)>>,
{
    batches.into_iter().map(move |b| {
        let (x, y) = b?;
        Ok((x.to_device(device)?, y.to_device(device)?))
    })
}
