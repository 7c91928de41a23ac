//! Seeding: `torch.manual_seed`, `torch.Generator` (its own stream for `randn(...,
//! generator=g)` and DataLoader shuffling), `get_rng_state`/`set_rng_state` are not bound
//! (TinyTorch's streams are not PyTorch's: the same seed gives other numbers).

use pyo3::prelude::*;
use tinytorch::Generator;

/// `torch.Generator()`: a random stream of its own.
#[pyclass(module = "tinytorch", name = "Generator")]
pub struct PyGenerator(pub Generator);

#[pymethods]
impl PyGenerator {
    #[new]
    #[pyo3(signature = (device=None))]
    fn new(device: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        crate::convert::opt_device(device)?;
        Ok(PyGenerator(Generator::new(rand_seed())))
    }
    /// Reseed; returns the generator, as PyTorch's does.
    fn manual_seed(mut slf: PyRefMut<'_, Self>, seed: u64) -> PyRefMut<'_, Self> {
        slf.0.manual_seed(seed);
        slf
    }
    fn initial_seed(&self) -> u64 {
        self.0.initial_seed()
    }
    /// A random 64-bit seed drawn from this generator (for DataLoader worker streams).
    fn _next_seed(&mut self) -> PyResult<u64> {
        let t =
            tinytorch::Tensor::randint_with(0, i64::MAX, &[], tinytorch::Device::Cpu, &mut self.0)
                .map_err(crate::error::to_py)?;
        Ok(t.item::<i64>().map_err(crate::error::to_py)? as u64)
    }
}

/// A seed from the global stream, as a fresh `torch.Generator()` gets a default seed.
pub(crate) fn rand_seed() -> u64 {
    tinytorch::Tensor::randint(0, i64::MAX, &[], tinytorch::Device::Cpu)
        .and_then(|t| t.item::<i64>())
        .map_or(67280421310721, |v| v as u64)
}

/// `torch.manual_seed(seed)`: reseed the global stream.
#[pyfunction]
pub fn manual_seed(seed: u64) {
    tinytorch::manual_seed(seed);
}

/// `torch.randperm(n, *, generator=None, dtype=torch.int64, device=None,
/// requires_grad=False)`: a random permutation of `0..n` (TinyTorch's Fisher-Yates,
/// `tinytorch::data::randperm`); without a generator, one seeded from the global stream, so
/// `manual_seed` makes it repeat.
#[pyfunction]
#[pyo3(signature = (n, *, generator=None, dtype=None, device=None, requires_grad=false))]
pub fn randperm(
    n: i64,
    generator: Option<PyRefMut<'_, PyGenerator>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<crate::tensor::PyTensor> {
    use crate::error::IntoPyResult;
    if n < 0 {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
            "randperm: n must be non-negative, got {n}"
        )));
    }
    let perm = match generator {
        Some(mut g) => tinytorch::data::randperm(n as usize, &mut g.0),
        None => tinytorch::data::randperm(n as usize, &mut Generator::new(rand_seed())),
    }
    .py()?;
    let values: Vec<i64> = perm.into_iter().map(|i| i as i64).collect();
    let t = tinytorch::Tensor::from_vec(values, &[n as usize]).py()?;
    let t = crate::convert::cast_to_opt_dtype(&t, dtype)?;
    crate::creation::finish(t, crate::convert::opt_device(device)?, requires_grad)
}
