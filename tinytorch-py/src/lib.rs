//! The native half of the `tinytorch` Python package (`tinytorch._tinytorch`): TinyTorch's
//! Rust library bound with PyO3. The Python files of the package (tinytorch-py/python/)
//! re-export these under PyTorch's module names and add what Python is the natural home for:
//! `nn.Module`'s attribute registration, `autograd.Function`, `DataLoader` iteration, the
//! optimizer classes around the engine, the learning-rate schedulers.
//!
//! One file per job: tensor.rs (the Tensor class: attributes, conversions, autograd), ops.rs
//! (its operations), index.rs (`x[...]`), inplace_index.rs (`scatter_`, `masked_fill_`, ...), creation.rs (`torch.tensor`, `zeros`, ...),
//! functional.rs (`nn.functional`), recurrent.rs (RNN/LSTM/GRU), rnn_cell.rs (their cells), optim.rs (the optimizer
//! engine), io.rs (safetensors files for `torch.save`/`load`), random.rs (seeds, `randperm`),
//! profile.rs (`tinytorch.profile`),
//! benchmark.rs (`tinytorch.utils.benchmark`'s statistics), prune.rs (pruning masks),
//! quant.rs (the int8 layer of `quantize_dynamic`), distributed.rs (`tinytorch.distributed`),
//! linalg.rs (`torch.linalg`), special.rs (`torch.special`), amp.rs (`torch.autocast`'s scope), cuda_event.rs (`torch.cuda.Event`), cudnn.rs (`torch.backends.cudnn`), autograd.rs (`autograd.grad`, `autograd.Function`'s
//! node), convert.rs (dtype/device objects and argument parsing), error.rs (exceptions).

mod amp;
mod autograd;
mod benchmark;
mod convert;
mod creation;
mod cuda_event;
mod cudnn;
mod distributed;
mod error;
mod functional;
mod index;
mod inplace_index;
mod io;
mod linalg;
mod ops;
mod optim;
mod profile;
mod prune;
mod quant;
mod random;
mod recurrent;
mod rnn_cell;
mod special;
mod tensor;

use pyo3::prelude::*;

/// Turn gradient recording on or off for this thread; returns the previous setting (the
/// Python context managers restore it).
#[pyfunction]
fn _set_grad_enabled(enabled: bool) -> bool {
    let prev = tinytorch::autograd::is_grad_enabled();
    std::mem::forget(tinytorch::set_grad_enabled(enabled));
    prev
}

/// Whether operations record gradients on this thread (`torch.is_grad_enabled()`).
#[pyfunction]
fn is_grad_enabled() -> bool {
    tinytorch::autograd::is_grad_enabled()
}

/// `torch._C._is_tracing()`: whether `torch.jit.trace` is recording the caller. TinyTorch
/// has no tracer, so never; PyTorch's private name is bound because library code asks it
/// directly (asteroid-filterbanks' encoders do, on every call).
#[pyfunction]
fn _is_tracing() -> bool {
    false
}

/// Make the calling thread (Python's main thread, at import) compute thread 0 of the CPU
/// pool, so ops called from Python split their work in place instead of handing each kernel
/// to the pool and sleeping (OpenMP's master-thread model, as the `tinytorch` command does).
/// Returns whether it did (not with a one-thread pool, nor when the pool already exists).
#[pyfunction]
fn _use_this_thread_for_compute() -> bool {
    tinytorch::parallel::use_current_thread().unwrap_or(false)
}

/// Whether a CUDA device is present (`torch.cuda.is_available()`).
#[pyfunction]
fn _cuda_is_available() -> bool {
    #[cfg(feature = "cuda")]
    {
        tinytorch::backend::cuda::is_available()
    }
    #[cfg(not(feature = "cuda"))]
    {
        false
    }
}

/// Whether this build has CUDA compiled in (`torch.backends.cuda.is_built()`).
#[pyfunction]
fn _cuda_is_built() -> bool {
    cfg!(feature = "cuda")
}

/// Let f32 matmuls on the GPU use TF32 (`torch.backends.cuda.matmul.allow_tf32 = on`);
/// without CUDA compiled in there is no GPU matmul for the flag to change.
#[pyfunction]
fn _cuda_set_allow_tf32(on: bool) {
    #[cfg(feature = "cuda")]
    tinytorch::backend::cuda::set_allow_tf32(on);
    #[cfg(not(feature = "cuda"))]
    let _ = on;
}

/// Wait until the work queued on GPU `ordinal` has finished (`torch.cuda.synchronize`).
#[pyfunction]
fn _cuda_synchronize(ordinal: usize) -> PyResult<()> {
    #[cfg(feature = "cuda")]
    {
        use crate::error::IntoPyResult;
        tinytorch::backend::cuda::device::get(ordinal)
            .and_then(|d| d.synchronize())
            .py()
    }
    #[cfg(not(feature = "cuda"))]
    {
        Err(pyo3::exceptions::PyAssertionError::new_err(format!(
            "synchronize(cuda:{ordinal}): Torch not compiled with CUDA enabled"
        )))
    }
}

/// The name the driver gives GPU `ordinal` (`torch.cuda.get_device_name`).
#[pyfunction]
fn _cuda_device_name(ordinal: usize) -> PyResult<String> {
    #[cfg(feature = "cuda")]
    {
        use crate::error::IntoPyResult;
        tinytorch::backend::cuda::device_name(ordinal).py()
    }
    #[cfg(not(feature = "cuda"))]
    {
        Err(pyo3::exceptions::PyAssertionError::new_err(format!(
            "get_device_name(cuda:{ordinal}): Torch not compiled with CUDA enabled"
        )))
    }
}

/// `(name, major, minor, total_memory, multi_processor_count)` of GPU `ordinal`
/// (`torch.cuda.get_device_properties`).
#[pyfunction]
fn _cuda_device_properties(ordinal: usize) -> PyResult<(String, i32, i32, usize, i32)> {
    #[cfg(feature = "cuda")]
    {
        use crate::error::IntoPyResult;
        let p = tinytorch::backend::cuda::device_properties(ordinal).py()?;
        Ok((
            p.name,
            p.major,
            p.minor,
            p.total_memory,
            p.multi_processor_count,
        ))
    }
    #[cfg(not(feature = "cuda"))]
    {
        Err(pyo3::exceptions::PyAssertionError::new_err(format!(
            "get_device_properties(cuda:{ordinal}): Torch not compiled with CUDA enabled"
        )))
    }
}

#[pymodule]
fn _tinytorch(m: &Bound<'_, PyModule>) -> PyResult<()> {
    error::panics_are_runtime_errors(m.py())?;
    m.add(
        "OutOfMemoryError",
        m.py().get_type::<error::OutOfMemoryError>(),
    )?;
    m.add_class::<tensor::PyTensor>()?;
    m.add_class::<tensor::GradFn>()?;
    m.add_class::<autograd::PyHookHandle>()?;
    m.add_class::<convert::PyDType>()?;
    m.add_class::<convert::PyDevice>()?;
    m.add_class::<random::PyGenerator>()?;
    m.add_class::<ops::ValuesIndices>()?;
    m.add_class::<optim::PyOptimizer>()?;
    m.add_class::<recurrent::PyRecurrent>()?;
    m.add_class::<quant::PyDynamicQuantLinear>()?;
    m.add_class::<distributed::PyGradientReducer>()?;
    m.add_class::<distributed::PyDistributedSampler>()?;
    // One object per dtype, so that aliases are the same object (`torch.int is torch.int32`).
    let mut dtypes: Vec<(tinytorch::DType, Py<convert::PyDType>)> = Vec::new();
    for (name, dtype) in convert::DTYPE_NAMES {
        let obj = match dtypes.iter().find(|(d, _)| d == dtype) {
            Some((_, o)) => o.clone_ref(m.py()),
            None => {
                let o = Py::new(m.py(), convert::PyDType(*dtype))?;
                dtypes.push((*dtype, o.clone_ref(m.py())));
                o
            }
        };
        m.add(*name, obj)?;
    }
    macro_rules! add {
        ($($f:path),* $(,)?) => { $( m.add_function(wrap_pyfunction!($f, m)?)?; )* };
    }
    add!(
        creation::tensor,
        creation::zeros,
        creation::ones,
        creation::empty,
        creation::full,
        creation::rand,
        creation::randn,
        creation::randint,
        creation::arange,
        creation::linspace,
        creation::eye,
        creation::_like,
        creation::_from_numpy,
        creation::is_tensor,
        ops::cat,
        ops::stack,
        ops::einsum,
        ops::r#where,
        random::manual_seed,
        random::randperm,
        rnn_cell::_cell_init,
        rnn_cell::_cell_forward,
        amp::_autocast_dtype,
        amp::_set_autocast_dtype,
        autograd::_custom_function,
        autograd::_autograd_grad,
        autograd::_checkpoint,
        io::_save_safetensors,
        io::_load_safetensors,
        io::_serialize_safetensors,
        io::_deserialize_safetensors,
        optim::clip_grad_norm_,
        optim::clip_grad_value_,
        profile::_memory_allocated,
        profile::_max_memory_allocated,
        profile::_reset_peak_memory_stats,
        profile::_profile_summary,
        benchmark::_timing_summary,
        prune::_prune_l1_unstructured,
        prune::_prune_global_unstructured,
        prune::_prune_ln_structured,
        benchmark::_timing_speedup,
        distributed::_dist_mpi_available,
        distributed::_dist_init,
        distributed::_dist_destroy,
        distributed::_dist_is_initialized,
        distributed::_dist_info,
        distributed::_dist_all_reduce,
        distributed::_dist_broadcast,
        distributed::_dist_all_gather,
        distributed::_dist_reduce_scatter,
        distributed::_dist_barrier,
        distributed::_dist_broadcast_from_rank_0,
        _set_grad_enabled,
        is_grad_enabled,
        _cuda_is_available,
        _cuda_is_built,
        _cuda_set_allow_tf32,
        _cuda_synchronize,
        _cuda_device_name,
        _cuda_device_properties,
        _use_this_thread_for_compute,
        _is_tracing,
        error::_test_panic,
    );
    let l = PyModule::new(m.py(), "_linalg")?;
    linalg::register(&l)?;
    m.add_submodule(&l)?;
    let sp = PyModule::new(m.py(), "_special")?;
    special::register(&sp)?;
    m.add_submodule(&sp)?;
    let f = PyModule::new(m.py(), "_functional")?;
    functional::register(&f)?;
    m.add_submodule(&f)?;
    cuda_event::register(m)?;
    cudnn::register(m)?;
    Ok(())
}
