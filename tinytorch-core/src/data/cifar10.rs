//! CIFAR-10, binary version (`cifar-10-batches-bin`): records of one label byte followed by
//! 3072 pixel bytes (1024 red, 1024 green, 1024 blue, each 32x32 row-major).

use super::gzip::{gunzip_declared, is_gzip, read_file};
use crate::error::{Error, Result};
use crate::Tensor;
use std::path::{Path, PathBuf};

const OP: &str = "cifar10";
const PIXELS: usize = 3 * 32 * 32;
const RECORD: usize = 1 + PIXELS;

/// Split concatenated records into (u8 images `[N, 3, 32, 32]`, i64 labels `[N]`); the error
/// is a message without the file name.
fn parse_records(bytes: &[u8]) -> std::result::Result<(Vec<u8>, Vec<i64>), String> {
    if !bytes.len().is_multiple_of(RECORD) {
        return Err(format!(
            "length {} is not a multiple of the record size {RECORD} (1 label byte + {PIXELS} pixels)",
            bytes.len()
        ));
    }
    let n = bytes.len() / RECORD;
    let mut images = Vec::with_capacity(n * PIXELS);
    let mut labels = Vec::with_capacity(n);
    for (i, rec) in bytes.chunks_exact(RECORD).enumerate() {
        if rec[0] > 9 {
            return Err(format!("record {i} has label {}, expected 0..=9", rec[0]));
        }
        labels.push(rec[0] as i64);
        images.extend_from_slice(&rec[1..]);
    }
    Ok((images, labels))
}

/// Parse the bytes of one batch file as stored on disk, raw or gzip-compressed, into u8
/// images `[N, 3, 32, 32]` and i64 labels `[N]`; the error is a message without the file
/// name. A compressed file may not decompress to more than its gzip trailer declares.
pub fn parse_cifar10_batch(raw: &[u8]) -> std::result::Result<(Tensor, Tensor), String> {
    let (images, labels) = parse_file(raw)?;
    to_tensors(images, labels).map_err(|e| e.to_string())
}

/// The records of a batch file's bytes, raw or gzip-compressed.
fn parse_file(raw: &[u8]) -> std::result::Result<(Vec<u8>, Vec<i64>), String> {
    if is_gzip(raw) {
        parse_records(&gunzip_declared(raw)?)
    } else {
        parse_records(raw)
    }
}

/// Tensors from the parsed records.
fn to_tensors(images: Vec<u8>, labels: Vec<i64>) -> Result<(Tensor, Tensor)> {
    let n = labels.len();
    Ok((
        Tensor::from_vec(images, &[n, 3, 32, 32])?,
        Tensor::from_vec(labels, &[n])?,
    ))
}

/// Read one batch file (`data_batch_1.bin`, ..., `test_batch.bin`; raw or .gz) as u8 images
/// `[N, 3, 32, 32]` and i64 labels `[N]`. Errors name the file: a length that is not a
/// multiple of 3073 bytes, a label above 9.
pub fn read_cifar10_batch(path: impl AsRef<Path>) -> Result<(Tensor, Tensor)> {
    let path = path.as_ref();
    parse_cifar10_batch(&read_file(path)?)
        .map_err(|msg| Error::invalid(OP, format!("{}: {msg}", path.display())))
}

/// The files of a split under `dir`, or under `dir/cifar-10-batches-bin` (the folder of the
/// official archive).
fn split_files(dir: &Path, train: bool) -> Result<Vec<PathBuf>> {
    let names: Vec<String> = if train {
        (1..=5).map(|i| format!("data_batch_{i}.bin")).collect()
    } else {
        vec!["test_batch.bin".to_string()]
    };
    let nested = dir.join("cifar-10-batches-bin");
    let base = if !dir.join(&names[0]).is_file() && nested.join(&names[0]).is_file() {
        nested
    } else {
        dir.to_path_buf()
    };
    names
        .iter()
        .map(|name| {
            let p = base.join(name);
            if p.is_file() {
                Ok(p)
            } else {
                Err(Error::invalid(
                    OP,
                    format!(
                        "{} does not exist (download the binary version of CIFAR-10 and pass the directory holding {names:?} with a --data DIR option)",
                        p.display()
                    ),
                ))
            }
        })
        .collect()
}

/// The training (`data_batch_1..5.bin`, 50000 images) or test (`test_batch.bin`, 10000)
/// split of CIFAR-10 in `dir`, as u8 images `[N, 3, 32, 32]` and i64 labels `[N]`
/// (`torchvision.datasets.CIFAR10(dir, train)`, before `ToTensor`).
pub fn load_cifar10_dir(dir: impl AsRef<Path>, train: bool) -> Result<(Tensor, Tensor)> {
    let mut images = Vec::new();
    let mut labels = Vec::new();
    for path in split_files(dir.as_ref(), train)? {
        let (i, l) = parse_file(&read_file(&path)?)
            .map_err(|msg| Error::invalid(OP, format!("{}: {msg}", path.display())))?;
        images.extend_from_slice(&i);
        labels.extend_from_slice(&l);
    }
    to_tensors(images, labels)
}
