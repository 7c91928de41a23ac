//! The int8 model file: one safetensors file holding, for each quantized layer at state-dict
//! path `P`, `P.weight` (I8, the float weight's shape), `P.weight_scale` (F32, one per output
//! channel), `P.bias` (F32) when the layer has one, and for static layers the calibrated
//! `P.input_scale`, `P.input_zero_point`, `P.scale` and `P.zero_point` (the output's, named as
//! in PyTorch's quantized modules); the parameters of layers left in float, in F32; and the
//! metadata `format` = `tinytorch.int8`, `version`, `layers` (JSON: each quantized layer's
//! type and whether it fused a ReLU) next to the caller's entries.
//!
//! The layers' geometry (stride, padding, ...) is not stored: a file loads into the float
//! model it came from, freshly built, whose layers it replaces.

use super::activation::Affine;
use super::conv::QuantConv2d;
use super::convert::{for_each_layer, rewrite};
use super::linear::{DynamicQuantLinear, QuantLinear};
use super::weight::Int8Weight;
use crate::error::{Error, Result};
use crate::io::write_atomic;
use crate::nn::{Conv2d, Linear, Module};
use crate::tensor::{DType, Tensor};
use safetensors::{Dtype, SafeTensors, View};
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// The value of the `format` metadata entry of an int8 model file.
pub const INT8_FORMAT: &str = "tinytorch.int8";
/// The layout version written by [`save_quantized`].
pub const INT8_VERSION: u64 = 1;

/// One stored tensor: dtype, shape and little-endian bytes.
struct Raw {
    dtype: Dtype,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

impl View for &Raw {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.bytes)
    }
    fn data_len(&self) -> usize {
        self.bytes.len()
    }
}

fn f32_raw(values: &[f32], shape: &[usize]) -> Raw {
    Raw {
        dtype: Dtype::F32,
        shape: shape.to_vec(),
        bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
    }
}

fn i64_scalar(v: i64) -> Raw {
    Raw {
        dtype: Dtype::I64,
        shape: Vec::new(),
        bytes: v.to_le_bytes().to_vec(),
    }
}

/// `P.name`, or `name` for the model itself.
fn entry_name(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// The entries of one quantized layer.
fn layer_entries(
    path: &str,
    weight: &Int8Weight,
    values: Vec<i8>,
    shape: &[usize],
    params: Option<(Affine, Affine)>,
    out: &mut BTreeMap<String, Raw>,
) {
    let mut put = |name: &str, raw: Raw| out.insert(entry_name(path, name), raw);
    put(
        "weight",
        Raw {
            dtype: Dtype::I8,
            shape: shape.to_vec(),
            bytes: values.into_iter().map(|v| v as u8).collect(),
        },
    );
    put("weight_scale", f32_raw(&weight.scales, &[weight.n()]));
    if let Some(b) = &weight.bias {
        put("bias", f32_raw(b, &[b.len()]));
    }
    if let Some((input, output)) = params {
        put("input_scale", f32_raw(&[input.scale], &[]));
        put("input_zero_point", i64_scalar(input.zero_point as i64));
        put("scale", f32_raw(&[output.scale], &[]));
        put("zero_point", i64_scalar(output.zero_point as i64));
    }
}

/// Write `model` (after `quantize_dynamic` or `convert_static`) to `path`, atomically (a
/// crash mid-save leaves the previous file whole), with `metadata` beside the format's own
/// entries (see the module docs).
pub fn save_quantized(
    path: impl AsRef<Path>,
    model: &dyn Module,
    metadata: &BTreeMap<String, String>,
) -> Result<()> {
    const OP: &str = "save_quantized";
    let mut entries = BTreeMap::new();
    let mut layers = Map::new();
    for_each_layer(model, "", &mut |p, m| {
        let any = m.as_any();
        let (kind, relu) = if let Some(q) = any.downcast_ref::<DynamicQuantLinear>() {
            let shape = [q.out_features(), q.in_features()];
            layer_entries(p, &q.weight, q.weight.values(), &shape, None, &mut entries);
            ("dynamic_linear", false)
        } else if let Some(q) = any.downcast_ref::<QuantLinear>() {
            let shape = [q.out_features(), q.in_features()];
            let params = Some((q.input, q.output));
            layer_entries(
                p,
                &q.weight,
                q.weight.values(),
                &shape,
                params,
                &mut entries,
            );
            ("linear", q.relu)
        } else if let Some(q) = any.downcast_ref::<QuantConv2d>() {
            let params = Some((q.input, q.output));
            let shape = q.weight_shape();
            layer_entries(
                p,
                &q.weight,
                q.weight_values(),
                &shape,
                params,
                &mut entries,
            );
            ("conv2d", q.relu)
        } else {
            return Ok(());
        };
        layers.insert(p.to_string(), json!({"type": kind, "relu": relu}));
        Ok(())
    })?;
    if layers.is_empty() {
        return Err(Error::invalid(OP, "the model has no quantized layer"));
    }
    for (name, t) in model
        .named_parameters()
        .into_iter()
        .chain(model.named_buffers())
    {
        let values = t.detach().to_dtype(DType::F32)?.to_vec::<f32>()?;
        entries.insert(name, f32_raw(&values, t.shape()));
    }
    let mut info: HashMap<String, String> = metadata.clone().into_iter().collect();
    info.insert("format".into(), INT8_FORMAT.into());
    info.insert("version".into(), INT8_VERSION.to_string());
    info.insert("layers".into(), Value::Object(layers).to_string());
    let bytes = safetensors::serialize(entries.iter().map(|(k, v)| (k.as_str(), v)), Some(info))
        .map_err(|e| Error::invalid(OP, format!("cannot encode the file: {e}")))?;
    write_atomic(OP, path.as_ref(), |w| Ok(w.write_all(&bytes)?))
}

/// The metadata of the safetensors file at `path` (empty when it has none), read from its
/// header only: tells an int8 model (`format` = [`INT8_FORMAT`]) from a checkpoint.
pub fn file_metadata(path: impl AsRef<Path>) -> Result<BTreeMap<String, String>> {
    let path = path.as_ref();
    let bytes = read("file_metadata", path)?;
    let (_, header) = SafeTensors::read_metadata(&bytes)
        .map_err(|e| Error::invalid("file_metadata", format!("'{}': {e}", path.display())))?;
    Ok(header
        .metadata()
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect())
}

fn read(op: &'static str, path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path)
        .map_err(|e| Error::invalid(op, format!("cannot read '{}': {e}", path.display())))
}

fn bad_file(path: &Path, problem: impl std::fmt::Display) -> Error {
    Error::invalid("load_quantized", format!("'{}': {problem}", path.display()))
}

/// A problem with the file, described for the error that names it.
type Found<T> = std::result::Result<T, String>;

/// A stored layer's integers (its weight's shape, row-major), scales and bias.
type StoredWeight = (Vec<i8>, Vec<f32>, Option<Vec<f32>>);

/// The stored tensors of one file, read with checks.
struct Stored<'a> {
    tensors: SafeTensors<'a>,
}

impl Stored<'_> {
    /// The bytes of entry `name`, which must have `dtype` and `shape`.
    fn bytes(&self, name: &str, dtype: Dtype, shape: &[usize]) -> Found<&[u8]> {
        let t = self
            .tensors
            .tensor(name)
            .map_err(|_| format!("missing entry '{name}'"))?;
        if t.dtype() != dtype || t.shape() != shape {
            return Err(format!(
                "entry '{name}' is {:?} {:?}, expected {dtype:?} {shape:?}",
                t.dtype(),
                t.shape()
            ));
        }
        Ok(t.data())
    }

    fn has(&self, name: &str) -> bool {
        self.tensors.tensor(name).is_ok()
    }

    fn f32s(&self, name: &str, shape: &[usize]) -> Found<Vec<f32>> {
        let b = self.bytes(name, Dtype::F32, shape)?;
        Ok(b.chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect())
    }

    fn i64_scalar(&self, name: &str) -> Found<i64> {
        let b = self.bytes(name, Dtype::I64, &[])?;
        Ok(i64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    /// The weight of the layer at `path`: integers, scales and (when `has_bias`) bias.
    fn weight(&self, path: &str, shape: &[usize], has_bias: bool) -> Found<StoredWeight> {
        let n = shape[0];
        let values = self
            .bytes(&entry_name(path, "weight"), Dtype::I8, shape)?
            .iter()
            .map(|&b| b as i8)
            .collect();
        let scales = self.f32s(&entry_name(path, "weight_scale"), &[n])?;
        let bias_name = entry_name(path, "bias");
        if self.has(&bias_name) != has_bias {
            return Err(format!(
                "the file {} '{bias_name}' but the model's layer {} a bias",
                if has_bias { "lacks" } else { "has" },
                if has_bias { "has" } else { "has no" }
            ));
        }
        let bias = has_bias.then(|| self.f32s(&bias_name, &[n])).transpose()?;
        Ok((values, scales, bias))
    }

    /// The calibrated input and output parameters of the static layer at `path`.
    fn params(&self, path: &str) -> Result<(Affine, Affine)> {
        let get = |scale: &str, zp: &str| -> Result<Affine> {
            let s = self
                .f32s(&entry_name(path, scale), &[])
                .map_err(|e| Error::invalid("load_quantized", e))?;
            let z = self
                .i64_scalar(&entry_name(path, zp))
                .map_err(|e| Error::invalid("load_quantized", e))?;
            Affine::checked("load_quantized", s[0], z)
        };
        Ok((
            get("input_scale", "input_zero_point")?,
            get("scale", "zero_point")?,
        ))
    }
}

/// Read an int8 model written by [`save_quantized`] into `model`, the float model it was
/// converted from (freshly built: its layers give the geometry, the file the values).
/// Returns the quantized model and the file's metadata. A file that is not an int8 model, or
/// that does not fit `model` (layer types, shapes, a fused ReLU the model lacks), is an `Err`
/// naming the file and the problem.
pub fn load_quantized(
    path: impl AsRef<Path>,
    model: Box<dyn Module>,
) -> Result<(Box<dyn Module>, BTreeMap<String, String>)> {
    let path = path.as_ref();
    let bytes = read("load_quantized", path)?;
    let metadata = file_metadata(path)?;
    if metadata.get("format").map(String::as_str) != Some(INT8_FORMAT) {
        return Err(bad_file(
            path,
            format!("not an int8 model (no metadata entry format = {INT8_FORMAT})"),
        ));
    }
    if metadata.get("version").map(String::as_str) != Some(&INT8_VERSION.to_string()) {
        return Err(bad_file(
            path,
            format!("version {:?} is not supported", metadata.get("version")),
        ));
    }
    let layers: Map<String, Value> = metadata
        .get("layers")
        .and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| bad_file(path, "missing or corrupt 'layers' metadata"))?;
    let stored = Stored {
        tensors: SafeTensors::deserialize(&bytes).map_err(|e| bad_file(path, e))?,
    };
    let mut used = 0;
    let model = rewrite(model, "", &mut |p, m, relu_next| {
        let Some(record) = layers.get(p) else {
            return Ok(None);
        };
        used += 1;
        let kind = record["type"].as_str().unwrap_or("?");
        let relu = record["relu"].as_bool().unwrap_or(false);
        if relu && !relu_next {
            return Err(bad_file(
                path,
                format!("layer '{p}' fuses a ReLU that the model does not have after it"),
            ));
        }
        let layer = load_layer(&stored, p, kind, relu, m).map_err(|e| match e {
            Error::Invalid { .. } | Error::Shape { .. } => bad_file(path, e),
            other => other,
        })?;
        Ok(Some((layer, relu)))
    })?;
    if used != layers.len() {
        return Err(bad_file(
            path,
            format!(
                "{} quantized layers but the model has {used} of them at those paths",
                layers.len()
            ),
        ));
    }
    // The layers left in float.
    let mut floats = HashMap::new();
    for (name, t) in model
        .named_parameters()
        .into_iter()
        .chain(model.named_buffers())
    {
        let values = stored
            .f32s(&name, t.shape())
            .map_err(|e| bad_file(path, e))?;
        floats.insert(
            name,
            Tensor::from_vec(values, t.shape())?.to_dtype(t.dtype())?,
        );
    }
    model.load_state_dict(&floats, false)?;
    Ok((model, metadata))
}

/// The quantized layer of type `kind` at `path`, from the float layer `m` and the file.
fn load_layer(
    stored: &Stored,
    path: &str,
    kind: &str,
    relu: bool,
    m: &dyn Module,
) -> Result<Box<dyn Module>> {
    const OP: &str = "load_quantized";
    let bad = |e: String| Error::invalid(OP, e);
    let any = m.as_any();
    match (
        kind,
        any.downcast_ref::<Linear>(),
        any.downcast_ref::<Conv2d>(),
    ) {
        ("dynamic_linear" | "linear", Some(l), _) => {
            let shape = l.weight.shape().to_vec();
            let (values, scales, bias) =
                stored.weight(path, &shape, l.bias.is_some()).map_err(bad)?;
            let weight = Int8Weight::new(OP, &values, shape[0], shape[1], scales, bias)?;
            Ok(if kind == "linear" {
                let (input, output) = stored.params(path)?;
                Box::new(QuantLinear::from_weight(weight, input, output, relu))
            } else {
                Box::new(DynamicQuantLinear::from_weight(weight))
            })
        }
        ("conv2d", _, Some(c)) => {
            let shape = c.weight.shape().to_vec();
            let (values, scales, bias) =
                stored.weight(path, &shape, c.bias.is_some()).map_err(bad)?;
            let (input, output) = stored.params(path)?;
            Ok(Box::new(QuantConv2d::from_parts(
                c, &values, scales, bias, input, output, relu,
            )?))
        }
        _ => Err(bad(format!(
            "layer '{path}' is a quantized '{kind}' in the file but not that in the model"
        ))),
    }
}
