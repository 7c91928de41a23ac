//! Reading the PyTorch reference cases from `tests/fixtures/ops.safetensors` (written by
//! `scripts/gen_fixtures.py`): raw tensors, and the per-case metadata `{"op", "kwargs"}`
//! stored as JSON in the safetensors `__metadata__`.

use safetensors::{Dtype as StDtype, SafeTensors};
use std::collections::BTreeMap;
use tinytorch::{DType, Error, Result, Tensor};

/// A tensor as stored in the fixture file; [`Raw::tensor`] builds a fresh TinyTorch tensor.
#[derive(Clone, Debug)]
pub struct Raw {
    pub dtype: DType,
    pub shape: Vec<usize>,
    bytes: Vec<u8>,
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
    /// PyTorch's gradient per input (`None` for inputs that take none).
    pub grads: Vec<Option<Raw>>,
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

/// Load every case of the fixture file, sorted by name.
pub fn load_cases() -> Vec<Case> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/ops.safetensors"
    );
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
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
            let obj = Json::parse(json)
                .unwrap_or_else(|e| panic!("case {name}: bad metadata {json:?}: {e}"));
            let op = obj
                .get("op")
                .and_then(Json::as_str)
                .expect("op name")
                .to_string();
            let kwargs = Kwargs(match obj.get("kwargs") {
                Some(Json::Obj(m)) => m.clone(),
                _ => BTreeMap::new(),
            });
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
            Case {
                name: name.clone(),
                op,
                dtype,
                kwargs,
                inputs,
                outputs,
                gouts,
                grads,
            }
        })
        .collect();
    cases.sort_by(|a, b| a.name.cmp(&b.name));
    cases
}

// ---- keyword arguments --------------------------------------------------------------------

/// A JSON value; only what the fixture metadata uses.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(BTreeMap<String, Json>),
}

impl Json {
    /// Parse a complete JSON document.
    pub fn parse(s: &str) -> std::result::Result<Json, String> {
        let mut p = Parser {
            s: s.as_bytes(),
            i: 0,
        };
        let v = p.value()?;
        p.ws();
        if p.i != p.s.len() {
            return Err(format!("trailing characters at {}", p.i));
        }
        Ok(v)
    }
    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(m) => m.get(key),
            _ => None,
        }
    }
    fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }
    fn as_f64(&self) -> Option<f64> {
        match self {
            Json::Num(x) => Some(*x),
            Json::Str(s) if s == "inf" => Some(f64::INFINITY),
            Json::Str(s) if s == "-inf" => Some(f64::NEG_INFINITY),
            _ => None,
        }
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) -> std::result::Result<(), String> {
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            Ok(())
        } else {
            Err(format!("expected '{}' at {}", c as char, self.i))
        }
    }
    fn literal(&mut self, word: &str, v: Json) -> std::result::Result<Json, String> {
        if self.s[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(v)
        } else {
            Err(format!("bad literal at {}", self.i))
        }
    }
    fn string(&mut self) -> std::result::Result<String, String> {
        self.eat(b'"')?;
        let start = self.i;
        while self.i < self.s.len() && self.s[self.i] != b'"' {
            self.i += 1;
        }
        let out = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
        self.eat(b'"')?;
        Ok(out)
    }
    fn value(&mut self) -> std::result::Result<Json, String> {
        self.ws();
        match self.s.get(self.i) {
            Some(b'{') => {
                self.i += 1;
                let mut m = BTreeMap::new();
                self.ws();
                if self.s.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    return Ok(Json::Obj(m));
                }
                loop {
                    let k = self.string()?;
                    self.eat(b':')?;
                    m.insert(k, self.value()?);
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(Json::Obj(m));
                        }
                        _ => return Err(format!("bad object at {}", self.i)),
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut v = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Ok(Json::Arr(v));
                }
                loop {
                    v.push(self.value()?);
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Json::Arr(v));
                        }
                        _ => return Err(format!("bad array at {}", self.i)),
                    }
                }
            }
            Some(b'"') => Ok(Json::Str(self.string()?)),
            Some(b't') => self.literal("true", Json::Bool(true)),
            Some(b'f') => self.literal("false", Json::Bool(false)),
            Some(b'n') => self.literal("null", Json::Null),
            Some(_) => {
                let start = self.i;
                while self.i < self.s.len()
                    && matches!(
                        self.s[self.i],
                        b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'
                    )
                {
                    self.i += 1;
                }
                let text =
                    std::str::from_utf8(&self.s[start..self.i]).map_err(|e| e.to_string())?;
                text.parse::<f64>()
                    .map(Json::Num)
                    .map_err(|e| format!("bad number {text:?}: {e}"))
            }
            None => Err("unexpected end".into()),
        }
    }
}

/// A case's keyword arguments, with typed accessors that fail with a clear error.
#[derive(Clone, Debug, Default)]
pub struct Kwargs(BTreeMap<String, Json>);

fn missing(key: &str, what: &str) -> Error {
    Error::invalid(
        "op_table kwargs",
        format!("`{key}` is missing or not {what}"),
    )
}

impl Kwargs {
    fn raw(&self, key: &str) -> Option<&Json> {
        self.0.get(key)
    }
    /// A float (`"inf"` allowed).
    pub fn f(&self, key: &str) -> Result<f64> {
        self.raw(key)
            .and_then(Json::as_f64)
            .ok_or_else(|| missing(key, "a number"))
    }
    /// An optional float (`null` is `None`).
    pub fn opt_f(&self, key: &str) -> Result<Option<f64>> {
        match self.raw(key) {
            None | Some(Json::Null) => Ok(None),
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
            None | Some(Json::Null) => Ok(None),
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
            Some(Json::Bool(b)) => Ok(*b),
            _ => Err(missing(key, "a boolean")),
        }
    }
    /// A list of signed integers (shapes, dims).
    pub fn ints(&self, key: &str) -> Result<Vec<isize>> {
        match self.raw(key) {
            Some(Json::Arr(v)) => v
                .iter()
                .map(|x| {
                    x.as_f64()
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
}
