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
fn rand_seed() -> u64 {
    tinytorch::Tensor::randint(0, i64::MAX, &[], tinytorch::Device::Cpu)
        .and_then(|t| t.item::<i64>())
        .map_or(67280421310721, |v| v as u64)
}

/// `torch.manual_seed(seed)`: reseed the global stream.
#[pyfunction]
pub fn manual_seed(seed: u64) {
    tinytorch::manual_seed(seed);
}
