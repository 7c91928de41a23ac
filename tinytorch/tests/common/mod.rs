//! The test harness that the test binaries share (a module of each, not a test binary of its
//! own): comparing results with tolerances, reporting the worst mismatch, loading the
//! fixtures of `tests/fixtures/`, and the GPU tests' turn.
//!
//! A comparison passes element by element when `got == want` (so equal infinities pass) or
//! `|got - want| <= abs + rel * |want|` ([`Tol`]); NaN passes only against NaN and only
//! where the tolerance says [`Tol::equal_nan`]. A failure names the worst element (its index
//! in every dimension for tensors), both values, the difference, the tolerance and how many
//! elements are off.
// Each binary uses some of these helpers, not all.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use tinytorch::models::gpt::GptConfig;
use tinytorch::nn::{
    AdaptiveAvgPool2d, BatchNorm2d, Conv2d, Flatten, Linear, MaxPool2d, ReLU, Sequential,
};
use tinytorch::ops::ConvPadding;
use tinytorch::optim::{SgdOptions, SGD};
use tinytorch::{DType, Tensor};

/// How close two values must be: `|got - want| <= abs + rel * |want|`, and whether a NaN
/// matches a NaN at the same place.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tol {
    /// The absolute part of the allowed difference.
    pub abs: f64,
    /// The part of the allowed difference proportional to `|want|`.
    pub rel: f64,
    /// Whether NaN against NaN passes (otherwise any NaN fails).
    pub equal_nan: bool,
}

impl Tol {
    /// Exact equality (integers, bools, bit-equal reruns).
    pub const EXACT: Tol = Tol::new(0.0, 0.0);

    /// `|got - want| <= abs + rel * |want|`.
    pub const fn new(abs: f64, rel: f64) -> Tol {
        Tol {
            abs,
            rel,
            equal_nan: false,
        }
    }

    /// An absolute tolerance only: `|got - want| <= abs`.
    pub const fn abs(abs: f64) -> Tol {
        Tol::new(abs, 0.0)
    }

    /// The same absolute and relative part: `|got - want| <= tol * (1 + |want|)`, the form
    /// most of the suite's hand-written checks use.
    pub const fn scaled(tol: f64) -> Tol {
        Tol::new(tol, tol)
    }

    /// This tolerance with NaN passing against NaN at the same place.
    pub const fn equal_nan(self) -> Tol {
        Tol {
            equal_nan: true,
            ..self
        }
    }

    /// This tolerance with both parts multiplied by `factor`.
    pub fn times(self, factor: f64) -> Tol {
        Tol {
            abs: self.abs * factor,
            rel: self.rel * factor,
            ..self
        }
    }

    /// The default tolerance for results of `dtype` against PyTorch's (the op table's):
    /// 1e-10 for f64, 1e-5 for f32, 1e-2 for f16 and bf16 (both parts), exact for integers and
    /// bools; NaN matches NaN.
    pub fn for_dtype(dtype: DType) -> Tol {
        let t = match dtype {
            DType::F64 => 1e-10,
            DType::F32 => 1e-5,
            DType::F16 | DType::BF16 => 1e-2,
            DType::Bool | DType::U8 | DType::I32 | DType::I64 => 0.0,
        };
        Tol::scaled(t).equal_nan()
    }

    /// Whether `got` is close enough to `want`.
    pub fn allows(&self, got: f64, want: f64) -> bool {
        if got.is_nan() || want.is_nan() {
            return self.equal_nan && got.is_nan() && want.is_nan();
        }
        got == want || (got - want).abs() <= self.abs + self.rel * want.abs()
    }
}

/// The element of `got` farthest outside `tol` (relative to what `tol` allows there), as a
/// message naming its index, both values, the difference, the tolerance and how many
/// elements are off; `None` when every element is close (and the lengths agree). `index`
/// turns a flat index into the words that name it.
fn worst_mismatch_by(
    got: &[f64],
    want: &[f64],
    tol: Tol,
    index: &dyn Fn(usize) -> String,
) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!("{} values but {} expected", got.len(), want.len()));
    }
    let mut worst: Option<(usize, f64)> = None;
    let mut bad = 0;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        if tol.allows(g, w) {
            continue;
        }
        bad += 1;
        let excess = if g.is_nan() || w.is_nan() {
            f64::INFINITY
        } else {
            (g - w).abs() / (tol.abs + tol.rel * w.abs())
        };
        if worst.is_none_or(|(_, e)| excess > e) {
            worst = Some((i, excess));
        }
    }
    worst.map(|(i, _)| {
        format!(
            "worst mismatch at {}: got {} want {} (|diff| {:e}, abs {:e} + rel {:e}; {bad} of {} elements off; max |diff| {:e})",
            index(i),
            got[i],
            want[i],
            (got[i] - want[i]).abs(),
            tol.abs,
            tol.rel,
            got.len(),
            max_diff_slices(got, want),
        )
    })
}

/// [`worst_mismatch_by`] with flat indices (`element 7`).
pub fn worst_mismatch(got: &[f64], want: &[f64], tol: Tol) -> Option<String> {
    worst_mismatch_by(got, want, tol, &|i| format!("element {i}"))
}

/// The index in every dimension of the flat, row-major index `flat` into `shape`.
pub fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for (d, &n) in shape.iter().enumerate().rev() {
        if n > 0 {
            index[d] = flat % n;
            flat /= n;
        }
    }
    index
}

/// Check that two slices are close within `tol`; panics with `what` and the worst element.
#[track_caller]
pub fn assert_close_slices(got: &[f64], want: &[f64], tol: Tol, what: &str) {
    if let Some(m) = worst_mismatch(got, want, tol) {
        panic!("{what}: {m}");
    }
}

/// [`assert_close_slices`] for f32 values (compared in f64).
#[track_caller]
pub fn assert_close_f32(got: &[f32], want: &[f32], tol: Tol, what: &str) {
    let widen = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
    assert_close_slices(&widen(got), &widen(want), tol, what);
}

/// Check that a tensor's values (row-major, any dtype, compared in f64) are close to
/// `want`; panics with `what` and the worst element, indexed in every dimension.
#[track_caller]
pub fn assert_close_to(got: &Tensor, want: &[f64], tol: Tol, what: &str) {
    let values = got
        .to_vec_f64()
        .unwrap_or_else(|e| panic!("{what}: to_vec_f64: {e}"));
    let shape = got.shape().to_vec();
    if let Some(m) = worst_mismatch_by(&values, want, tol, &|i| format!("{:?}", unravel(i, &shape)))
    {
        panic!("{what}: {m}");
    }
}

/// Check that two tensors have the same shape and values within `tol` (compared in f64,
/// so their dtypes may differ); panics with `what` and the worst element.
#[track_caller]
pub fn assert_close(got: &Tensor, want: &Tensor, tol: Tol, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let want = want
        .to_vec_f64()
        .unwrap_or_else(|e| panic!("{what}: to_vec_f64: {e}"));
    assert_close_to(got, &want, tol, what);
}

/// [`assert_close`] that also requires the same dtype.
#[track_caller]
pub fn assert_close_same_dtype(got: &Tensor, want: &Tensor, tol: Tol, what: &str) {
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    assert_close(got, want, tol, what);
}

/// Checks each result (an expression giving a `tinytorch::Result<Tensor>` or an
/// `Option<Tensor>`, whose text names it in a failure) against its expected values with [`assert_close_to`] within `tol`:
/// `assert_values!(Tol::scaled(1e-12); x.sum(&[0], false) => [2.0, 2.0])`.
#[allow(unused_macros)]
macro_rules! assert_values {
    ($tol:expr; $($got:expr => $want:expr),+ $(,)?) => {
        $($crate::common::assert_close_to(
            &$got.unwrap(),
            &$want,
            $tol,
            stringify!($got),
        );)+
    };
}
// Each binary uses some of the helpers, not all.
#[allow(unused_imports)]
pub(crate) use assert_values;

/// The larger of `m` and `d`, or NaN when either is NaN (the fold of the `max_*diff`
/// helpers, where a NaN difference must not be lost to `f64::max`).
fn nan_max(m: f64, d: f64) -> f64 {
    if d.is_nan() || m.is_nan() {
        f64::NAN
    } else {
        m.max(d)
    }
}

/// The largest `|x - y| / scale(y)` over the pairs of `a` and `b` (`y` the expected value):
/// 0 where the two are equal (equal infinities, NaN against NaN), NaN where only one is NaN.
fn max_diff_over(a: &[f64], b: &[f64], scale: impl Fn(f64) -> f64) -> f64 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| match (x.is_nan(), y.is_nan()) {
            (true, true) => 0.0,
            (false, false) if x == y => 0.0,
            (false, false) => (x - y).abs() / scale(y),
            _ => f64::NAN,
        })
        .fold(0.0, nan_max)
}

/// The largest absolute difference between two slices of the same length; NaN where either
/// has a NaN the other has not at the same place.
pub fn max_diff_slices(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "max_diff: lengths");
    max_diff_over(a, b, |_| 1.0)
}

/// The largest absolute difference between two tensors of the same shape, in f64; NaN
/// where either has a NaN the other has not at the same place.
pub fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
    assert_eq!(a.shape(), b.shape());
    max_diff_slices(&a.to_vec_f64().unwrap(), &b.to_vec_f64().unwrap())
}

/// The largest difference relative to the expected value, `|a - b| / (1 + |b|)`, between
/// two tensors of the same shape; NaN as in [`max_diff`].
pub fn max_scaled_diff(a: &Tensor, b: &Tensor) -> f64 {
    assert_eq!(a.shape(), b.shape());
    let (a, b) = (a.to_vec_f64().unwrap(), b.to_vec_f64().unwrap());
    max_diff_over(&a, &b, |y| 1.0 + y.abs())
}

/// The largest [`max_scaled_diff`] over two lists of named tensors (a module's
/// `named_parameters` or `named_buffers`), whose names must agree in order.
pub fn max_scaled_diff_named(a: &[(String, Tensor)], b: &[(String, Tensor)]) -> f64 {
    assert_eq!(a.len(), b.len(), "max_scaled_diff_named: lengths");
    a.iter().zip(b).fold(0.0, |m, ((na, ta), (nb, tb))| {
        assert_eq!(na, nb);
        nan_max(m, max_scaled_diff(ta, tb))
    })
}

/// The folder of the test fixtures: `$TINYTORCH_FIXTURES` when set (a test binary run away
/// from its source tree, as in the GPU bundle), else `tinytorch/tests/fixtures`.
pub fn fixtures_dir() -> PathBuf {
    std::env::var_os("TINYTORCH_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures")))
}

/// The path of the fixture `name` (a file or folder in [`fixtures_dir`]).
pub fn fixture_path(name: &str) -> PathBuf {
    fixtures_dir().join(name)
}

/// Every tensor of the safetensors fixture `name`, by key.
pub fn load_fixture(name: &str) -> BTreeMap<String, Tensor> {
    let path = fixture_path(name);
    tinytorch::io::load_safetensors(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
        .into_iter()
        .collect()
}

/// The tensors of the safetensors fixture `name` whose key starts with `<case>.`, by the
/// rest of the key; panics when there are none.
pub fn load_fixture_case(name: &str, case: &str) -> BTreeMap<String, Tensor> {
    let prefix = format!("{case}.");
    let tensors: BTreeMap<String, Tensor> = load_fixture(name)
        .into_iter()
        .filter_map(|(key, t)| Some((key.strip_prefix(&prefix)?.to_string(), t)))
        .collect();
    assert!(!tensors.is_empty(), "no case {case} in {name}");
    tensors
}

/// The JSON fixture `name`, parsed.
pub fn load_json_fixture(name: &str) -> serde_json::Value {
    let path = fixture_path(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// The turn of a GPU test: where `available` is false, `None` after printing `skipped: no
/// CUDA device` and `missing` (the GPU bundle's run.sh counts those lines); else the lock
/// that makes the binary's GPU tests take the device in turn (they share its error flag and
/// allocation counter).
pub fn gpu_turn(available: bool, missing: &str) -> Option<MutexGuard<'static, ()>> {
    static SERIAL: Mutex<()> = Mutex::new(());
    if !available {
        println!("skipped: no CUDA device{missing}");
        return None;
    }
    // A test that failed while holding the lock leaves it poisoned; the next still runs.
    Some(SERIAL.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Puts a buffer of `len` NaNs of `dtype` (f32 or f64) into the CPU allocator's cache, where
/// the next kernel asking for that many elements gets it: a kernel that skips the memset of
/// a buffer it does not wholly write then shows NaNs.
pub fn poison_cached_buffer(dtype: tinytorch::DType, len: usize) {
    use tinytorch::backend::cpu::{allocator, CpuStorage};
    let bytes = len * dtype.size_in_bytes();
    assert!(
        bytes >= allocator::MIN_BYTES,
        "{bytes} bytes: the cache keeps only buffers of at least {}",
        allocator::MIN_BYTES
    );
    // Asked for once, the size is in demand, so the cache keeps the buffer handed back.
    let storage = match dtype {
        tinytorch::DType::F64 => {
            let mut v = allocator::take::<f64>(len);
            v.resize(len, f64::NAN);
            CpuStorage::from_vec(v)
        }
        _ => {
            let mut v = allocator::take::<f32>(len);
            v.resize(len, f32::NAN);
            CpuStorage::from_vec(v)
        }
    };
    allocator::recycle(storage);
}

/// An f64 tensor of `shape` holding `data` (row-major).
pub fn t64(data: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(data.to_vec(), shape).unwrap()
}

/// `torch.arange(n).reshape(shape)` as f64.
pub fn arange64(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    t64(&(0..n).map(|x| x as f64).collect::<Vec<_>>(), shape)
}

/// A tensor's values, row-major, as f64.
pub fn vals64(x: &Tensor) -> Vec<f64> {
    x.to_vec_f64().unwrap()
}

/// A 1-d f64 leaf holding `v` that requires grad.
pub fn leaf64(v: &[f64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), &[v.len()])
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

/// `gradcheck` of `f` at the f64 `inputs` with eps 1e-6, atol 1e-7 and rtol 1e-5; panics
/// where the analytic and numeric gradients differ.
#[track_caller]
pub fn gradcheck64(f: impl Fn(&[Tensor]) -> tinytorch::Result<Tensor>, inputs: &[Tensor]) {
    tinytorch::autograd::gradcheck::gradcheck(f, inputs, 1e-6, 1e-7, 1e-5).unwrap();
}

/// Sums `y` (an op's result) to a scalar and runs backward from it: PyTorch's
/// `y.sum().backward()`.
#[track_caller]
pub fn backward_sum(y: tinytorch::Result<Tensor>) {
    y.unwrap().sum_all().unwrap().backward().unwrap();
}

/// The small GPT of the GPT tests (`fixtures/gpt.safetensors` was made with it): 11 tokens,
/// 8 positions, 2 layers of 2 heads, width 16, no dropout, with biases.
pub const TINY_GPT: GptConfig = GptConfig {
    vocab_size: 11,
    block_size: 8,
    n_layer: 2,
    n_head: 2,
    n_embd: 16,
    dropout: 0.0,
    bias: true,
};

/// The small CNN of the end-to-end tests: a 3x3 convolution from 1 to 8 channels (with
/// `padding`), batch norm, ReLU, 2x2 max pooling, a 3x3 convolution from 8 to 16 channels
/// (with `padding`), ReLU, adaptive average pooling to `pooled`, flatten, and a linear layer
/// to `classes` outputs.
pub fn small_cnn(
    padding: ConvPadding,
    pooled: [usize; 2],
    classes: usize,
) -> tinytorch::Result<Sequential> {
    Ok(Sequential::new(vec![
        Box::new(Conv2d::new(1, 8, [3, 3], [1, 1], padding, [1, 1], 1, true)?),
        Box::new(BatchNorm2d::new(8)?),
        Box::new(ReLU::new()),
        Box::new(MaxPool2d::new([2, 2])),
        Box::new(Conv2d::new(
            8,
            16,
            [3, 3],
            [1, 1],
            padding,
            [1, 1],
            1,
            true,
        )?),
        Box::new(ReLU::new()),
        Box::new(AdaptiveAvgPool2d::new(pooled)),
        Box::new(Flatten::default()),
        Box::new(Linear::new(16 * pooled[0] * pooled[1], classes, true)?),
    ]))
}

/// SGD with momentum (and PyTorch's defaults otherwise) over `params`.
pub fn sgd_momentum(params: Vec<Tensor>, lr: f64, momentum: f64) -> tinytorch::Result<SGD> {
    let options = SgdOptions {
        lr,
        momentum,
        ..Default::default()
    };
    SGD::new(params, options)
}

/// The largest `diff(a_i, b_i)` over two tensors of the same length (in f64, `f64::max`
/// folding from 0), divided by the largest `|b_i|` (at least 1): the GPU tests' distance
/// from the CPU oracle `b`.
pub fn rel_diff_with(a: &Tensor, b: &Tensor, diff: impl Fn(f64, f64) -> f64) -> f64 {
    let (a, b) = (a.to_vec_f64().unwrap(), b.to_vec_f64().unwrap());
    assert_eq!(a.len(), b.len());
    let scale = b.iter().fold(1.0f64, |m, x| m.max(x.abs()));
    a.iter()
        .zip(&b)
        .map(|(&x, &y)| diff(x, y))
        .fold(0.0, f64::max)
        / scale
}
