//! Reading PyTorch reference cases from a fixture file: `tests/fixtures/ops.safetensors`
//! (written by `scripts/fixtures/gen_fixtures.py`) or `random_ops.safetensors` (written by
//! `scripts/fixtures/gen_random_cases.py`): raw tensors, and the per-case metadata `{"op", "kwargs",
//! "views", "expect", "error"}` stored as JSON in the safetensors `__metadata__`.

// Shared by the op-table and random-case test binaries; each uses a part of it.
#![allow(dead_code)]

use safetensors::{Dtype as StDtype, SafeTensors};
use serde_json::{Map, Value};
use tinytorch::{DType, Error, Result, Scalar, Tensor};

/// A tensor as stored in the fixture file; [`Raw::tensor`] builds a fresh TinyTorch tensor.
#[derive(Clone, Debug)]
pub struct Raw {
    pub dtype: DType,
    pub shape: Vec<usize>,
    bytes: Vec<u8>,
}

/// One step of a view recipe (`tests/fixtures/random_ops.safetensors`): the random suite
/// stores each input as a contiguous base and the views that turn it into the op's input.
#[derive(Clone, Debug, PartialEq)]
pub enum ViewStep {
    Transpose(isize, isize),
    Permute(Vec<isize>),
    /// dim, start, end (exclusive, clamped), step.
    Slice(isize, isize, isize, usize),
    /// dim, start, length.
    Narrow(isize, isize, usize),
    /// dim, index.
    Select(isize, isize),
    Expand(Vec<isize>),
}

impl ViewStep {
    /// The view of `t` this step describes.
    pub fn apply(&self, t: &Tensor) -> Result<Tensor> {
        match self {
            ViewStep::Transpose(a, b) => t.transpose(*a, *b),
            ViewStep::Permute(dims) => t.permute(dims),
            ViewStep::Slice(dim, start, end, step) => {
                t.slice(*dim, Some(*start), Some(*end), *step)
            }
            ViewStep::Narrow(dim, start, len) => t.narrow(*dim, *start, *len),
            ViewStep::Select(dim, index) => t.select(*dim, *index),
            ViewStep::Expand(sizes) => t.expand(sizes),
        }
    }

    fn parse(step: &Value) -> std::result::Result<ViewStep, String> {
        let Value::Array(items) = step else {
            return Err(format!("view step {step} is not a list"));
        };
        let bad = || format!("view step {step} has a bad argument");
        let int = |i: usize| {
            items
                .get(i)
                .and_then(Value::as_i64)
                .map(|v| v as isize)
                .ok_or_else(bad)
        };
        let ints = |i: usize| -> std::result::Result<Vec<isize>, String> {
            let list = items.get(i).and_then(Value::as_array).ok_or_else(bad)?;
            list.iter()
                .map(|x| x.as_i64().map(|v| v as isize).ok_or_else(bad))
                .collect()
        };
        Ok(match items.first().and_then(Value::as_str) {
            Some("transpose") => ViewStep::Transpose(int(1)?, int(2)?),
            Some("permute") => ViewStep::Permute(ints(1)?),
            Some("slice") => ViewStep::Slice(int(1)?, int(2)?, int(3)?, int(4)? as usize),
            Some("narrow") => ViewStep::Narrow(int(1)?, int(2)?, int(3)? as usize),
            Some("select") => ViewStep::Select(int(1)?, int(2)?),
            Some("expand") => ViewStep::Expand(ints(1)?),
            _ => return Err(format!("unknown view step {step}")),
        })
    }
}

/// One PyTorch reference case.
#[derive(Debug)]
pub struct Case {
    /// `<op>__<variant>__<dtype>`.
    pub name: String,
    /// The op-table entry that runs it.
    pub op: String,
    /// The dtype the case exercises (the last part of the name).
    pub dtype: DType,
    pub kwargs: Kwargs,
    pub inputs: Vec<Raw>,
    pub outputs: Vec<Raw>,
    /// Upstream gradient per output (`None` for outputs without one, e.g. indices).
    pub gouts: Vec<Option<Raw>>,
    /// PyTorch's gradient per input (`None` for inputs that take none). With view recipes,
    /// the gradient of the base.
    pub grads: Vec<Option<Raw>>,
    /// Per input, the views that turn the stored base into the op's input (empty: none).
    pub views: Vec<Vec<ViewStep>>,
    /// `Some(PyTorch's message)` when PyTorch rejects the inputs: TinyTorch must return an
    /// error too.
    pub expect_error: Option<String>,
}

impl Case {
    /// True when PyTorch's gradients are stored for this case.
    pub fn has_grad(&self) -> bool {
        self.grads.iter().any(Option::is_some)
    }
    /// Fresh tensors for the inputs.
    pub fn input_tensors(&self) -> Vec<Tensor> {
        self.inputs.iter().map(Raw::tensor).collect()
    }
}

fn dtype_of(d: StDtype) -> DType {
    match d {
        StDtype::BOOL => DType::Bool,
        StDtype::U8 => DType::U8,
        StDtype::I64 => DType::I64,
        StDtype::F16 => DType::F16,
        StDtype::BF16 => DType::BF16,
        StDtype::F32 => DType::F32,
        StDtype::F64 => DType::F64,
        other => panic!("fixture dtype {other:?} has no TinyTorch equivalent"),
    }
}

/// The dtype named by a case-name suffix (`f32`, `i64`, ...).
pub fn dtype_from_short(s: &str) -> DType {
    match s {
        "bool" => DType::Bool,
        "u8" => DType::U8,
        "i64" => DType::I64,
        "f16" => DType::F16,
        "bf16" => DType::BF16,
        "f32" => DType::F32,
        "f64" => DType::F64,
        other => panic!("unknown dtype suffix {other:?}"),
    }
}

/// IEEE half bits to f32 (exact). Written out here so the tests need no `half` dependency.
fn f16_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0f32 } else { 1.0 };
    let exp = ((h >> 10) & 0x1f) as i32;
    let frac = (h & 0x3ff) as f32;
    match exp {
        0 => sign * frac * 2f32.powi(-24),
        0x1f if frac == 0.0 => sign * f32::INFINITY,
        0x1f => f32::NAN,
        _ => sign * (1.0 + frac / 1024.0) * 2f32.powi(exp - 15),
    }
}

fn chunks<const N: usize>(bytes: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
    bytes
        .chunks_exact(N)
        .map(|c| c.try_into().expect("chunk size"))
}

impl Raw {
    /// A new contiguous CPU tensor with these values (f16/bf16 go through f32, exactly).
    pub fn tensor(&self) -> Tensor {
        let s = &self.shape;
        let b = &self.bytes;
        let t = match self.dtype {
            DType::Bool => Tensor::from_vec(b.iter().map(|&x| x != 0).collect::<Vec<bool>>(), s),
            DType::U8 => Tensor::from_vec(b.clone(), s),
            DType::I64 => Tensor::from_vec(
                chunks::<8>(b).map(i64::from_le_bytes).collect::<Vec<_>>(),
                s,
            ),
            DType::I32 => Tensor::from_vec(
                chunks::<4>(b).map(i32::from_le_bytes).collect::<Vec<_>>(),
                s,
            ),
            DType::F32 => Tensor::from_vec(
                chunks::<4>(b).map(f32::from_le_bytes).collect::<Vec<_>>(),
                s,
            ),
            DType::F64 => Tensor::from_vec(
                chunks::<8>(b).map(f64::from_le_bytes).collect::<Vec<_>>(),
                s,
            ),
            DType::F16 => {
                let v: Vec<f32> = chunks::<2>(b)
                    .map(|c| f16_to_f32(u16::from_le_bytes(c)))
                    .collect();
                Tensor::from_vec(v, s).and_then(|t| t.to_dtype(DType::F16))
            }
            DType::BF16 => {
                let v: Vec<f32> = chunks::<2>(b)
                    .map(|c| f32::from_bits((u16::from_le_bytes(c) as u32) << 16))
                    .collect();
                Tensor::from_vec(v, s).and_then(|t| t.to_dtype(DType::BF16))
            }
        };
        t.expect("fixture tensor")
    }

    /// The values as f64 in row-major order.
    pub fn values(&self) -> Vec<f64> {
        self.tensor().to_vec_f64().expect("fixture values")
    }
}

/// Load every case of the fixture file `tests/fixtures/<file>`, sorted by name. The folder
/// is `$TINYTORCH_FIXTURES` when set (a test binary run away from its source tree, as in
/// the GPU bundle of scripts/gpu_bundle.sh).
pub fn load_cases(file: &str) -> Vec<Case> {
    let dir = std::env::var("TINYTORCH_FIXTURES")
        .unwrap_or_else(|_| format!("{}/tests/fixtures", env!("CARGO_MANIFEST_DIR")));
    let path = format!("{dir}/{file}");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    let (_, meta) = SafeTensors::read_metadata(&bytes).expect("safetensors header");
    let st = SafeTensors::deserialize(&bytes).expect("safetensors file");
    let meta = meta.metadata().clone().expect("fixture metadata");
    let raw = |key: &str| -> Option<Raw> {
        let v = st.tensor(key).ok()?;
        Some(Raw {
            dtype: dtype_of(v.dtype()),
            shape: v.shape().to_vec(),
            bytes: v.data().to_vec(),
        })
    };
    let numbered = |name: &str, stem: &str, zero_plain: bool| -> Vec<Option<Raw>> {
        // Keys are `<stem>`, `<stem>1`, ... for outputs and `<stem>0`, `<stem>1`, ... for inputs;
        // gaps (inputs without gradients) stay `None`.
        (0..16)
            .map(|i| {
                let key = if i == 0 && zero_plain {
                    format!("{name}.{stem}")
                } else {
                    format!("{name}.{stem}{i}")
                };
                raw(&key)
            })
            .collect()
    };
    let trim = |mut v: Vec<Option<Raw>>, len: usize| {
        v.truncate(len);
        v
    };
    let mut cases: Vec<Case> = meta
        .iter()
        .map(|(name, json)| {
            let obj: Value = serde_json::from_str(json)
                .unwrap_or_else(|e| panic!("case {name}: bad metadata {json:?}: {e}"));
            let op = obj["op"].as_str().expect("op name").to_string();
            let kwargs = Kwargs(obj["kwargs"].as_object().cloned().unwrap_or_default());
            let inputs: Vec<Raw> = numbered(name, "in", false)
                .into_iter()
                .map_while(|r| r)
                .collect();
            let outputs: Vec<Raw> = numbered(name, "out", true)
                .into_iter()
                .map_while(|r| r)
                .collect();
            let gouts = trim(numbered(name, "gout", true), outputs.len());
            let grads = trim(numbered(name, "grad", false), inputs.len());
            let dtype = dtype_from_short(name.rsplit("__").next().expect("dtype suffix"));
            let views = obj["views"]
                .as_array()
                .map(|recipes| {
                    recipes
                        .iter()
                        .map(|r| match r {
                            Value::Array(steps) => steps.iter().map(ViewStep::parse).collect(),
                            _ => Err(format!("recipe {r} is not a list")),
                        })
                        .collect::<std::result::Result<Vec<Vec<ViewStep>>, String>>()
                        .unwrap_or_else(|e| panic!("case {name}: {e}"))
                })
                .unwrap_or_default();
            let expect_error = (obj["expect"] == "error")
                .then(|| obj["error"].as_str().unwrap_or("?").to_string());
            Case {
                name: name.clone(),
                op,
                dtype,
                kwargs,
                inputs,
                outputs,
                gouts,
                grads,
                views,
                expect_error,
            }
        })
        .collect();
    cases.sort_by(|a, b| a.name.cmp(&b.name));
    cases
}

// ---- keyword arguments --------------------------------------------------------------------

/// A case's keyword arguments, with typed accessors that fail with a clear error. JSON keeps
/// Python's int/float distinction (`2` vs `2.0`), which [`Kwargs::scalar`] passes on.
#[derive(Clone, Debug, Default)]
pub struct Kwargs(Map<String, Value>);

fn missing(key: &str, what: &str) -> Error {
    Error::invalid(
        "op_table kwargs",
        format!("`{key}` is missing or not {what}"),
    )
}

/// A JSON number, or the strings `"inf"` / `"-inf"` that the generators write for infinities.
fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::String(s) if s == "inf" => Some(f64::INFINITY),
        Value::String(s) if s == "-inf" => Some(f64::NEG_INFINITY),
        v => v.as_f64(),
    }
}

impl Kwargs {
    fn raw(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }
    /// A float (`"inf"` allowed).
    pub fn f(&self, key: &str) -> Result<f64> {
        self.raw(key)
            .and_then(as_f64)
            .ok_or_else(|| missing(key, "a number"))
    }
    /// A scalar argument as Python passed it: an int (`2`), a float (`2.0`, `"inf"`) or a
    /// bool.
    pub fn scalar(&self, key: &str) -> Result<Scalar> {
        match self.raw(key) {
            Some(Value::Number(n)) if n.is_i64() => Ok(Scalar::Int(n.as_i64().expect("i64"))),
            Some(Value::Bool(b)) => Ok(Scalar::Bool(*b)),
            _ => self.f(key).map(Scalar::Float),
        }
    }
    /// An optional scalar (`null` is `None`).
    pub fn opt_scalar(&self, key: &str) -> Result<Option<Scalar>> {
        match self.raw(key) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.scalar(key).map(Some),
        }
    }
    /// An optional float (`null` is `None`).
    pub fn opt_f(&self, key: &str) -> Result<Option<f64>> {
        match self.raw(key) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.f(key).map(Some),
        }
    }
    /// A signed integer (dims, indices, starts).
    pub fn i(&self, key: &str) -> Result<isize> {
        let v = self.f(key)?;
        if v.fract() != 0.0 {
            return Err(missing(key, "an integer"));
        }
        Ok(v as isize)
    }
    /// An optional signed integer (`null` is `None`).
    pub fn opt_i(&self, key: &str) -> Result<Option<isize>> {
        match self.raw(key) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.i(key).map(Some),
        }
    }
    /// A non-negative integer (sizes, counts).
    pub fn u(&self, key: &str) -> Result<usize> {
        let v = self.i(key)?;
        usize::try_from(v).map_err(|_| missing(key, "a non-negative integer"))
    }
    /// A boolean.
    pub fn b(&self, key: &str) -> Result<bool> {
        match self.raw(key) {
            Some(Value::Bool(b)) => Ok(*b),
            _ => Err(missing(key, "a boolean")),
        }
    }
    /// A list of signed integers (shapes, dims).
    pub fn ints(&self, key: &str) -> Result<Vec<isize>> {
        match self.raw(key) {
            Some(Value::Array(v)) => v
                .iter()
                .map(|x| {
                    as_f64(x)
                        .filter(|f| f.fract() == 0.0)
                        .map(|f| f as isize)
                        .ok_or_else(|| missing(key, "integers"))
                })
                .collect(),
            _ => Err(missing(key, "a list")),
        }
    }
    /// A list of non-negative integers.
    pub fn usizes(&self, key: &str) -> Result<Vec<usize>> {
        self.ints(key)?
            .into_iter()
            .map(|x| usize::try_from(x).map_err(|_| missing(key, "sizes")))
            .collect()
    }
    /// A string (einsum's equation, interpolate's mode).
    pub fn s(&self, key: &str) -> Result<String> {
        match self.raw(key) {
            Some(Value::String(v)) => Ok(v.clone()),
            _ => Err(missing(key, "a string")),
        }
    }
    /// An optional boolean (`null` is `None`).
    pub fn opt_b(&self, key: &str) -> Result<Option<bool>> {
        match self.raw(key) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.b(key).map(Some),
        }
    }
    /// An optional list of non-negative integers (`null` is `None`).
    pub fn opt_usizes(&self, key: &str) -> Result<Option<Vec<usize>>> {
        match self.raw(key) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.usizes(key).map(Some),
        }
    }
    /// An optional list of floats (`null` is `None`).
    pub fn opt_floats(&self, key: &str) -> Result<Option<Vec<f64>>> {
        match self.raw(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(v)) => v
                .iter()
                .map(|x| as_f64(x).ok_or_else(|| missing(key, "numbers")))
                .collect::<Result<Vec<f64>>>()
                .map(Some),
            Some(_) => Err(missing(key, "a list")),
        }
    }
}
