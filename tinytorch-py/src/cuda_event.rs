//! `torch.cuda.Event`'s native half: one CUDA event on a GPU's stream
//! (`tinytorch::backend::cuda::event::Event`). The Python class (python/tinytorch/cuda/
//! __init__.py) creates it at the first `record()`, as PyTorch creates its events lazily, and
//! checks its arguments; this class only forwards. Host waits release the GIL. Without the
//! `cuda` feature the class exists but cannot be constructed (the Python class raises first,
//! as PyTorch's CPU-only build does).

use pyo3::prelude::*;

#[cfg(feature = "cuda")]
use crate::error::IntoPyResult;

/// A CUDA event of GPU `ordinal`: `_CudaEvent(ordinal, enable_timing, blocking)`.
#[pyclass(name = "_CudaEvent", module = "tinytorch._tinytorch", frozen)]
pub struct PyCudaEvent {
    #[cfg(feature = "cuda")]
    inner: tinytorch::backend::cuda::event::Event,
}

#[cfg(feature = "cuda")]
#[pymethods]
impl PyCudaEvent {
    #[new]
    fn new(ordinal: usize, enable_timing: bool, blocking: bool) -> PyResult<Self> {
        let dev = tinytorch::backend::cuda::device::get(ordinal).py()?;
        let inner =
            tinytorch::backend::cuda::event::Event::new(&dev, enable_timing, blocking).py()?;
        Ok(PyCudaEvent { inner })
    }

    /// Record the work queued on the GPU so far.
    fn record(&self) -> PyResult<()> {
        self.inner.record().py()
    }

    /// Whether the recorded work has finished, without waiting.
    fn query(&self) -> PyResult<bool> {
        self.inner.query().py()
    }

    /// Wait until the recorded work has finished.
    fn synchronize(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.inner.synchronize()).py()
    }

    /// Make later work on the GPU's stream wait for this event.
    fn wait(&self) -> PyResult<()> {
        self.inner.wait().py()
    }

    /// Milliseconds between this event and `end` (both recorded and finished).
    fn elapsed_time(&self, end: &PyCudaEvent) -> PyResult<f32> {
        self.inner.elapsed_ms(&end.inner).py()
    }

    /// The GPU's number.
    #[getter]
    fn ordinal(&self) -> usize {
        self.inner.device().ordinal()
    }
}

#[cfg(not(feature = "cuda"))]
#[pymethods]
impl PyCudaEvent {
    #[new]
    #[allow(unused_variables)]
    fn new(ordinal: usize, enable_timing: bool, blocking: bool) -> PyResult<Self> {
        Err(pyo3::exceptions::PyAssertionError::new_err(
            "torch.cuda.Event: Torch not compiled with CUDA enabled",
        ))
    }
}

/// Add the class to the native module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyCudaEvent>()
}
