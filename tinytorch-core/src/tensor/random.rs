//! Random tensors and the seedable generator (`torch.manual_seed`, `torch.rand`, `torch.randn`,
//! `torch.randint`, `torch.bernoulli`, `torch.Generator`).
//!
//! The generator is ChaCha8 (`rand_chacha`): the same seed gives the same numbers on every
//! machine, and its state (seed, stream, word position) is three integers, easy to store in a
//! checkpoint. Values are generated on the host in row-major order, one after another, so a
//! result never depends on the thread count; on a GPU, a kernel draws them (Philox, each
//! element a function of its index and one seed taken from the generator), so that a
//! dropout mask costs no copy from the host. The streams differ from PyTorch's (MT19937 on
//! the CPU, Philox on CUDA): the same seed gives different numbers than in PyTorch.

use super::layout::storage_numel;
use super::{DType, Device, Tensor};
use crate::backend::{try_host_buffer, CpuElement, CpuStorage, RandomDraw, Storage};
use crate::error::{Error, Result};
use half::{bf16, f16};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use std::sync::{LazyLock, Mutex};

/// PyTorch's default seed, used until `manual_seed` is called, so that runs are repeatable
/// even without one.
const DEFAULT_SEED: u64 = 67280421310721;

/// A seedable random number generator (`torch.Generator`).
#[derive(Clone, Debug)]
pub struct Generator {
    rng: ChaCha8Rng,
    seed: u64,
}

/// Everything needed to resume a [`Generator`] exactly where it was (`Generator.get_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GeneratorState {
    /// The seed given to `new` / `manual_seed`.
    pub seed: u64,
    /// The ChaCha stream number.
    pub stream: u64,
    /// How many 32-bit words of the stream have been used.
    pub word_pos: u128,
}

impl Generator {
    /// A generator seeded with `seed` (`torch.Generator().manual_seed(seed)`).
    pub fn new(seed: u64) -> Generator {
        Generator {
            rng: ChaCha8Rng::seed_from_u64(seed),
            seed,
        }
    }

    /// Restart from `seed`.
    pub fn manual_seed(&mut self, seed: u64) {
        *self = Generator::new(seed);
    }

    /// The seed this generator was started from (`Generator.initial_seed`).
    pub fn initial_seed(&self) -> u64 {
        self.seed
    }

    /// The current state, for checkpoints (`Generator.get_state`).
    pub fn state(&self) -> GeneratorState {
        GeneratorState {
            seed: self.seed,
            stream: self.rng.get_stream(),
            word_pos: self.rng.get_word_pos(),
        }
    }

    /// Resume from a state returned by [`Generator::state`] (`Generator.set_state`).
    pub fn set_state(&mut self, state: &GeneratorState) {
        let mut rng = ChaCha8Rng::seed_from_u64(state.seed);
        rng.set_stream(state.stream);
        rng.set_word_pos(state.word_pos);
        *self = Generator {
            rng,
            seed: state.seed,
        };
    }

    /// Uniform in [0, 1) with `bits` random mantissa bits, so that the value is exact in a
    /// type with that precision and rounding can never produce 1.0 (as PyTorch does).
    fn uniform(&mut self, bits: u32) -> f64 {
        let r = self.rng.next_u64() >> (64 - bits);
        r as f64 / (1u64 << bits) as f64
    }

    fn normal_f32(&mut self) -> f32 {
        StandardNormal.sample(&mut self.rng)
    }

    fn normal_f64(&mut self) -> f64 {
        StandardNormal.sample(&mut self.rng)
    }
}

static DEFAULT_GENERATOR: LazyLock<Mutex<Generator>> =
    LazyLock::new(|| Mutex::new(Generator::new(DEFAULT_SEED)));

/// Run `f` with the process-wide default generator.
fn with_default<R>(f: impl FnOnce(&mut Generator) -> R) -> R {
    let mut g = DEFAULT_GENERATOR.lock().unwrap_or_else(|e| e.into_inner());
    f(&mut g)
}

/// Seed the default generator (`torch.manual_seed`).
pub fn manual_seed(seed: u64) {
    with_default(|g| g.manual_seed(seed));
}

/// The default generator's state (`torch.get_rng_state`).
pub fn get_rng_state() -> GeneratorState {
    with_default(|g| g.state())
}

/// Restore the default generator's state (`torch.set_rng_state`).
pub fn set_rng_state(state: &GeneratorState) {
    with_default(|g| g.set_state(state));
}

/// Error unless `dtype` is a float type (the distributions below produce floats).
fn check_float(op: &'static str, dtype: DType) -> Result<()> {
    if !dtype.is_float() {
        return Err(Error::dtype(
            op,
            format!("expected a floating point dtype, got {dtype}"),
        ));
    }
    Ok(())
}

/// `n` values of `dtype` from `sample(gen, mantissa_bits)`, in order, as a tensor.
fn generate(
    shape: &[usize],
    dtype: DType,
    device: Device,
    gen: &mut Generator,
    mut sample: impl FnMut(&mut Generator, DType) -> f64,
) -> Result<Tensor> {
    let n = storage_numel("random", shape, dtype)?;
    let cpu = match dtype {
        DType::F64 => CpuStorage::F64(filled(n, || sample(gen, dtype))?.into()),
        DType::F32 => CpuStorage::F32(filled(n, || sample(gen, dtype) as f32)?.into()),
        DType::F16 => CpuStorage::F16(filled(n, || f16::from_f64(sample(gen, dtype)))?.into()),
        DType::BF16 => CpuStorage::BF16(filled(n, || bf16::from_f64(sample(gen, dtype)))?.into()),
        other => return Err(Error::unsupported_dtype("random", other)),
    };
    Ok(Tensor::from_contiguous(
        Storage::from_cpu(cpu, device)?,
        shape,
    ))
}

/// On a GPU, the values drawn by a kernel from one seed of `gen` (`None` on the CPU, where
/// they come from the generator itself, in row-major order; no seed is taken there, so the
/// host streams are as before).
fn drawn_on_device(
    shape: &[usize],
    dtype: DType,
    device: Device,
    gen: &mut Generator,
    draw: RandomDraw<'_>,
) -> Result<Option<Tensor>> {
    if device.is_cpu() {
        return Ok(None);
    }
    let n = storage_numel("random", shape, dtype)?;
    let s = Storage::draw_random(device, dtype, n, gen.rng.next_u64(), draw)?;
    Ok(s.map(|s| Tensor::from_contiguous(s, shape)))
}

/// `n` values of `next()`, in order, in a buffer that is an error rather than an abort when
/// the memory is not there.
fn filled<T: CpuElement>(n: usize, mut next: impl FnMut() -> T) -> Result<Vec<T>> {
    let mut v = try_host_buffer::<T>(n)?;
    v.extend((0..n).map(|_| next()));
    Ok(v)
}

/// Mantissa bits (with the implicit one) of a float dtype.
fn precision_bits(dtype: DType) -> u32 {
    match dtype {
        DType::F64 => 53,
        DType::F32 => 24,
        DType::F16 => 11,
        _ => 8,
    }
}

/// One standard normal sample, drawn in the dtype's working precision (f64 for f64, f32
/// otherwise).
fn normal(gen: &mut Generator, dtype: DType) -> f64 {
    if dtype == DType::F64 {
        gen.normal_f64()
    } else {
        gen.normal_f32() as f64
    }
}

impl Tensor {
    /// Uniform samples in [0, 1) (`torch.rand`), from the default generator.
    pub fn rand(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
        with_default(|g| Tensor::rand_with(shape, dtype, device, g))
    }

    /// Uniform samples in [0, 1) from `gen` (`torch.rand(..., generator=gen)`).
    pub fn rand_with(
        shape: &[usize],
        dtype: DType,
        device: Device,
        gen: &mut Generator,
    ) -> Result<Tensor> {
        check_float("rand", dtype)?;
        let bits = precision_bits(dtype);
        if let Some(t) = drawn_on_device(shape, dtype, device, gen, RandomDraw::Uniform { bits })? {
            return Ok(t);
        }
        generate(shape, dtype, device, gen, |g, d| {
            g.uniform(precision_bits(d))
        })
    }

    /// Standard normal samples (`torch.randn`), from the default generator.
    pub fn randn(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
        with_default(|g| Tensor::randn_with(shape, dtype, device, g))
    }

    /// Standard normal samples from `gen`.
    pub fn randn_with(
        shape: &[usize],
        dtype: DType,
        device: Device,
        gen: &mut Generator,
    ) -> Result<Tensor> {
        check_float("randn", dtype)?;
        if let Some(t) = drawn_on_device(shape, dtype, device, gen, RandomDraw::Normal)? {
            return Ok(t);
        }
        generate(shape, dtype, device, gen, normal)
    }

    /// Integers uniform in `[low, high)`, dtype i64 (`torch.randint`), from the default
    /// generator.
    pub fn randint(low: i64, high: i64, shape: &[usize], device: Device) -> Result<Tensor> {
        with_default(|g| Tensor::randint_with(low, high, shape, device, g))
    }

    /// Integers uniform in `[low, high)` from `gen`.
    pub fn randint_with(
        low: i64,
        high: i64,
        shape: &[usize],
        device: Device,
        gen: &mut Generator,
    ) -> Result<Tensor> {
        if low >= high {
            return Err(Error::invalid(
                "randint",
                format!(
                    "random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
                ),
            ));
        }
        let n = storage_numel("randint", shape, DType::I64)?;
        let values = filled(n, || gen.rng.random_range(low..high))?;
        Ok(Tensor::from_contiguous(
            Storage::from_cpu(CpuStorage::I64(values.into()), device)?,
            shape,
        ))
    }

    /// Uniform samples with this tensor's shape, dtype and device (`torch.rand_like`).
    pub fn rand_like(&self) -> Result<Tensor> {
        Tensor::rand(self.shape(), self.dtype(), self.device())
    }

    /// Standard normal samples with this tensor's shape, dtype and device (`torch.randn_like`).
    pub fn randn_like(&self) -> Result<Tensor> {
        Tensor::randn(self.shape(), self.dtype(), self.device())
    }

    /// Draws 1 with probability `self[i]` and 0 otherwise, same shape and dtype
    /// (`torch.bernoulli(self)`), from the default generator. Every probability must be in
    /// [0, 1].
    pub fn bernoulli(&self) -> Result<Tensor> {
        with_default(|g| self.bernoulli_with(g))
    }

    /// [`Tensor::bernoulli`] with an explicit generator.
    pub fn bernoulli_with(&self, gen: &mut Generator) -> Result<Tensor> {
        check_float("bernoulli", self.dtype())?;
        if !self.device().is_cpu() {
            // Checked on the device (reported at the next synchronisation), as PyTorch's
            // device-side assert: reading the probabilities here would wait for the device.
            let probs = self.contiguous()?;
            let storage = probs.storage();
            let draw = RandomDraw::BernoulliOf(&storage, probs.storage_offset());
            if let Some(t) = drawn_on_device(self.shape(), self.dtype(), self.device(), gen, draw)?
            {
                return Ok(t);
            }
        }
        let probs = self.to_vec_f64()?;
        if let Some(bad) = probs.iter().find(|p| !(0.0..=1.0).contains(*p)) {
            return Err(Error::invalid(
                "bernoulli",
                format!("expected all probabilities in [0, 1], found {bad}"),
            ));
        }
        let mut it = probs.into_iter();
        generate(self.shape(), self.dtype(), self.device(), gen, |g, _| {
            let p = it.next().expect("one probability per element");
            // 53 bits, so that p = 1 always gives 1 and p = 0 always gives 0.
            if g.uniform(53) < p {
                1.0
            } else {
                0.0
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_never_reaches_one_in_any_precision() {
        let mut g = Generator::new(0);
        for bits in [8, 11, 24, 53] {
            for _ in 0..10_000 {
                let u = g.uniform(bits);
                assert!((0.0..1.0).contains(&u));
                assert!(bf16::from_f64(u).to_f64() < 1.0 || bits != 8);
            }
        }
    }
}
