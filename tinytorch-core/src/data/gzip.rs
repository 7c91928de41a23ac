//! Reading data files that may be gzip-compressed, with the decompressed size bounded by what
//! the file itself declares: a small corrupt or hostile `.gz` cannot make a reader allocate
//! more than its own header (or gzip trailer) justifies.

use crate::error::{Error, Result};
use std::io::Read;
use std::path::Path;

/// Whether `raw` starts with the gzip magic `1f 8b`.
pub(crate) fn is_gzip(raw: &[u8]) -> bool {
    raw.starts_with(&[0x1f, 0x8b])
}

/// The bytes of the file at `path`; I/O errors keep their kind and gain the file name.
pub(crate) fn read_file(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        Error::Io(std::io::Error::new(
            e.kind(),
            format!("{}: {e}", path.display()),
        ))
    })
}

/// A reader of the decompressed stream of the gzip data `raw` (every member, as `zcat`
/// reads concatenated files).
pub(crate) fn decoder(raw: &[u8]) -> impl Read + '_ {
    flate2::read::MultiGzDecoder::new(raw)
}

/// Append at most `limit` bytes of `reader` to `out`. Growth follows the data actually
/// decompressed, never `limit` itself, so an implausible declared size costs nothing.
pub(crate) fn read_at_most(
    reader: &mut impl Read,
    limit: u64,
    out: &mut Vec<u8>,
) -> std::result::Result<(), String> {
    reader
        .take(limit)
        .read_to_end(out)
        .map(drop)
        .map_err(|e| format!("corrupt gzip data: {e}"))
}

/// The decompressed bytes of the gzip data `raw`, which may not exceed the size its last
/// member's trailer declares (ISIZE: the length modulo 2^32, so files up to 4 GiB are exact).
pub(crate) fn gunzip_declared(raw: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let declared = raw
        .len()
        .checked_sub(4)
        .map(|at| u32::from_le_bytes(raw[at..].try_into().expect("4 bytes")) as u64)
        .ok_or_else(|| format!("truncated gzip data: {} bytes", raw.len()))?;
    let mut out = Vec::new();
    read_at_most(&mut decoder(raw), declared + 1, &mut out)?;
    if out.len() as u64 > declared {
        return Err(format!(
            "corrupt gzip data: it decompresses to more than the {declared} bytes its trailer declares"
        ));
    }
    Ok(out)
}
