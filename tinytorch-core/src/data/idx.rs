//! Reader of IDX files, the format of MNIST and Fashion-MNIST, raw or gzip-compressed.
//!
//! Layout: two zero bytes, a type code, the number of dims `d`, then `d` big-endian u32 sizes,
//! then the elements in row-major order, big-endian. Type codes: 0x08 u8, 0x09 i8, 0x0B i16,
//! 0x0C i32, 0x0D f32, 0x0E f64. u8 data gives a U8 tensor, the signed integers I64, the
//! floats F32 / F64.

use super::gzip::{decoder, is_gzip, read_at_most, read_file};
use crate::error::{Error, Result};
use crate::Tensor;
use std::path::Path;

const OP: &str = "read_idx";

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
    parse_idx_file(&read_file(path)?)
        .map_err(|msg| Error::invalid(OP, format!("{}: {msg}", path.display())))
}

/// Parse the bytes of an IDX file as stored on disk, raw or gzip-compressed; the error is a
/// message without the file name. A compressed file is decompressed only as far as its IDX
/// header says the data reaches (plus one byte, to detect trailing data).
pub fn parse_idx_file(raw: &[u8]) -> std::result::Result<Tensor, String> {
    if !is_gzip(raw) {
        return parse_idx(raw);
    }
    let mut gz = decoder(raw);
    let mut bytes = Vec::new();
    read_at_most(&mut gz, 4, &mut bytes)?;
    if let Some(&ndim) = bytes.get(3) {
        read_at_most(&mut gz, 4 * ndim as u64, &mut bytes)?;
    }
    // A header that does not parse is reported by `parse_idx` below.
    if let Ok(header) = Header::parse(&bytes) {
        read_at_most(&mut gz, header.data_len as u64 + 1, &mut bytes)?;
    }
    parse_idx(&bytes)
}

/// The header of an IDX file.
struct Header {
    code: u8,
    shape: Vec<usize>,
    /// Bytes of the header itself.
    len: usize,
    /// Bytes of data the shape and type call for.
    data_len: usize,
}

impl Header {
    fn parse(bytes: &[u8]) -> std::result::Result<Header, String> {
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
        let len = 4 + 4 * ndim;
        if bytes.len() < len {
            return Err(format!(
                "truncated header: {ndim} dims need {len} bytes, found {}",
                bytes.len()
            ));
        }
        let shape: Vec<usize> = bytes[4..len]
            .chunks_exact(4)
            .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]) as usize)
            .collect();
        // The dims must multiply out within usize even where one is zero (the strides of an
        // empty tensor are products of the other dims).
        let data_len = shape
            .iter()
            .try_fold(size, |acc, &d| acc.checked_mul(d.max(1)))
            .map(|len| if shape.contains(&0) { 0 } else { len })
            .ok_or_else(|| format!("dims {shape:?} are too large"))?;
        Ok(Header {
            code,
            shape,
            len,
            data_len,
        })
    }
}

/// Parse the (uncompressed) bytes of an IDX file; the error is a message without the file
/// name.
pub fn parse_idx(bytes: &[u8]) -> std::result::Result<Tensor, String> {
    let Header {
        code,
        shape,
        len,
        data_len: expected,
    } = Header::parse(bytes)?;
    let data = &bytes[len..];
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

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(bytes).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn gzip_files_decompress_only_as_far_as_the_header_says() {
        let raw = encode_idx_u8(&[1, 2, 3, 4, 5, 6], &[2, 3]);
        let t = parse_idx_file(&gzip(&raw)).unwrap();
        assert_eq!(
            (t.shape(), t.to_vec::<u8>().unwrap()),
            (&[2, 3][..], vec![1, 2, 3, 4, 5, 6])
        );
        // A megabyte of zeros past a 6-byte body: one byte past the body is read, then refused.
        let mut long = raw.clone();
        long.extend(vec![0u8; 1 << 20]);
        assert!(parse_idx_file(&gzip(&long))
            .unwrap_err()
            .contains("trailing data"));
        let short = gzip(&raw[..raw.len() - 2]);
        assert!(parse_idx_file(&short).unwrap_err().contains("truncated"));
        let cut = gzip(&raw);
        assert!(parse_idx_file(&cut[..cut.len() / 2])
            .unwrap_err()
            .contains("gzip"));
        // Dims whose product overflows once the zero dim is left out.
        let mut huge = vec![0, 0, 8, 4, 0, 0, 0, 0];
        huge.extend([255; 12]);
        assert!(parse_idx_file(&huge).unwrap_err().contains("too large"));
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
