//! Reader of IDX files, the format of MNIST and Fashion-MNIST, raw or gzip-compressed.
//!
//! Layout: two zero bytes, a type code, the number of dims `d`, then `d` big-endian u32 sizes,
//! then the elements in row-major order, big-endian. Type codes: 0x08 u8, 0x09 i8, 0x0B i16,
//! 0x0C i32, 0x0D f32, 0x0E f64. u8 data gives a U8 tensor, the signed integers I64, the
//! floats F32 / F64.

use crate::error::{Error, Result};
use crate::Tensor;
use std::io::Read;
use std::path::Path;

const OP: &str = "read_idx";

/// The bytes of `path`, gunzipped when they start with the gzip magic `1f 8b`. I/O errors
/// keep their kind and gain the file name.
pub(crate) fn read_maybe_gz(path: &Path) -> Result<Vec<u8>> {
    let with_path = |e: std::io::Error| {
        Error::Io(std::io::Error::new(
            e.kind(),
            format!("{}: {e}", path.display()),
        ))
    };
    let raw = std::fs::read(path).map_err(with_path)?;
    if !raw.starts_with(&[0x1f, 0x8b]) {
        return Ok(raw);
    }
    // Fashion-MNIST's images gunzip to 47 MB; a good first guess avoids regrowing.
    let mut out = Vec::with_capacity(raw.len().saturating_mul(2));
    flate2::read::MultiGzDecoder::new(raw.as_slice())
        .read_to_end(&mut out)
        .map_err(|e| {
            with_path(std::io::Error::new(
                e.kind(),
                format!("corrupt gzip data: {e}"),
            ))
        })?;
    Ok(out)
}

/// Element size in bytes of an IDX type code, or `None` if the code is unknown.
fn element_size(code: u8) -> Option<usize> {
    match code {
        0x08 | 0x09 => Some(1),
        0x0B => Some(2),
        0x0C | 0x0D => Some(4),
        0x0E => Some(8),
        _ => None,
    }
}

/// The tensor of an IDX file at `path` (raw or .gz), shaped by its header: U8 for the
/// unsigned-byte files of MNIST. Errors (naming the file) on a bad magic number, an unknown
/// type code, truncated or trailing data.
pub fn read_idx(path: impl AsRef<Path>) -> Result<Tensor> {
    let path = path.as_ref();
    let bytes = read_maybe_gz(path)?;
    parse_idx(&bytes).map_err(|msg| Error::invalid(OP, format!("{}: {msg}", path.display())))
}

/// Parse the bytes of an IDX file; the error is a message without the file name.
pub fn parse_idx(bytes: &[u8]) -> std::result::Result<Tensor, String> {
    if bytes.len() < 4 {
        return Err(format!(
            "file too short for an IDX header: {} bytes, expected at least 4",
            bytes.len()
        ));
    }
    if bytes[0] != 0 || bytes[1] != 0 {
        return Err(format!(
            "bad magic number {:02x} {:02x} {:02x} {:02x}: an IDX file starts with two zero bytes",
            bytes[0], bytes[1], bytes[2], bytes[3]
        ));
    }
    let code = bytes[2];
    let size = element_size(code).ok_or_else(|| {
        format!("unsupported IDX type code 0x{code:02x} (expected 0x08, 0x09, 0x0b, 0x0c, 0x0d or 0x0e)")
    })?;
    let ndim = bytes[3] as usize;
    let header = 4 + 4 * ndim;
    if bytes.len() < header {
        return Err(format!(
            "truncated header: {ndim} dims need {header} bytes, found {}",
            bytes.len()
        ));
    }
    let shape: Vec<usize> = bytes[4..header]
        .chunks_exact(4)
        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]) as usize)
        .collect();
    let expected = shape
        .iter()
        .try_fold(size, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| format!("dims {shape:?} are too large"))?;
    let data = &bytes[header..];
    if data.len() < expected {
        return Err(format!(
            "truncated: shape {shape:?} expected {expected} bytes of data, found {}",
            data.len()
        ));
    }
    if data.len() > expected {
        return Err(format!(
            "trailing data: shape {shape:?} expected {expected} bytes of data, found {}",
            data.len()
        ));
    }
    decode(code, data, &shape).map_err(|e| e.to_string())
}

/// The big-endian elements of type `code` in `data` as a tensor of `shape`.
fn decode(code: u8, data: &[u8], shape: &[usize]) -> Result<Tensor> {
    fn be<const N: usize>(data: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
        data.chunks_exact(N)
            .map(|c| c.try_into().expect("chunks_exact gives N bytes"))
    }
    match code {
        0x08 => Tensor::from_vec(data.to_vec(), shape),
        0x09 => Tensor::from_vec(
            data.iter().map(|&b| b as i8 as i64).collect::<Vec<_>>(),
            shape,
        ),
        0x0B => Tensor::from_vec(
            be::<2>(data)
                .map(|b| i16::from_be_bytes(b) as i64)
                .collect::<Vec<_>>(),
            shape,
        ),
        0x0C => Tensor::from_vec(
            be::<4>(data)
                .map(|b| i32::from_be_bytes(b) as i64)
                .collect::<Vec<_>>(),
            shape,
        ),
        0x0D => Tensor::from_vec(
            be::<4>(data).map(f32::from_be_bytes).collect::<Vec<_>>(),
            shape,
        ),
        _ => Tensor::from_vec(
            be::<8>(data).map(f64::from_be_bytes).collect::<Vec<_>>(),
            shape,
        ),
    }
}

/// The bytes of an IDX file holding `data` (u8, type 0x08) with `shape`; for tests and for
/// writing small data sets.
pub fn encode_idx_u8(data: &[u8], shape: &[usize]) -> Vec<u8> {
    let mut out = vec![0, 0, 0x08, shape.len() as u8];
    for &d in shape {
        out.extend_from_slice(&(d as u32).to_be_bytes());
    }
    out.extend_from_slice(data);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;

    #[test]
    fn decodes_every_type_code() {
        let mut f = vec![0, 0, 0x0C, 1, 0, 0, 0, 2];
        f.extend_from_slice(&(-5i32).to_be_bytes());
        f.extend_from_slice(&7i32.to_be_bytes());
        let t = parse_idx(&f).unwrap();
        assert_eq!(t.dtype(), DType::I64);
        assert_eq!(t.to_vec::<i64>().unwrap(), vec![-5, 7]);

        let mut f = vec![0, 0, 0x0D, 1, 0, 0, 0, 1];
        f.extend_from_slice(&1.5f32.to_be_bytes());
        assert_eq!(parse_idx(&f).unwrap().to_vec::<f32>().unwrap(), vec![1.5]);

        let mut f = vec![0, 0, 0x0E, 0];
        f.extend_from_slice(&(-2.25f64).to_be_bytes());
        let t = parse_idx(&f).unwrap();
        assert_eq!(t.shape(), &[] as &[usize]);
        assert_eq!(t.to_vec::<f64>().unwrap(), vec![-2.25]);

        let f = vec![0, 0, 0x09, 1, 0, 0, 0, 2, 0xff, 0x01];
        assert_eq!(parse_idx(&f).unwrap().to_vec::<i64>().unwrap(), vec![-1, 1]);

        let f = vec![0, 0, 0x0B, 1, 0, 0, 0, 1, 0xff, 0xfe];
        assert_eq!(parse_idx(&f).unwrap().to_vec::<i64>().unwrap(), vec![-2]);
    }

    #[test]
    fn u8_round_trip_and_empty_dims() {
        let t = parse_idx(&encode_idx_u8(&[1, 2, 3, 4, 5, 6], &[2, 3])).unwrap();
        assert_eq!(t.dtype(), DType::U8);
        assert_eq!(t.shape(), &[2, 3]);
        let t = parse_idx(&encode_idx_u8(&[], &[0, 28, 28])).unwrap();
        assert_eq!(t.shape(), &[0, 28, 28]);
    }

    #[test]
    fn header_errors() {
        assert!(parse_idx(&[0, 0]).unwrap_err().contains("too short"));
        assert!(parse_idx(&[0, 0, 8, 2, 0, 0])
            .unwrap_err()
            .contains("truncated header"));
        let huge = [
            0, 0, 8, 3, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
        ];
        // 2^96 bytes do not fit a usize on 64-bit machines.
        assert!(parse_idx(&huge).is_err());
    }
}
