//! The safetensors format (`safetensors.torch.save_file` / `load_file`): an 8-byte
//! little-endian header length, a JSON header mapping each tensor name to its dtype, shape
//! and byte range, an optional `__metadata__` map of strings, then the raw little-endian data.
//!
//! Reading goes through the `safetensors` crate, which validates the file. Writing builds the
//! header here so that the bytes written are deterministic (the crate keeps metadata in a
//! `HashMap`, whose order varies between runs) and tensors stream into the atomic temp file
//! one at a time. The integration tests check both directions against PyTorch.

use super::atomic::{io_error, write_atomic};
use crate::error::{Error, Result};
use crate::nn::Module;
use crate::tensor::{DType, Tensor};
use half::{bf16, f16};
use safetensors::{SafeTensorError, SafeTensors};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::Path;

/// The header key that holds the string metadata.
const METADATA_KEY: &str = "__metadata__";

/// The safetensors name of a dtype.
pub fn dtype_to_safetensors(dtype: DType) -> &'static str {
    match dtype {
        DType::Bool => "BOOL",
        DType::U8 => "U8",
        DType::I32 => "I32",
        DType::I64 => "I64",
        DType::F16 => "F16",
        DType::BF16 => "BF16",
        DType::F32 => "F32",
        DType::F64 => "F64",
    }
}

/// The dtype of a safetensors dtype name, `None` for names TinyTorch has no dtype for
/// (`I16`, `F8_E4M3`, ...).
pub fn dtype_from_safetensors(name: &str) -> Option<DType> {
    DType::ALL
        .into_iter()
        .find(|d| dtype_to_safetensors(*d) == name)
}

// ---- writing -------------------------------------------------------------------------------

/// The elements of `t` in row-major order as little-endian bytes (copies non-contiguous
/// views and device tensors to a contiguous host buffer).
fn tensor_bytes(t: &Tensor) -> Result<Vec<u8>> {
    fn le<T, const N: usize>(v: Vec<T>, f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
        v.into_iter().flat_map(f).collect()
    }
    Ok(match t.dtype() {
        DType::Bool => le(t.to_vec::<bool>()?, |x| [u8::from(x)]),
        DType::U8 => t.to_vec::<u8>()?,
        DType::I32 => le(t.to_vec::<i32>()?, i32::to_le_bytes),
        DType::I64 => le(t.to_vec::<i64>()?, i64::to_le_bytes),
        DType::F16 => le(t.to_vec::<f16>()?, |x| x.to_bits().to_le_bytes()),
        DType::BF16 => le(t.to_vec::<bf16>()?, |x| x.to_bits().to_le_bytes()),
        DType::F32 => le(t.to_vec::<f32>()?, f32::to_le_bytes),
        DType::F64 => le(t.to_vec::<f64>()?, f64::to_le_bytes),
    })
}

/// A safetensors file ready to be written: the padded header and the tensors in file order.
struct Prepared<'a> {
    header: Vec<u8>,
    order: Vec<&'a Tensor>,
}

/// Build the header. Tensors are laid out by decreasing element size, then by name (as the
/// reference writer does), so every tensor's data is aligned to its element size in a file
/// loaded at an 8-byte aligned address; the header is padded with spaces to a multiple of 8.
fn prepare<'a>(
    op: &'static str,
    tensors: &'a BTreeMap<String, Tensor>,
    metadata: &BTreeMap<String, String>,
) -> Result<Prepared<'a>> {
    if tensors.contains_key(METADATA_KEY) {
        return Err(Error::invalid(
            op,
            format!("'{METADATA_KEY}' is reserved and cannot name a tensor"),
        ));
    }
    let mut order: Vec<(&String, &Tensor)> = tensors.iter().collect();
    order.sort_by(|(an, a), (bn, b)| {
        let (sa, sb) = (a.dtype().size_in_bytes(), b.dtype().size_in_bytes());
        sb.cmp(&sa).then_with(|| an.cmp(bn))
    });

    let mut header = Map::new();
    if !metadata.is_empty() {
        let meta: Map<String, Value> = metadata
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        header.insert(METADATA_KEY.into(), Value::Object(meta));
    }
    let mut offset = 0;
    for (name, t) in &order {
        let len = t.numel() * t.dtype().size_in_bytes();
        let info = serde_json::json!({
            "dtype": dtype_to_safetensors(t.dtype()),
            "shape": t.shape(),
            "data_offsets": [offset, offset + len],
        });
        offset += len;
        header.insert((*name).clone(), info);
    }
    let mut header = serde_json::to_vec(&Value::Object(header))
        .map_err(|e| Error::invalid(op, format!("cannot encode the header: {e}")))?;
    header.resize(header.len().next_multiple_of(8), b' ');
    Ok(Prepared {
        header,
        order: order.into_iter().map(|(_, t)| t).collect(),
    })
}

/// Stream the file: one tensor's bytes in memory at a time.
fn write_prepared(p: &Prepared, w: &mut dyn Write) -> Result<()> {
    w.write_all(&(p.header.len() as u64).to_le_bytes())?;
    w.write_all(&p.header)?;
    for t in &p.order {
        w.write_all(&tensor_bytes(t)?)?;
    }
    Ok(())
}

/// Serialise `tensors` and `metadata` to the bytes of a safetensors file (the in-memory form
/// of [`save_safetensors_with_metadata`], like `safetensors.torch.save`).
pub fn serialize_safetensors(
    tensors: &BTreeMap<String, Tensor>,
    metadata: &BTreeMap<String, String>,
) -> Result<Vec<u8>> {
    let prepared = prepare("serialize_safetensors", tensors, metadata)?;
    let mut bytes = Vec::new();
    write_prepared(&prepared, &mut bytes)?;
    Ok(bytes)
}

/// Write a safetensors file atomically, streaming the tensors; `op` names the caller.
pub(crate) fn write_file(
    op: &'static str,
    path: &Path,
    tensors: &BTreeMap<String, Tensor>,
    metadata: &BTreeMap<String, String>,
) -> Result<()> {
    let prepared = prepare(op, tensors, metadata)?;
    write_atomic(op, path, |w| write_prepared(&prepared, w))
}

/// Write `tensors` to a safetensors file at `path`, atomically: a crash mid-save leaves the
/// previous file whole (`safetensors.torch.save_file(tensors, path)`). Non-contiguous tensors
/// are saved contiguous; a tensor on another device is copied to the host.
pub fn save_safetensors(path: impl AsRef<Path>, tensors: &BTreeMap<String, Tensor>) -> Result<()> {
    save_safetensors_with_metadata(path, tensors, &BTreeMap::new())
}

/// [`save_safetensors`] with a `__metadata__` map of strings
/// (`save_file(tensors, path, metadata=...)`).
pub fn save_safetensors_with_metadata(
    path: impl AsRef<Path>,
    tensors: &BTreeMap<String, Tensor>,
    metadata: &BTreeMap<String, String>,
) -> Result<()> {
    write_file("save_safetensors", path.as_ref(), tensors, metadata)
}

// ---- reading -------------------------------------------------------------------------------

/// Tensors and string metadata read from a safetensors file.
type Contents = (BTreeMap<String, Tensor>, BTreeMap<String, String>);

/// Parse the bytes of a safetensors file into CPU tensors and metadata (the in-memory form
/// of [`load_safetensors_with_metadata`], like `safetensors.torch.load`).
pub fn deserialize_safetensors(bytes: &[u8]) -> Result<Contents> {
    parse(bytes).map_err(|problem| Error::invalid("load_safetensors", problem))
}

/// Read every tensor of the safetensors file at `path` onto the CPU
/// (`safetensors.torch.load_file(path)`). A missing, truncated or corrupt file, or a dtype
/// TinyTorch does not have, is an `Err` that names the file and the problem.
pub fn load_safetensors(path: impl AsRef<Path>) -> Result<BTreeMap<String, Tensor>> {
    Ok(load_safetensors_with_metadata(path)?.0)
}

/// [`load_safetensors`] that also returns the `__metadata__` map (empty when absent).
pub fn load_safetensors_with_metadata(path: impl AsRef<Path>) -> Result<Contents> {
    let path = path.as_ref();
    let op = "load_safetensors";
    let bytes = std::fs::read(path).map_err(|e| io_error(op, path, "cannot read", e))?;
    parse(&bytes).map_err(|problem| Error::invalid(op, format!("'{}': {problem}", path.display())))
}

/// Decode every tensor and the metadata. The `safetensors` crate validates the file (header
/// length, JSON, that the byte ranges tile the data exactly and match each shape and dtype);
/// its errors are turned into plain descriptions here, and the caller adds the file name.
fn parse(bytes: &[u8]) -> std::result::Result<Contents, String> {
    // The crate keeps the metadata of a deserialised file private, so the header (small next
    // to the data) is read once more through `read_metadata` to get it.
    let (_, header) = SafeTensors::read_metadata(bytes).map_err(|e| describe(e, bytes.len()))?;
    let file = SafeTensors::deserialize(bytes).map_err(|e| describe(e, bytes.len()))?;
    let metadata = header
        .metadata()
        .as_ref()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    let mut tensors = BTreeMap::new();
    for (name, view) in file.iter() {
        let dtype = dtype_from_crate(view.dtype()).ok_or_else(|| {
            format!(
                "tensor '{name}' has dtype {:?}, which TinyTorch does not support \
                 (supported: BOOL, U8, I32, I64, F16, BF16, F32, F64)",
                view.dtype()
            )
        })?;
        let tensor = Tensor::from_le_bytes(view.data(), view.shape(), dtype)
            .map_err(|e| format!("corrupt tensor '{name}': {e}"))?;
        tensors.insert(name.to_string(), tensor);
    }
    Ok((tensors, metadata))
}

/// The TinyTorch dtype of a dtype the crate read, `None` for ones TinyTorch lacks.
fn dtype_from_crate(dtype: safetensors::Dtype) -> Option<DType> {
    dtype_from_safetensors(&format!("{dtype:?}"))
}

/// Say what the crate's error means for the user: a truncated file or a corrupt header.
fn describe(e: SafeTensorError, file_len: usize) -> String {
    use SafeTensorError::*;
    match e {
        HeaderTooSmall => {
            format!("truncated file: {file_len} bytes, too short for the 8-byte header length")
        }
        InvalidHeaderLength => format!(
            "truncated file: the header length runs past the end of the {file_len}-byte file"
        ),
        MetadataIncompleteBuffer => format!(
            "truncated or corrupt file: the tensors' byte ranges do not cover the data of the \
             {file_len}-byte file exactly"
        ),
        InvalidOffset(name) => format!(
            "corrupt header: tensor '{name}' has data_offsets that leave a gap, overlap or \
             run backwards"
        ),
        TensorInvalidInfo => "corrupt header: a tensor's shape and dtype do not match its \
                              data_offsets"
            .to_string(),
        HeaderTooLarge => "corrupt header: the header length is implausible (not a safetensors \
                           file?)"
            .to_string(),
        other => format!("corrupt header: {other}"),
    }
}

// ---- modules -------------------------------------------------------------------------------

/// Save `module.state_dict()` (parameters and buffers under PyTorch's names) to a
/// safetensors file (`save_file(model.state_dict(), path)`).
pub fn save_module(path: impl AsRef<Path>, module: &dyn Module) -> Result<()> {
    save_safetensors(path, &module.state_dict())
}

/// Load a safetensors state dict into `module` (`model.load_state_dict(load_file(path),
/// strict)`); values are copied into the existing parameters and cast to their dtypes. With
/// `strict`, missing and unexpected keys are errors; nothing is written unless all keys fit.
pub fn load_module(path: impl AsRef<Path>, module: &dyn Module, strict: bool) -> Result<()> {
    let state: HashMap<String, Tensor> = load_safetensors(path)?.into_iter().collect();
    module.load_state_dict(&state, strict)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtype_names_round_trip() {
        for d in DType::ALL {
            assert_eq!(dtype_from_safetensors(dtype_to_safetensors(d)), Some(d));
        }
        assert_eq!(dtype_from_safetensors("I16"), None);
    }

    #[test]
    fn layout_is_aligned_and_deterministic() {
        let mut m = BTreeMap::new();
        m.insert("a_u8".to_string(), Tensor::from_slice(&[1u8, 2, 3]));
        m.insert("b_f64".to_string(), Tensor::from_slice(&[1.5f64]));
        m.insert("c_f32".to_string(), Tensor::from_slice(&[2.5f32, 3.5]));
        let meta = BTreeMap::from([
            ("z".to_string(), "1".to_string()),
            ("a".to_string(), "2".to_string()),
        ]);
        let bytes = serialize_safetensors(&m, &meta).unwrap();
        assert_eq!(bytes, serialize_safetensors(&m, &meta).unwrap());
        let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        assert_eq!(n % 8, 0);
        let header: Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
        assert_eq!(header["b_f64"]["data_offsets"], serde_json::json!([0, 8]));
        assert_eq!(header["c_f32"]["data_offsets"], serde_json::json!([8, 16]));
        assert_eq!(header["a_u8"]["data_offsets"], serde_json::json!([16, 19]));
        let (back, meta_back) = deserialize_safetensors(&bytes).unwrap();
        assert_eq!(meta_back, meta);
        assert_eq!(back["c_f32"].to_vec::<f32>().unwrap(), vec![2.5, 3.5]);
    }
}
