//! Tests of `tinytorch::data`: data sets, random_split, DataLoader, transforms and the IDX /
//! MNIST / CIFAR-10 readers. Reference numbers marked "PyTorch" were computed with torch 2.15.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use tinytorch::data::cifar10::{load_cifar10_dir, read_cifar10_batch};
use tinytorch::data::idx::{encode_idx_u8, read_idx};
use tinytorch::data::mnist::{load_mnist_dir, MnistDataset, FASHION_MNIST_DIR};
use tinytorch::data::transforms::{
    to_float_scaled, Normalize, RandomCrop, RandomHorizontalFlip, ToFloatScaled,
};
use tinytorch::data::{
    random_split, randperm, CollateFn, Compose, DataLoader, DataLoaderOptions, Dataset,
    SplitLengths, Subset, TensorDataset, Transform,
};
use tinytorch::{DType, Device, Error, Generator, Result, Tensor};

const CPU: Device = Device::Cpu;

/// `n` samples: inputs `[n, 2]` = (2i, 2i+1) as f32, targets `[n]` = i as i64.
fn toy(n: usize) -> TensorDataset {
    let x = Tensor::arange(0.0, 2.0 * n as f64, 1.0, DType::F32, CPU)
        .unwrap()
        .reshape(&[n as isize, 2])
        .unwrap();
    let y = Tensor::arange(0.0, n as f64, 1.0, DType::I64, CPU).unwrap();
    TensorDataset::new(x, y).unwrap()
}

fn labels(batch: &(Tensor, Tensor)) -> Vec<i64> {
    batch.1.to_vec::<i64>().unwrap()
}

/// All batches of one epoch as (inputs, targets) value vectors.
fn epoch(loader: &mut DataLoader) -> Vec<(Vec<f32>, Vec<i64>)> {
    loader
        .iter()
        .unwrap()
        .map(|b| {
            let (x, y) = b.unwrap();
            (x.to_vec::<f32>().unwrap(), y.to_vec::<i64>().unwrap())
        })
        .collect()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("tinytorch-data-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

fn err_text<T>(r: Result<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

// ---------------------------------------------------------------- data sets

#[test]
fn tensor_dataset_get_and_get_batch() {
    let ds = toy(5);
    assert_eq!(ds.len(), 5);
    assert!(!ds.is_empty());
    let (x, y) = ds.get(3).unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![6.0, 7.0]);
    assert_eq!(y.shape(), &[] as &[usize]);
    assert_eq!(y.item::<i64>().unwrap(), 3);
    let (x, y) = ds.get_batch(&[4, 0, 4]).unwrap();
    assert_eq!(x.shape(), &[3, 2]);
    assert_eq!(
        x.to_vec::<f32>().unwrap(),
        vec![8.0, 9.0, 0.0, 1.0, 8.0, 9.0]
    );
    assert_eq!(y.to_vec::<i64>().unwrap(), vec![4, 0, 4]);
    // An empty batch keeps the trailing shape.
    let (x, _) = ds.get_batch(&[]).unwrap();
    assert_eq!(x.shape(), &[0, 2]);
}

#[test]
fn tensor_dataset_non_contiguous_inputs() {
    // inputs = [[0, 1, 2], [3, 4, 5]].t(): sample i is column i.
    let x = Tensor::from_vec(vec![0.0f32, 1., 2., 3., 4., 5.], &[2, 3])
        .unwrap()
        .t()
        .unwrap();
    let ds = TensorDataset::new(x, Tensor::from_slice(&[7i64, 8, 9])).unwrap();
    let (xb, yb) = ds.get_batch(&[2, 0]).unwrap();
    assert_eq!(xb.to_vec::<f32>().unwrap(), vec![2.0, 5.0, 0.0, 3.0]);
    assert_eq!(yb.to_vec::<i64>().unwrap(), vec![9, 7]);
    assert_eq!(
        ds.get(1).unwrap().0.to_vec::<f32>().unwrap(),
        vec![1.0, 4.0]
    );
}

#[test]
fn tensor_dataset_errors() {
    let x = Tensor::zeros(&[3, 2], DType::F32, CPU).unwrap();
    let e = err_text(TensorDataset::new(
        x.clone(),
        Tensor::from_slice(&[1i64, 2]),
    ));
    assert!(e.contains("[3, 2]") && e.contains("[2]"), "{e}");
    assert!(TensorDataset::new(Tensor::scalar(1.0f32), Tensor::from_slice(&[1i64])).is_err());
    let ds = TensorDataset::new(x, Tensor::from_slice(&[1i64, 2, 3])).unwrap();
    let e = err_text(ds.get(3));
    assert!(e.contains("index 3") && e.contains("size 3"), "{e}");
    assert!(matches!(ds.get_batch(&[0, 5]), Err(Error::Index { .. })));
}

/// A data set with only `get`, to exercise the default `get_batch` (stack of samples).
struct Squares(usize);

impl Dataset for Squares {
    fn len(&self) -> usize {
        self.0
    }
    fn get(&self, i: usize) -> Result<(Tensor, Tensor)> {
        if i == 13 {
            return Err(Error::invalid("Squares", "sample 13 is unlucky"));
        }
        let v = i as f32;
        Ok((Tensor::from_slice(&[v, v * v]), Tensor::scalar(i as i64)))
    }
}

#[test]
fn default_get_batch_stacks_samples() {
    let ds = Squares(4);
    let (x, y) = ds.get_batch(&[3, 1]).unwrap();
    assert_eq!(x.shape(), &[2, 2]);
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![3.0, 9.0, 1.0, 1.0]);
    assert_eq!(y.to_vec::<i64>().unwrap(), vec![3, 1]);
    assert!(ds.get_batch(&[]).is_err());
}

#[test]
fn subset_maps_indices() {
    let ds: Arc<dyn Dataset> = Arc::new(toy(6));
    let s = Subset::new(ds.clone(), vec![5, 1]).unwrap();
    assert_eq!(s.len(), 2);
    assert_eq!(s.get(0).unwrap().1.item::<i64>().unwrap(), 5);
    assert_eq!(labels(&s.get_batch(&[1, 0, 1]).unwrap()), vec![1, 5, 1]);
    assert!(s.get(2).is_err());
    assert!(s.get_batch(&[2]).is_err());
    assert!(Subset::new(ds, vec![6]).is_err());
}

#[test]
fn random_split_sizes_disjoint_deterministic() {
    let ds: Arc<dyn Dataset> = Arc::new(toy(10));
    let parts = random_split(
        ds.clone(),
        SplitLengths::Counts(&[3, 7]),
        &mut Generator::new(42),
    )
    .unwrap();
    assert_eq!(
        parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
        vec![3, 7]
    );
    let mut all: Vec<usize> = parts.iter().flat_map(|p| p.indices().to_vec()).collect();
    all.sort_unstable();
    assert_eq!(all, (0..10).collect::<Vec<_>>());
    let again = random_split(
        ds.clone(),
        SplitLengths::Counts(&[3, 7]),
        &mut Generator::new(42),
    )
    .unwrap();
    assert_eq!(again[0].indices(), parts[0].indices());
    let other = random_split(
        ds.clone(),
        SplitLengths::Counts(&[3, 7]),
        &mut Generator::new(43),
    )
    .unwrap();
    assert_ne!(other[1].indices(), parts[1].indices());
    // The subset's samples are the data set's samples at its indices.
    let i = parts[0].indices()[0];
    assert_eq!(parts[0].get(0).unwrap().1.item::<i64>().unwrap(), i as i64);

    // Sizes from PyTorch: random_split(range(10), [0.25, 0.25, 0.5]) -> [3, 2, 5].
    let parts = random_split(
        ds.clone(),
        SplitLengths::Fractions(&[0.25, 0.25, 0.5]),
        &mut Generator::new(0),
    )
    .unwrap();
    assert_eq!(
        parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
        vec![3, 2, 5]
    );
}

#[test]
fn random_split_errors() {
    let ds: Arc<dyn Dataset> = Arc::new(toy(10));
    let mut g = Generator::new(0);
    let e = err_text(random_split(
        ds.clone(),
        SplitLengths::Counts(&[3, 3]),
        &mut g,
    ));
    assert!(e.contains("does not equal") && e.contains("10"), "{e}");
    assert!(random_split(ds.clone(), SplitLengths::Fractions(&[0.5, 0.6]), &mut g).is_err());
    assert!(random_split(ds, SplitLengths::Fractions(&[1.5, -0.5]), &mut g).is_err());
}

#[test]
fn randperm_uses_the_generator() {
    let a = randperm(50, &mut Generator::new(9)).unwrap();
    let b = randperm(50, &mut Generator::new(9)).unwrap();
    assert_eq!(a, b);
    assert_ne!(a, (0..50).collect::<Vec<_>>());
}

// ---------------------------------------------------------------- DataLoader

fn loader(n: usize, opts: DataLoaderOptions) -> DataLoader {
    DataLoader::new(Arc::new(toy(n)), opts).unwrap()
}

#[test]
fn loader_batches_in_order_with_and_without_drop_last() {
    let mut l = loader(10, DataLoaderOptions::default().batch_size(4));
    assert_eq!(l.len(), 3);
    let batches = epoch(&mut l);
    assert_eq!(
        batches.iter().map(|b| b.1.clone()).collect::<Vec<_>>(),
        vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7], vec![8, 9]]
    );
    assert_eq!(batches[2].0, vec![16.0, 17.0, 18.0, 19.0]);

    let mut l = loader(
        10,
        DataLoaderOptions::default().batch_size(4).drop_last(true),
    );
    assert_eq!(l.len(), 2);
    let batches = epoch(&mut l);
    assert_eq!(batches.len(), 2);
    assert!(batches.iter().all(|b| b.1.len() == 4));

    // Default batch_size 1: one sample per batch, shaped [1, ...].
    let mut l = loader(3, DataLoaderOptions::default());
    assert_eq!(l.len(), 3);
    let (x, _) = l.iter().unwrap().next().unwrap().unwrap();
    assert_eq!(x.shape(), &[1, 2]);
    let it = l.iter().unwrap();
    assert_eq!(it.len(), 3);
}

#[test]
fn loader_empty_and_small_datasets() {
    let mut l = loader(0, DataLoaderOptions::default().batch_size(4).num_workers(2));
    assert!(l.is_empty());
    assert_eq!(l.iter().unwrap().count(), 0);
    let mut l = loader(
        3,
        DataLoaderOptions::default().batch_size(4).drop_last(true),
    );
    assert_eq!(l.len(), 0);
    assert_eq!(l.iter().unwrap().count(), 0);
}

#[test]
fn loader_errors_on_bad_options() {
    let ds: Arc<dyn Dataset> = Arc::new(toy(3));
    let e = err_text(DataLoader::new(
        ds.clone(),
        DataLoaderOptions::default().batch_size(0),
    ));
    assert!(e.contains("batch_size"), "{e}");
    assert!(DataLoader::new(
        ds,
        DataLoaderOptions::default()
            .num_workers(1)
            .prefetch_factor(0)
    )
    .is_err());
}

#[test]
fn shuffle_is_seeded_and_changes_every_epoch() {
    let opts = DataLoaderOptions::default()
        .batch_size(8)
        .shuffle(true)
        .seed(7);
    let mut a = loader(40, opts.clone());
    let mut b = loader(40, opts.clone());
    let a1 = epoch(&mut a);
    let a2 = epoch(&mut a);
    assert_eq!(a1, epoch(&mut b), "same seed, same order");
    assert_ne!(a1, a2, "a new permutation each epoch");
    let mut order: Vec<i64> = a1.iter().flat_map(|b| b.1.clone()).collect();
    assert_ne!(order, (0..40).collect::<Vec<_>>());
    order.sort_unstable();
    assert_eq!(order, (0..40).collect::<Vec<_>>(), "every sample once");
    // Inputs stay paired with their targets.
    for (x, y) in &a1 {
        for (k, &t) in y.iter().enumerate() {
            assert_eq!(x[2 * k], 2.0 * t as f32);
        }
    }
    let mut c = loader(40, opts.seed(8));
    assert_ne!(a1, epoch(&mut c));
}

/// Transform that flips and crops, to check that workers reproduce the random transforms.
fn image_loader(workers: usize, seed: u64) -> DataLoader {
    let n = 37;
    let x = Tensor::arange(0.0, (n * 16) as f64, 1.0, DType::F32, CPU)
        .unwrap()
        .reshape(&[n as isize, 1, 4, 4])
        .unwrap();
    let y = Tensor::arange(0.0, n as f64, 1.0, DType::I64, CPU).unwrap();
    let t: Arc<dyn Transform> = Arc::new(Compose::new(vec![
        Box::new(RandomCrop::new((4, 4), 1)),
        Box::new(RandomHorizontalFlip::new(0.5)),
    ]));
    DataLoader::new(
        Arc::new(TensorDataset::new(x, y).unwrap()),
        DataLoaderOptions::default()
            .batch_size(5)
            .shuffle(true)
            .seed(seed)
            .num_workers(workers)
            .transform(t),
    )
    .unwrap()
}

#[test]
fn workers_give_identical_batches() {
    let mut l0 = image_loader(0, 11);
    let mut l2 = image_loader(2, 11);
    let mut l3 = image_loader(3, 11);
    for _ in 0..2 {
        let e0 = epoch(&mut l0);
        assert_eq!(e0.len(), 8);
        assert_eq!(e0, epoch(&mut l2));
        assert_eq!(e0, epoch(&mut l3));
    }
}

#[test]
fn dropping_a_worker_iterator_mid_epoch_does_not_hang() {
    let mut l = image_loader(2, 1);
    let mut it = l.iter().unwrap();
    assert!(it.next().unwrap().is_ok());
    drop(it);
    assert_eq!(l.iter().unwrap().count(), 8);
}

#[test]
fn generator_state_restores_the_next_epoch() {
    let mut l = image_loader(2, 5);
    epoch(&mut l);
    let state = l.generator_state();
    let next = epoch(&mut l);
    let after = epoch(&mut l);
    assert_ne!(next, after);
    let mut fresh = image_loader(0, 999);
    fresh.set_generator_state(&state);
    assert_eq!(epoch(&mut fresh), next);
    assert_eq!(epoch(&mut fresh), after);
    // Resuming mid-epoch: same state, skip the first 3 batches.
    fresh.set_generator_state(&state);
    let rest: Vec<_> = fresh
        .iter_from(3)
        .unwrap()
        .map(|b| labels(&b.unwrap()))
        .collect();
    assert_eq!(
        rest,
        next[3..].iter().map(|b| b.1.clone()).collect::<Vec<_>>()
    );
}

#[test]
fn collate_fn_and_worker_errors() {
    let collate: CollateFn = Arc::new(|samples: Vec<(Tensor, Tensor)>| {
        let xs: Vec<&Tensor> = samples.iter().map(|s| &s.0).collect();
        let ys: Vec<&Tensor> = samples.iter().map(|s| &s.1).collect();
        // Concatenate instead of stacking: inputs become one flat vector per batch.
        Ok((Tensor::cat(&xs, 0)?, Tensor::stack(&ys, 0)?))
    });
    let mut l = DataLoader::new(
        Arc::new(toy(4)),
        DataLoaderOptions::default()
            .batch_size(2)
            .collate_fn(collate),
    )
    .unwrap();
    let b = epoch(&mut l);
    assert_eq!(b[1].0, vec![4.0, 5.0, 6.0, 7.0]);

    // The error of sample 13 reaches the consumer, in order, with and without workers.
    for workers in [0, 2] {
        let mut l = DataLoader::new(
            Arc::new(Squares(20)),
            DataLoaderOptions::default()
                .batch_size(4)
                .num_workers(workers),
        )
        .unwrap();
        let results: Vec<bool> = l.iter().unwrap().map(|b| b.is_ok()).collect();
        assert_eq!(results, vec![true, true, true, false, true]);
        let e = err_text(l.iter().unwrap().nth(3).unwrap());
        assert!(e.contains("unlucky"), "{e}");
    }
}

// ---------------------------------------------------------------- transforms

#[test]
fn normalize_matches_torchvision() {
    let x = Tensor::from_vec(vec![0.0f32, 0.5, 1.0, 0.25, 0.1, 0.2, 0.3, 0.4], &[2, 2, 2]).unwrap();
    let t = Normalize::new(vec![0.5, 0.2], vec![0.25, 0.1]);
    let mut g = Generator::new(0);
    // PyTorch: x.clone().sub_(mean[:, None, None]).div_(std[:, None, None]).
    let expected = [-2.0f32, 0.0, 2.0, -1.0, -1.0, 0.0, 1.000_000_1, 2.0];
    assert_eq!(
        t.apply(&x, &mut g).unwrap().to_vec::<f32>().unwrap(),
        expected
    );
    // A batch of the same image twice, non-contiguous (a broadcast expand).
    let batch = x.unsqueeze(0).unwrap().expand(&[2, 2, 2, 2]).unwrap();
    let out = t.apply(&batch, &mut g).unwrap();
    assert_eq!(out.shape(), &[2, 2, 2, 2]);
    assert_eq!(out.to_vec::<f32>().unwrap()[8..], expected);
    // f64 stays f64; one mean/std for all channels.
    let x64 = x.to_dtype(DType::F64).unwrap();
    let out = Normalize::new(vec![0.5], vec![0.5])
        .apply(&x64, &mut g)
        .unwrap();
    assert_eq!(out.dtype(), DType::F64);
    assert_eq!(out.to_vec::<f64>().unwrap()[..3], [-1.0, 0.0, 1.0]);
}

#[test]
fn normalize_errors() {
    let mut g = Generator::new(0);
    let x = Tensor::zeros(&[3, 2, 2], DType::F32, CPU).unwrap();
    let e = err_text(Normalize::new(vec![0.0, 0.0], vec![1.0, 1.0]).apply(&x, &mut g));
    assert!(e.contains("mean has 2 values") && e.contains("(3)"), "{e}");
    let e = err_text(Normalize::new(vec![0.0], vec![0.0]).apply(&x, &mut g));
    assert!(e.contains("std evaluated to zero"), "{e}");
    let u8x = Tensor::zeros(&[3, 2, 2], DType::U8, CPU).unwrap();
    assert!(matches!(
        Normalize::new(vec![0.0], vec![1.0]).apply(&u8x, &mut g),
        Err(Error::DType { .. })
    ));
    let flat = Tensor::zeros(&[4], DType::F32, CPU).unwrap();
    assert!(matches!(
        Normalize::new(vec![0.0], vec![1.0]).apply(&flat, &mut g),
        Err(Error::Shape { .. })
    ));
}

#[test]
fn to_float_scaled_matches_to_tensor() {
    let u = Tensor::from_slice(&[0u8, 1, 128, 255]);
    // PyTorch: u.float().div(255).
    let expected = [0.0f32, 0.003_921_569, 0.501_960_8, 1.0];
    let out = to_float_scaled(&u).unwrap();
    assert_eq!(out.dtype(), DType::F32);
    assert_eq!(out.to_vec::<f32>().unwrap(), expected);
    let out = ToFloatScaled.apply(&u, &mut Generator::new(0)).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), expected);
    assert!(matches!(
        to_float_scaled(&Tensor::from_slice(&[1.0f32])),
        Err(Error::DType { .. })
    ));
}

/// A 1x3x3 image with values 1..=9.
fn image3() -> Tensor {
    Tensor::arange(1.0, 10.0, 1.0, DType::F32, CPU)
        .unwrap()
        .reshape(&[1, 3, 3])
        .unwrap()
}

/// Every 2x2 window of `image3` zero-padded by 1 (a 5x5 image), as flat vectors.
fn padded_windows() -> Vec<Vec<f32>> {
    let mut p = [[0.0f32; 5]; 5];
    for r in 0..3 {
        for c in 0..3 {
            p[r + 1][c + 1] = (r * 3 + c + 1) as f32;
        }
    }
    let mut out = Vec::new();
    for i in 0..4 {
        for j in 0..4 {
            out.push(vec![p[i][j], p[i][j + 1], p[i + 1][j], p[i + 1][j + 1]]);
        }
    }
    out
}

#[test]
fn random_crop_pads_with_zeros_and_picks_a_window_per_image() {
    let crop = RandomCrop::new((2, 2), 1);
    let windows = padded_windows();
    let mut g = Generator::new(3);
    let one = crop.apply(&image3(), &mut g).unwrap();
    assert_eq!(one.shape(), &[1, 2, 2]);
    assert!(windows.contains(&one.to_vec::<f32>().unwrap()));

    let batch = image3()
        .unsqueeze(0)
        .unwrap()
        .expand(&[32, 1, 3, 3])
        .unwrap();
    let out = crop.apply(&batch, &mut g).unwrap();
    assert_eq!(out.shape(), &[32, 1, 2, 2]);
    let v = out.to_vec::<f32>().unwrap();
    let crops: Vec<Vec<f32>> = v.chunks(4).map(|c| c.to_vec()).collect();
    assert!(crops.iter().all(|c| windows.contains(c)));
    let distinct: std::collections::HashSet<Vec<u32>> = crops
        .iter()
        .map(|c| c.iter().map(|x| x.to_bits()).collect())
        .collect();
    assert!(distinct.len() > 4, "each image draws its own offset");
    // Same generator state, same crops.
    let mut g2 = Generator::new(3);
    crop.apply(&image3(), &mut g2).unwrap();
    assert_eq!(
        crop.apply(&batch, &mut g2)
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        v
    );

    // No padding and the full size: the identity, for u8 too.
    let u = image3().to_dtype(DType::U8).unwrap();
    let same = RandomCrop::new((3, 3), 0).apply(&u, &mut g).unwrap();
    assert_eq!(same.to_vec::<u8>().unwrap(), u.to_vec::<u8>().unwrap());
    // An empty batch.
    let empty = Tensor::zeros(&[0, 1, 3, 3], DType::F32, CPU).unwrap();
    assert_eq!(crop.apply(&empty, &mut g).unwrap().shape(), &[0, 1, 2, 2]);
}

#[test]
fn random_crop_errors() {
    let mut g = Generator::new(0);
    let e = err_text(RandomCrop::new((6, 2), 1).apply(&image3(), &mut g));
    assert!(e.contains("larger than the input image size"), "{e}");
    let flat = Tensor::zeros(&[9], DType::F32, CPU).unwrap();
    assert!(matches!(
        RandomCrop::new((1, 1), 0).apply(&flat, &mut g),
        Err(Error::Shape { .. })
    ));
}

#[test]
fn random_horizontal_flip() {
    let img = image3();
    let flipped = vec![3.0f32, 2., 1., 6., 5., 4., 9., 8., 7.];
    let mut g = Generator::new(1);
    let out = RandomHorizontalFlip::new(1.0).apply(&img, &mut g).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), flipped);
    let out = RandomHorizontalFlip::new(0.0).apply(&img, &mut g).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), img.to_vec::<f32>().unwrap());

    let batch = img.unsqueeze(0).unwrap().expand(&[64, 1, 3, 3]).unwrap();
    let out = RandomHorizontalFlip::default()
        .apply(&batch, &mut g)
        .unwrap();
    let v = out.to_vec::<f32>().unwrap();
    let n_flipped = v.chunks(9).filter(|c| *c == flipped.as_slice()).count();
    let n_same = v
        .chunks(9)
        .filter(|c| *c == [1.0f32, 2., 3., 4., 5., 6., 7., 8., 9.])
        .count();
    assert_eq!(n_flipped + n_same, 64);
    assert!(n_flipped > 10 && n_same > 10, "{n_flipped} flipped of 64");

    let e = err_text(RandomHorizontalFlip::new(1.5).apply(&img, &mut g));
    assert!(e.contains("1.5"), "{e}");
}

// ---------------------------------------------------------------- IDX, MNIST, CIFAR-10

#[test]
fn read_idx_raw_and_gz() {
    let dir = temp_dir("idx");
    let data: Vec<u8> = (0..24).collect();
    let bytes = encode_idx_u8(&data, &[2, 3, 4]);
    std::fs::write(dir.join("raw"), &bytes).unwrap();
    std::fs::write(dir.join("x.gz"), gzip(&bytes)).unwrap();
    for name in ["raw", "x.gz"] {
        let t = read_idx(dir.join(name)).unwrap();
        assert_eq!(t.dtype(), DType::U8);
        assert_eq!(t.shape(), &[2, 3, 4]);
        assert_eq!(t.to_vec::<u8>().unwrap(), data);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn read_idx_errors_name_the_file_and_the_problem() {
    let dir = temp_dir("idx-errors");
    let good = encode_idx_u8(&[1, 2, 3, 4, 5, 6], &[2, 3]);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("magic", vec![1, 2, 8, 1, 0, 0, 0, 1, 5], "bad magic number"),
        (
            "code",
            vec![0, 0, 0x07, 1, 0, 0, 0, 1, 5],
            "unsupported IDX type code 0x07",
        ),
        (
            "truncated",
            good[..good.len() - 2].to_vec(),
            "expected 6 bytes of data, found 4",
        ),
        (
            "trailing",
            [good.clone(), vec![0]].concat(),
            "trailing data",
        ),
        ("short", vec![0, 0], "too short"),
    ];
    for (name, bytes, msg) in &cases {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        let e = err_text(read_idx(&path));
        assert!(e.contains(msg) && e.contains(name), "{name}: {e}");
        // The same problems inside a .gz file.
        let gz = dir.join(format!("{name}.gz"));
        std::fs::write(&gz, gzip(bytes)).unwrap();
        assert!(err_text(read_idx(&gz)).contains(msg));
    }
    // A corrupt gzip stream is invalid data, a missing file an I/O error; both name the file.
    let corrupt = dir.join("corrupt.gz");
    std::fs::write(&corrupt, [0x1f, 0x8b, 8, 0, 1, 2, 3]).unwrap();
    let e = read_idx(&corrupt).unwrap_err().to_string();
    assert!(
        e.contains("corrupt.gz") && e.contains("corrupt gzip data"),
        "{e}"
    );
    let e = read_idx(dir.join("missing")).unwrap_err();
    match &e {
        Error::Io(io) => assert_eq!(io.kind(), std::io::ErrorKind::NotFound),
        other => panic!("expected an io error, got {other}"),
    }
    assert!(e.to_string().contains("missing"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes a tiny MNIST split (`n` images of 28x28, pixel = (image + row) mod 256, labels
/// image mod 10) to `dir`, gzipped or not.
fn write_mnist(dir: &std::path::Path, prefix: &str, n: usize, gz: bool) {
    let pixels: Vec<u8> = (0..n * 784)
        .map(|k| ((k / 784 + k % 784 / 28) % 256) as u8)
        .collect();
    let labels: Vec<u8> = (0..n).map(|i| (i % 10) as u8).collect();
    let files = [
        (
            format!("{prefix}-images-idx3-ubyte"),
            encode_idx_u8(&pixels, &[n, 28, 28]),
        ),
        (
            format!("{prefix}-labels-idx1-ubyte"),
            encode_idx_u8(&labels, &[n]),
        ),
    ];
    for (name, bytes) in files {
        if gz {
            std::fs::write(dir.join(format!("{name}.gz")), gzip(&bytes)).unwrap();
        } else {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
    }
}

#[test]
fn mnist_from_generated_files() {
    let dir = temp_dir("mnist");
    write_mnist(&dir, "train", 12, true);
    write_mnist(&dir, "t10k", 3, false);
    let m = MnistDataset::load(&dir, true).unwrap();
    assert_eq!(m.len(), 12);
    assert_eq!(m.images_u8.shape(), &[12, 1, 28, 28]);
    assert_eq!(m.images_u8.dtype(), DType::U8);
    assert_eq!(m.labels_i64.dtype(), DType::I64);
    let ds = load_mnist_dir(&dir, true).unwrap();
    assert_eq!(ds.len(), 12);
    let (x, y) = ds.get(11).unwrap();
    assert_eq!(x.shape(), &[1, 28, 28]);
    assert_eq!(x.dtype(), DType::F32);
    assert_eq!(y.item::<i64>().unwrap(), 1);
    // Image 11, row 2: pixel 13, scaled like ToTensor.
    assert_eq!(x.to_vec::<f32>().unwrap()[2 * 28], 13.0f32 / 255.0);
    assert_eq!(m.to_u8_dataset().unwrap().inputs().dtype(), DType::U8);
    let test = load_mnist_dir(&dir, false).unwrap();
    assert_eq!(test.len(), 3);

    // Mismatched counts.
    let bad = temp_dir("mnist-bad");
    write_mnist(&bad, "train", 4, false);
    std::fs::write(
        bad.join("train-labels-idx1-ubyte"),
        encode_idx_u8(&[1, 2, 3], &[3]),
    )
    .unwrap();
    let e = err_text(MnistDataset::load(&bad, true));
    assert!(e.contains("4 images but") && e.contains("3 labels"), "{e}");
    let _ = std::fs::remove_dir_all(&bad);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mnist_missing_files_say_which_and_how_to_get_them() {
    let dir = temp_dir("mnist-missing");
    let e = err_text(load_mnist_dir(&dir, true));
    assert!(
        e.contains("train-images-idx3-ubyte.gz")
            && e.contains("apt-get install dataset-fashion-mnist")
            && e.contains("--data"),
        "{e}"
    );
    let e = err_text(load_mnist_dir(dir.join("nope"), false));
    assert!(e.contains("does not exist") && e.contains("nope"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fashion_mnist_if_installed() {
    if !std::path::Path::new(FASHION_MNIST_DIR).is_dir() {
        eprintln!(
            "skipping: {FASHION_MNIST_DIR} not found (apt-get install dataset-fashion-mnist)"
        );
        return;
    }
    let train = MnistDataset::load(FASHION_MNIST_DIR, true).unwrap();
    assert_eq!(train.images_u8.shape(), &[60000, 1, 28, 28]);
    // From the files via Python gzip + struct: first labels and the pixel sum of image 0.
    let first: Vec<i64> = train.labels_i64.narrow(0, 0, 10).unwrap().to_vec().unwrap();
    assert_eq!(first, vec![9, 0, 0, 3, 0, 2, 7, 2, 5, 5]);
    let img0 = train
        .images_u8
        .select(0, 0)
        .unwrap()
        .to_vec::<u8>()
        .unwrap();
    assert_eq!(img0.iter().map(|&p| p as u64).sum::<u64>(), 76247);
    let test = load_mnist_dir(FASHION_MNIST_DIR, false).unwrap();
    assert_eq!(test.len(), 10000);
    let first: Vec<i64> = test.targets().narrow(0, 0, 10).unwrap().to_vec().unwrap();
    assert_eq!(first, vec![9, 2, 1, 1, 6, 1, 4, 6, 5, 7]);
    let max = test.inputs().max_all().unwrap().item::<f32>().unwrap();
    assert!(max <= 1.0);

    // An epoch at batch 64 over the training set: every label once, 938 batches.
    let ds = train.to_u8_dataset().unwrap();
    let mut l = DataLoader::new(
        Arc::new(ds),
        DataLoaderOptions::default()
            .batch_size(64)
            .shuffle(true)
            .seed(0)
            .num_workers(2)
            .transform(Arc::new(ToFloatScaled)),
    )
    .unwrap();
    assert_eq!(l.len(), 938);
    let mut seen = 0;
    for b in l.iter().unwrap() {
        let (x, y) = b.unwrap();
        assert_eq!(x.dtype(), DType::F32);
        seen += y.numel();
    }
    assert_eq!(seen, 60000);
}

/// `n` CIFAR-10 records: label i % 10, pixels (i + k) mod 256.
fn cifar_records(n: usize, first: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in first..first + n {
        out.push((i % 10) as u8);
        out.extend((0..3072).map(|k| ((i + k) % 256) as u8));
    }
    out
}

#[test]
fn cifar10_reader() {
    let dir = temp_dir("cifar");
    let path = dir.join("test_batch.bin");
    std::fs::write(&path, cifar_records(3, 0)).unwrap();
    let (x, y) = read_cifar10_batch(&path).unwrap();
    assert_eq!(x.shape(), &[3, 3, 32, 32]);
    assert_eq!(x.dtype(), DType::U8);
    assert_eq!(y.to_vec::<i64>().unwrap(), vec![0, 1, 2]);
    // Image 1, channel 1 (green), row 0, col 2: pixel k = 1024 + 2 -> (1 + 1026) mod 256.
    let v = x.select(0, 1).unwrap().to_vec::<u8>().unwrap();
    assert_eq!(v[1026], (1027 % 256) as u8);

    for i in 1..=5 {
        std::fs::write(
            dir.join(format!("data_batch_{i}.bin")),
            cifar_records(2, 2 * (i - 1)),
        )
        .unwrap();
    }
    let (x, y) = load_cifar10_dir(&dir, true).unwrap();
    assert_eq!(x.shape(), &[10, 3, 32, 32]);
    assert_eq!(y.to_vec::<i64>().unwrap(), (0..10).collect::<Vec<i64>>());
    assert_eq!(load_cifar10_dir(&dir, false).unwrap().1.numel(), 3);

    // Errors: a length that is not a multiple of 3073, a label above 9, a missing batch.
    let short = dir.join("short.bin");
    std::fs::write(&short, &cifar_records(1, 0)[..3000]).unwrap();
    let e = err_text(read_cifar10_batch(&short));
    assert!(e.contains("short.bin") && e.contains("3073"), "{e}");
    let mut bad = cifar_records(2, 0);
    bad[3073] = 10;
    let badp = dir.join("bad.bin");
    std::fs::write(&badp, bad).unwrap();
    let e = err_text(read_cifar10_batch(&badp));
    assert!(e.contains("record 1 has label 10"), "{e}");
    std::fs::remove_file(dir.join("data_batch_3.bin")).unwrap();
    let e = err_text(load_cifar10_dir(&dir, true));
    assert!(e.contains("data_batch_3.bin"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
