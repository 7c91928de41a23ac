//! One CUDA device: its context, its one stream, the compiled kernel modules, the cuBLAS
//! handle, the caching allocator and the sticky error flag that index kernels raise.
//!
//! cudarc panics when a CUDA library is missing, so every entry point first asks whether
//! the library loads (`is_culib_present`) and turns a missing one into an `Err`.

use super::kernels;
use crate::error::{Error, Result};
use cudarc::cublas::CudaBlas;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// A CUDA error as a TinyTorch error naming the operation.
pub(crate) fn cuda_err(op: &'static str, e: impl std::fmt::Debug) -> Error {
    Error::Cuda {
        op,
        msg: format!("{e:?}"),
    }
}

/// True when the CUDA driver library loads and reports at least one device.
pub fn is_available() -> bool {
    device_count() > 0
}

/// Number of CUDA devices (0 when the driver library is missing or fails to initialise).
pub fn device_count() -> usize {
    // SAFETY: only probes whether the shared library can be opened.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return 0;
    }
    CudaContext::device_count().map_or(0, |n| n.max(0) as usize)
}

/// The name the driver gives GPU `ordinal` (`torch.cuda.get_device_name`).
pub fn device_name(ordinal: usize) -> Result<String> {
    if !is_available() {
        return Err(Error::Cuda {
            op: "get_device_name",
            msg: "no CUDA device is available".into(),
        });
    }
    let ctx = CudaContext::new(ordinal).map_err(|e| cuda_err("get_device_name", e))?;
    ctx.name().map_err(|e| cuda_err("get_device_name", e))
}

/// What `torch.cuda.get_device_properties` reports of a GPU.
#[derive(Clone, Debug)]
pub struct DeviceProperties {
    /// The driver's name for it.
    pub name: String,
    /// Compute capability, major and minor.
    pub major: i32,
    /// See `major`.
    pub minor: i32,
    /// Device memory in bytes.
    pub total_memory: usize,
    /// Streaming multiprocessors.
    pub multi_processor_count: i32,
}

/// The properties of GPU `ordinal`, as the driver reports them.
pub fn device_properties(ordinal: usize) -> Result<DeviceProperties> {
    const OP: &str = "get_device_properties";
    if !is_available() {
        return Err(Error::Cuda {
            op: OP,
            msg: "no CUDA device is available".into(),
        });
    }
    let ctx = CudaContext::new(ordinal).map_err(|e| cuda_err(OP, e))?;
    let (major, minor) = ctx.compute_capability().map_err(|e| cuda_err(OP, e))?;
    let sm = cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
    Ok(DeviceProperties {
        name: ctx.name().map_err(|e| cuda_err(OP, e))?,
        major,
        minor,
        total_memory: ctx.total_mem().map_err(|e| cuda_err(OP, e))?,
        multi_processor_count: ctx.attribute(sm).map_err(|e| cuda_err(OP, e))?,
    })
}

/// True when libnvrtc loads (kernels can be compiled).
pub fn nvrtc_available() -> bool {
    // SAFETY: only probes whether the shared library can be opened.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// Matmul in TF32 (off by default, as `torch.backends.cuda.matmul.allow_tf32`).
static ALLOW_TF32: AtomicBool = AtomicBool::new(false);

/// Let f32 matmuls use TF32 tensor cores (faster, ~10 mantissa bits).
pub fn set_allow_tf32(on: bool) {
    ALLOW_TF32.store(on, Ordering::Relaxed);
}

/// Whether f32 matmuls may use TF32.
pub fn allow_tf32() -> bool {
    ALLOW_TF32.load(Ordering::Relaxed)
}

/// Counts of what makes the host and a device wait for each other (see
/// [`CudaDevice::traffic`]); subtract two readings to count what happened between them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Copies from the host to the device.
    pub to_device: u64,
    /// Copies from the device to the host.
    pub to_host: u64,
    /// Times the host waited for the device's queue to drain (`synchronize`).
    pub waits: u64,
}

impl std::ops::Sub for Traffic {
    type Output = Traffic;
    fn sub(self, earlier: Traffic) -> Traffic {
        Traffic {
            to_device: self.to_device - earlier.to_device,
            to_host: self.to_host - earlier.to_host,
            waits: self.waits - earlier.waits,
        }
    }
}

/// A CUDA device as the backend uses it.
pub struct CudaDevice {
    ordinal: usize,
    pub(crate) stream: Arc<CudaStream>,
    functions: Mutex<HashMap<String, CudaFunction>>,
    modules: Mutex<HashMap<&'static str, Arc<CudaModule>>>,
    blas: OnceLock<std::result::Result<CudaBlas, String>>,
    /// Freed buffers by byte size, reused before asking the driver for memory.
    cache: Mutex<HashMap<usize, Vec<CudaSlice<u8>>>>,
    /// Buffers obtained from the driver so far (cache misses).
    allocations: AtomicU64,
    /// Host <-> device copies and host waits so far (see [`Traffic`]).
    traffic: [AtomicU64; 3],
    /// Set by a kernel that met an out-of-range index; checked at synchronisation.
    error_flag: Mutex<CudaSlice<i32>>,
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CudaDevice(cuda:{})", self.ordinal)
    }
}

static DEVICES: OnceLock<Mutex<HashMap<usize, Arc<CudaDevice>>>> = OnceLock::new();

/// The device with this ordinal, initialised on first use.
pub fn get(ordinal: usize) -> Result<Arc<CudaDevice>> {
    let mut devices = DEVICES
        .get_or_init(Default::default)
        .lock()
        .expect("device registry poisoned");
    if let Some(d) = devices.get(&ordinal) {
        return Ok(d.clone());
    }
    let count = device_count();
    if ordinal >= count {
        return Err(Error::Cuda {
            op: "cuda",
            msg: if count == 0 {
                "no CUDA device is available (libcuda did not load or found no GPU)".into()
            } else {
                format!("cuda:{ordinal} requested but only {count} device(s) exist")
            },
        });
    }
    let ctx = CudaContext::new(ordinal).map_err(|e| cuda_err("cuda", e))?;
    if nvrtc_available() {
        check_driver_runs_nvrtc_ptx(driver_version()?, nvrtc_version()?)?;
    }
    // One stream orders all work, so cudarc's per-buffer events are not needed.
    // SAFETY: no other stream ever touches this context's buffers.
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx.default_stream();
    keep_pool_memory(&ctx)?;
    let error_flag = stream
        .alloc_zeros::<i32>(1)
        .map_err(|e| cuda_err("cuda", e))?;
    let d = Arc::new(CudaDevice {
        ordinal,
        stream,
        functions: Mutex::default(),
        modules: Mutex::default(),
        blas: OnceLock::new(),
        cache: Mutex::default(),
        allocations: AtomicU64::new(0),
        traffic: Default::default(),
        error_flag: Mutex::new(error_flag),
    });
    devices.insert(ordinal, d.clone());
    Ok(d)
}

/// The CUDA version the driver supports, as the driver encodes it (13000 for 13.0).
fn driver_version() -> Result<i32> {
    let mut v = 0;
    // SAFETY: writes one int; the driver library is loaded (a context exists).
    unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) }
        .result()
        .map_err(|e| cuda_err("cuda", e))?;
    Ok(v)
}

/// NVRTC's (major, minor) version.
fn nvrtc_version() -> Result<(i32, i32)> {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: writes two ints; callers check that libnvrtc loads first.
    unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| cuda_err("cuda", e))?;
    Ok((major, minor))
}

/// PTX from NVRTC `major.minor` loads only on a driver of that CUDA version or newer; an
/// older driver rejects the module at load time with a bare "unsupported PTX version". Say
/// so up front, naming both versions.
fn check_driver_runs_nvrtc_ptx(driver: i32, nvrtc: (i32, i32)) -> Result<()> {
    let needed = nvrtc.0 * 1000 + nvrtc.1 * 10;
    if driver >= needed {
        return Ok(());
    }
    Err(Error::Cuda {
        op: "cuda",
        msg: format!(
            "the driver supports CUDA {}.{} but NVRTC is {}.{}, whose PTX needs a CUDA {}.{} \
             driver or newer: upgrade the driver, or put an NVRTC of at most the driver's \
             version first on LD_LIBRARY_PATH",
            driver / 1000,
            driver % 1000 / 10,
            nvrtc.0,
            nvrtc.1,
            nvrtc.0,
            nvrtc.1
        ),
    })
}

/// The device's default stream-ordered memory pool, where the driver has one.
fn default_pool(ctx: &Arc<CudaContext>) -> Result<Option<cudarc::driver::sys::CUmemoryPool>> {
    if !ctx.has_async_alloc() {
        return Ok(None);
    }
    let mut pool = std::ptr::null_mut();
    // SAFETY: a plain driver query on the device this context was made for.
    unsafe { cudarc::driver::sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device()) }
        .result()
        .map_err(|e| cuda_err("cuda", e))?;
    Ok(Some(pool))
}

/// Keep freed memory in the device's stream-ordered pool instead of returning it to the
/// driver at every synchronisation.
fn keep_pool_memory(ctx: &Arc<CudaContext>) -> Result<()> {
    use cudarc::driver::sys;
    let Some(pool) = default_pool(ctx)? else {
        return Ok(());
    };
    let mut threshold: u64 = u64::MAX;
    // SAFETY: sets a u64 attribute of this device's pool from a live u64.
    unsafe {
        sys::cuMemPoolSetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            &mut threshold as *mut u64 as *mut std::ffi::c_void,
        )
    }
    .result()
    .map_err(|e| cuda_err("cuda", e))
}

impl CudaDevice {
    /// The device ordinal.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// The kernel `name` of source `module`, compiling the source with NVRTC on first use.
    pub(crate) fn function(&self, module: &'static str, name: &str) -> Result<CudaFunction> {
        if let Some(f) = self.functions.lock().expect("poisoned").get(name) {
            return Ok(f.clone());
        }
        let m = {
            let mut modules = self.modules.lock().expect("poisoned");
            match modules.get(module) {
                Some(m) => m.clone(),
                None => {
                    let arch = self.arch()?;
                    let ptx = kernels::compile(module, Some(arch))?;
                    let m = self
                        .stream
                        .context()
                        .load_module(ptx)
                        .map_err(|e| cuda_err("load_module", e))?;
                    modules.insert(module, m.clone());
                    m
                }
            }
        };
        let f = m
            .load_function(name)
            .map_err(|e| cuda_err("load_function", format!("{name}: {e:?}")))?;
        self.functions
            .lock()
            .expect("poisoned")
            .insert(name.to_string(), f.clone());
        Ok(f)
    }

    /// `compute_XY` of this GPU, for NVRTC.
    fn arch(&self) -> Result<&'static str> {
        let (major, minor) = self
            .stream
            .context()
            .compute_capability()
            .map_err(|e| cuda_err("cuda", e))?;
        // NVRTC wants a 'static str; the set of architectures is small, so leak once each.
        static ARCHES: OnceLock<Mutex<HashMap<(i32, i32), &'static str>>> = OnceLock::new();
        let mut arches = ARCHES
            .get_or_init(Default::default)
            .lock()
            .expect("poisoned");
        Ok(arches
            .entry((major, minor))
            .or_insert_with(|| Box::leak(format!("compute_{major}{minor}").into_boxed_str())))
    }

    /// The cuBLAS handle on this device's stream.
    pub(crate) fn blas(&self) -> Result<&CudaBlas> {
        self.blas
            .get_or_init(|| {
                // SAFETY: only probes whether the shared library can be opened.
                if !unsafe { cudarc::cublas::sys::is_culib_present() } {
                    return Err("libcublas did not load".to_string());
                }
                CudaBlas::new(self.stream.clone()).map_err(|e| format!("{e:?}"))
            })
            .as_ref()
            .map_err(|e| Error::Cuda {
                op: "matmul",
                msg: e.clone(),
            })
    }

    /// A buffer of `bytes` bytes (contents undefined), from the cache when one is free.
    pub(crate) fn alloc(&self, bytes: usize) -> Result<CudaSlice<u8>> {
        let bytes = bytes.max(1);
        if let Some(b) = self
            .cache
            .lock()
            .expect("poisoned")
            .get_mut(&bytes)
            .and_then(Vec::pop)
        {
            return Ok(b);
        }
        self.allocations.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the buffer is written by a kernel or a copy before it is read.
        match unsafe { self.stream.alloc::<u8>(bytes) } {
            Ok(b) => Ok(b),
            Err(_) => {
                self.release_cached_memory()?;
                // SAFETY: as above.
                unsafe { self.stream.alloc::<u8>(bytes) }.map_err(|e| {
                    // Out of memory is the user's to handle (a smaller batch, empty_cache),
                    // as PyTorch's `OutOfMemoryError`; any other failure is CUDA's.
                    if e.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
                        Error::OutOfMemory {
                            device: crate::base::Device::Cuda(self.ordinal),
                            bytes: bytes as u128,
                        }
                    } else {
                        cuda_err(
                            "alloc",
                            format!("{bytes} bytes, after freeing every cached buffer: {e:?}"),
                        )
                    }
                })
            }
        }
    }

    /// Give every cached buffer back to the driver (what an out-of-memory retry needs, like
    /// `torch.cuda.empty_cache()`): drop this device's cache, wait until the stream has
    /// freed those buffers into the memory pool, and trim the pool, which otherwise keeps
    /// all freed memory (its release threshold is set to keep it, `keep_pool_memory`).
    pub fn release_cached_memory(&self) -> Result<()> {
        self.cache.lock().expect("poisoned").clear();
        self.stream
            .synchronize()
            .map_err(|e| cuda_err("empty_cache", e))?;
        if let Some(pool) = default_pool(self.stream.context())? {
            // SAFETY: trims this device's pool; nothing of it is in use by queued work
            // (the stream is idle).
            unsafe { cudarc::driver::sys::cuMemPoolTrimTo(pool, 0) }
                .result()
                .map_err(|e| cuda_err("empty_cache", e))?;
        }
        Ok(())
    }

    /// Return a buffer to the cache (the stream orders its reuse after earlier work).
    pub(crate) fn release(&self, buf: CudaSlice<u8>) {
        let bytes = buf.len();
        self.cache
            .lock()
            .expect("poisoned")
            .entry(bytes)
            .or_default()
            .push(buf);
    }

    /// Number of buffers requested from the driver so far (not served by the cache).
    pub fn allocation_count(&self) -> u64 {
        self.allocations.load(Ordering::Relaxed)
    }

    /// The host <-> device copies and the host's waits for this device so far. A training
    /// step should make none but the one its `loss.item()` asks for: each wait leaves the
    /// device idle while the host queues the next kernels.
    pub fn traffic(&self) -> Traffic {
        let [to_device, to_host, waits] =
            self.traffic.each_ref().map(|c| c.load(Ordering::Relaxed));
        Traffic {
            to_device,
            to_host,
            waits,
        }
    }

    /// Count one host -> device copy.
    pub(crate) fn count_copy_to_device(&self) {
        self.traffic[0].fetch_add(1, Ordering::Relaxed);
    }

    /// Count one device -> host copy.
    pub(crate) fn count_copy_to_host(&self) {
        self.traffic[1].fetch_add(1, Ordering::Relaxed);
    }

    /// The device address of the error flag, for kernels that check indices.
    pub(crate) fn error_flag_ptr(&self) -> u64 {
        let flag = self.error_flag.lock().expect("poisoned");
        let (p, _sync) = flag.device_ptr(&self.stream);
        p
    }

    /// Wait for all queued work, then report (and clear) an out-of-range index that a kernel
    /// met since the last check.
    pub fn synchronize(&self) -> Result<()> {
        self.traffic[2].fetch_add(1, Ordering::Relaxed);
        self.stream
            .synchronize()
            .map_err(|e| cuda_err("synchronize", e))?;
        let mut flag = self.error_flag.lock().expect("poisoned");
        let raised = self
            .stream
            .clone_dtoh(&*flag)
            .map_err(|e| cuda_err("synchronize", e))?;
        if raised[0] != 0 {
            self.stream
                .memset_zeros(&mut *flag)
                .map_err(|e| cuda_err("synchronize", e))?;
            return Err(Error::index(
                "cuda kernel",
                "an index_select/gather/scatter/index_add/embedding index or a cross_entropy target was out of range, or a bernoulli probability outside [0, 1]",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The version rule needs no GPU: NVRTC 13.0's PTX needs a 13.0 driver.
    #[test]
    fn an_older_driver_than_nvrtc_is_named_in_the_error() {
        assert!(check_driver_runs_nvrtc_ptx(13000, (13, 0)).is_ok());
        assert!(check_driver_runs_nvrtc_ptx(13020, (13, 0)).is_ok());
        assert!(check_driver_runs_nvrtc_ptx(12080, (12, 4)).is_ok());
        let e = check_driver_runs_nvrtc_ptx(12040, (13, 0))
            .unwrap_err()
            .to_string();
        assert!(e.contains("12.4") && e.contains("13.0"), "{e}");
        assert!(check_driver_runs_nvrtc_ptx(13000, (13, 1)).is_err());
    }
}
