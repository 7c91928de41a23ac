//! The three cuDNN convolution calls (forward, backward-data, backward-filter) on
//! TinyTorch's CUDA buffers, each with its algorithm from the cache of `algo.rs`: on a
//! shape's first call, cuDNN's v7 heuristic (`cudnnGet*Algorithm_v7`, PyTorch's default),
//! or with `benchmark` on, timing every algorithm on the call's own operands
//! (`cudnnFind*AlgorithmEx`, as `torch.backends.cudnn.benchmark = True`). Workspaces come
//! from the device's caching allocator, so a steady training step allocates nothing.
//!
//! Every call goes to the device's one stream through this thread's handle; nothing here
//! synchronises except the timing runs under `benchmark`, once per shape.

use super::algo::{self, allowed, Algo, Candidate, Choice, Key, Pass};
use super::descriptors::Descriptors;
use super::flags::Flags;
use super::handle::{cudnn_err, handle};
use super::problem::ConvProblem;
use crate::backend::cuda::CudaStorage;
use crate::base::DType;
use crate::error::{Error, Result};
use cudarc::cudnn::result::{self, CudnnError};
use cudarc::cudnn::sys;
use std::ffi::c_void;

/// An operand: a buffer and the element its contiguous run starts at.
pub(crate) type Operand<'a> = (&'a CudaStorage, usize);

/// Why a convolution did not run through cuDNN.
pub(crate) enum Failure {
    /// cuDNN has no algorithm for this problem (a `NOT_SUPPORTED` status, or none allowed
    /// under `deterministic` or within the memory free): the forward falls back to im2col.
    Unsupported(String),
    /// Anything else, reported as is.
    Error(Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Error(e)
    }
}

impl Failure {
    /// As an error of the op (a backward has no other path to fall back to).
    pub fn into_error(self) -> Error {
        match self {
            Failure::Unsupported(why) => Error::Cuda {
                op: "conv2d",
                msg: format!("cuDNN cannot run this convolution: {why}"),
            },
            Failure::Error(e) => e,
        }
    }
}

/// A cuDNN status from `call`: the `NOT_SUPPORTED` family (3000-3999 in cuDNN 9) as
/// [`Failure::Unsupported`], others as errors.
fn status(call: &str, e: CudnnError) -> Failure {
    if e.0 as u32 / 1000 == 3 {
        Failure::Unsupported(format!("{call}: {:?}", e.0))
    } else {
        Failure::Error(cudnn_err(call, e))
    }
}

/// `y = conv(x, w) (+ bias)`: a new `(N, Co, OH, OW)` buffer.
pub(crate) fn forward(
    x: Operand<'_>,
    w: Operand<'_>,
    bias: Option<Operand<'_>>,
    p: &ConvProblem,
) -> std::result::Result<CudaStorage, Failure> {
    let dev = x.0.cuda_device();
    let h = handle(dev)?;
    let d = Descriptors::new(p).map_err(|e| status("cudnnSetConvolution2dDescriptor", e))?;
    let y = CudaStorage::uninit(dev, p.dtype, p.y_len())?;
    let ptrs = [x.0.ptr_at(x.1), w.0.ptr_at(w.1), y.ptr()];
    let choice = choose::<Forward>(h, &d, p, dev, ptrs)?;
    let Algo::Forward(algo) = choice.algo else {
        unreachable!("the cache keys forward choices by Pass::Forward")
    };
    let ws = workspace(dev, choice.workspace)?;
    let s = Scalars::new(p.dtype);
    // SAFETY: the descriptors describe the operands (lengths checked by the caller, packed
    // NCHW from the given elements); the workspace holds `choice.workspace` bytes; all on
    // this handle's stream.
    unsafe {
        result::convolution_forward(
            h,
            s.one(),
            d.x.0,
            ptrs[0] as *const c_void,
            d.w.0,
            ptrs[1] as *const c_void,
            d.conv.0,
            algo,
            ws.ptr as *mut c_void,
            ws.bytes,
            s.zero(),
            d.y.0,
            ptrs[2] as *mut c_void,
        )
    }
    .map_err(|e| status("cudnnConvolutionForward", e))?;
    if let Some(b) = bias {
        let bd = Descriptors::bias(p).map_err(|e| status("cudnnSetTensor4dDescriptor", e))?;
        // SAFETY: `(1, Co, 1, 1)` of the bias buffer from its element, added to every
        // image and position of y (cuDNN broadcasts the size-1 dims): y = 1*b + 1*y.
        unsafe {
            sys::cudnnAddTensor(
                h,
                s.one(),
                bd.0,
                b.0.ptr_at(b.1) as *const c_void,
                s.one(),
                d.y.0,
                ptrs[2] as *mut c_void,
            )
        }
        .result()
        .map_err(|e| status("cudnnAddTensor", e))?;
    }
    Ok(y)
}

/// The input's gradient `(N, Ci, H, W)` from the output's gradient `gy` and the weight.
pub(crate) fn backward_data(
    gy: Operand<'_>,
    w: Operand<'_>,
    p: &ConvProblem,
) -> Result<CudaStorage> {
    backward_data_or_fail(gy, w, p).map_err(Failure::into_error)
}

fn backward_data_or_fail(
    gy: Operand<'_>,
    w: Operand<'_>,
    p: &ConvProblem,
) -> std::result::Result<CudaStorage, Failure> {
    let dev = gy.0.cuda_device();
    let h = handle(dev)?;
    let d = Descriptors::new(p).map_err(|e| status("cudnnSetConvolution2dDescriptor", e))?;
    let dx = CudaStorage::uninit(dev, p.dtype, p.x_len())?;
    // The order `BackwardData`'s calls take them: weight, output gradient, input gradient.
    let ptrs = [w.0.ptr_at(w.1), gy.0.ptr_at(gy.1), dx.ptr()];
    let choice = choose::<BackwardData>(h, &d, p, dev, ptrs)?;
    let Algo::BackwardData(algo) = choice.algo else {
        unreachable!("the cache keys backward-data choices by Pass::BackwardData")
    };
    let ws = workspace(dev, choice.workspace)?;
    let s = Scalars::new(p.dtype);
    // SAFETY: as in `forward`.
    unsafe {
        result::convolution_backward_data(
            h,
            s.one(),
            d.w.0,
            ptrs[0] as *const c_void,
            d.y.0,
            ptrs[1] as *const c_void,
            d.conv.0,
            algo,
            ws.ptr as *mut c_void,
            ws.bytes,
            s.zero(),
            d.x.0,
            ptrs[2] as *mut c_void,
        )
    }
    .map_err(|e| status("cudnnConvolutionBackwardData", e))?;
    Ok(dx)
}

/// The weight's gradient `(Co, Ci/G, kh, kw)` from the input and the output's gradient.
pub(crate) fn backward_filter(
    x: Operand<'_>,
    gy: Operand<'_>,
    p: &ConvProblem,
) -> Result<CudaStorage> {
    backward_filter_or_fail(x, gy, p).map_err(Failure::into_error)
}

fn backward_filter_or_fail(
    x: Operand<'_>,
    gy: Operand<'_>,
    p: &ConvProblem,
) -> std::result::Result<CudaStorage, Failure> {
    let dev = x.0.cuda_device();
    let h = handle(dev)?;
    let d = Descriptors::new(p).map_err(|e| status("cudnnSetConvolution2dDescriptor", e))?;
    let dw = CudaStorage::uninit(dev, p.dtype, p.w_len())?;
    let ptrs = [x.0.ptr_at(x.1), gy.0.ptr_at(gy.1), dw.ptr()];
    let choice = choose::<BackwardFilter>(h, &d, p, dev, ptrs)?;
    let Algo::BackwardFilter(algo) = choice.algo else {
        unreachable!("the cache keys backward-filter choices by Pass::BackwardFilter")
    };
    let ws = workspace(dev, choice.workspace)?;
    let s = Scalars::new(p.dtype);
    // SAFETY: as in `forward`.
    unsafe {
        result::convolution_backward_filter(
            h,
            s.one(),
            d.x.0,
            ptrs[0] as *const c_void,
            d.y.0,
            ptrs[1] as *const c_void,
            d.conv.0,
            algo,
            ws.ptr as *mut c_void,
            ws.bytes,
            s.zero(),
            d.w.0,
            ptrs[2] as *mut c_void,
        )
    }
    .map_err(|e| status("cudnnConvolutionBackwardFilter", e))?;
    Ok(dw)
}

/// `alpha = 1` and `beta = 0` in the type cuDNN reads them as: f64 for double tensors, f32
/// for the others (half-precision ones included).
enum Scalars {
    F32([f32; 2]),
    F64([f64; 2]),
}

impl Scalars {
    fn new(dtype: DType) -> Scalars {
        match dtype {
            DType::F64 => Scalars::F64([1.0, 0.0]),
            _ => Scalars::F32([1.0, 0.0]),
        }
    }

    fn one(&self) -> *const c_void {
        match self {
            Scalars::F32(v) => &v[0] as *const f32 as *const c_void,
            Scalars::F64(v) => &v[0] as *const f64 as *const c_void,
        }
    }

    fn zero(&self) -> *const c_void {
        match self {
            Scalars::F32(v) => &v[1] as *const f32 as *const c_void,
            Scalars::F64(v) => &v[1] as *const f64 as *const c_void,
        }
    }
}

/// A workspace from the device's cache (none for 0 bytes); returned to it when dropped,
/// after the work queued on the stream, which orders its reuse.
struct Workspace {
    _buf: Option<CudaStorage>,
    ptr: u64,
    bytes: usize,
}

fn workspace(
    dev: &std::sync::Arc<crate::backend::cuda::CudaDevice>,
    bytes: usize,
) -> Result<Workspace> {
    if bytes == 0 {
        return Ok(Workspace {
            _buf: None,
            ptr: 0,
            bytes: 0,
        });
    }
    let buf = CudaStorage::uninit(dev, DType::U8, bytes)?;
    Ok(Workspace {
        ptr: buf.ptr(),
        _buf: Some(buf),
        bytes,
    })
}

/// The algorithm for `p` in pass `P`, from the cache or chosen now (and kept).
fn choose<P: PassCalls>(
    h: sys::cudnnHandle_t,
    d: &Descriptors,
    p: &ConvProblem,
    dev: &std::sync::Arc<crate::backend::cuda::CudaDevice>,
    ptrs: [u64; 3],
) -> std::result::Result<Choice, Failure> {
    let flags = Flags::now();
    let key = Key {
        ordinal: dev.ordinal(),
        pass: P::PASS,
        problem: *p,
        deterministic: flags.deterministic,
        benchmark: flags.benchmark,
    };
    algo::choice_for(key, || {
        if flags.benchmark {
            choose_by_timing::<P>(h, d, dev, ptrs, flags.deterministic)
        } else {
            choose_by_heuristic::<P>(h, d, dev, flags.deterministic)
        }
    })
}

/// The first algorithm cuDNN's heuristic ranks that is allowed and whose workspace the
/// device can give now (PyTorch's order of fallbacks when memory is short).
fn choose_by_heuristic<P: PassCalls>(
    h: sys::cudnnHandle_t,
    d: &Descriptors,
    dev: &std::sync::Arc<crate::backend::cuda::CudaDevice>,
    deterministic: bool,
) -> std::result::Result<Choice, Failure> {
    // SAFETY: live handle and descriptors.
    let candidates = unsafe { P::heuristic(h, d) }.map_err(|e| status(P::HEURISTIC, e))?;
    for c in allowed(&candidates, deterministic) {
        // The size for this problem as the run will ask it (the heuristic's own figure
        // can be an estimate); an algorithm whose size cannot be had is skipped.
        // SAFETY: as above.
        let Ok(bytes) = (unsafe { P::workspace_size(h, d, c.algo) }) else {
            continue;
        };
        match workspace(dev, bytes) {
            Ok(_) => {
                return Ok(Choice {
                    algo: P::wrap(c.algo),
                    workspace: bytes,
                })
            }
            Err(Error::OutOfMemory { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(Failure::Unsupported(no_algorithm(deterministic)))
}

/// The fastest allowed algorithm, timed by cuDNN on this call's operands with the largest
/// workspace any algorithm asks (or none, where that much memory is not free: the
/// algorithms needing none are then timed).
fn choose_by_timing<P: PassCalls>(
    h: sys::cudnnHandle_t,
    d: &Descriptors,
    dev: &std::sync::Arc<crate::backend::cuda::CudaDevice>,
    ptrs: [u64; 3],
    deterministic: bool,
) -> std::result::Result<Choice, Failure> {
    let largest = P::ALL
        .iter()
        // SAFETY: live handle and descriptors; an algorithm that does not apply errs.
        .filter_map(|&a| unsafe { P::workspace_size(h, d, a) }.ok())
        .max()
        .unwrap_or(0);
    let ws = match workspace(dev, largest) {
        Err(Error::OutOfMemory { .. }) => workspace(dev, 0)?,
        other => other?,
    };
    // SAFETY: the pointers are the call's operands and output, described by `d`; the
    // workspace holds `ws.bytes`. The timing runs write the output, which the real run
    // then overwrites.
    let candidates = unsafe { P::find(h, d, ptrs, &ws) }.map_err(|e| status(P::FIND, e))?;
    let best = allowed(&candidates, deterministic)
        .find(|c| c.workspace <= ws.bytes)
        .ok_or_else(|| Failure::Unsupported(no_algorithm(deterministic)))?;
    // SAFETY: as above.
    let bytes =
        unsafe { P::workspace_size(h, d, best.algo) }.map_err(|e| status(P::WORKSPACE, e))?;
    Ok(Choice {
        algo: P::wrap(best.algo),
        workspace: bytes,
    })
}

fn no_algorithm(deterministic: bool) -> String {
    if deterministic {
        "no deterministic algorithm (torch.backends.cudnn.deterministic is set) that fits \
         in free memory"
            .into()
    } else {
        "no algorithm that fits in free memory".into()
    }
}

/// One pass's cuDNN calls, so that choosing is written once for the three passes.
trait PassCalls {
    /// cuDNN's algorithm enum of this pass.
    type A: Copy + 'static;
    /// The pass, for the cache key.
    const PASS: Pass;
    /// Every algorithm of the pass (the timing run's workspace fits the largest).
    const ALL: &'static [Self::A];
    /// Names of the calls, for errors.
    const HEURISTIC: &'static str;
    const FIND: &'static str;
    const WORKSPACE: &'static str;
    /// The algorithm as the cache stores it.
    fn wrap(a: Self::A) -> Algo;
    /// cuDNN's heuristic ranking, best first.
    unsafe fn heuristic(
        h: sys::cudnnHandle_t,
        d: &Descriptors,
    ) -> std::result::Result<Vec<Candidate<Self::A>>, CudnnError>;
    /// Timing of every algorithm on `ptrs` (the pass's two inputs, then its output).
    unsafe fn find(
        h: sys::cudnnHandle_t,
        d: &Descriptors,
        ptrs: [u64; 3],
        ws: &Workspace,
    ) -> std::result::Result<Vec<Candidate<Self::A>>, CudnnError>;
    /// Workspace bytes algorithm `a` needs for this problem.
    unsafe fn workspace_size(
        h: sys::cudnnHandle_t,
        d: &Descriptors,
        a: Self::A,
    ) -> std::result::Result<usize, CudnnError>;
}

/// The candidates of a filled perf array (`n` entries returned), as the choosing logic
/// reads them.
macro_rules! candidates {
    ($perf:expr, $n:expr) => {
        $perf[..($n.max(0) as usize).min($perf.len())]
            .iter()
            .map(|r| Candidate {
                algo: r.algo,
                ok: r.status == sys::cudnnStatus_t::CUDNN_STATUS_SUCCESS,
                deterministic: r.determinism == sys::cudnnDeterminism_t::CUDNN_DETERMINISTIC,
                workspace: r.memory,
            })
            .collect()
    };
}

struct Forward;
struct BackwardData;
struct BackwardFilter;

impl PassCalls for Forward {
    type A = sys::cudnnConvolutionFwdAlgo_t;
    const PASS: Pass = Pass::Forward;
    const ALL: &'static [Self::A] = {
        use sys::cudnnConvolutionFwdAlgo_t::*;
        &[
            CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
            CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
            CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
            CUDNN_CONVOLUTION_FWD_ALGO_DIRECT,
            CUDNN_CONVOLUTION_FWD_ALGO_FFT,
            CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING,
            CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD,
            CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED,
        ]
    };
    const HEURISTIC: &'static str = "cudnnGetConvolutionForwardAlgorithm_v7";
    const FIND: &'static str = "cudnnFindConvolutionForwardAlgorithmEx";
    const WORKSPACE: &'static str = "cudnnGetConvolutionForwardWorkspaceSize";

    fn wrap(a: Self::A) -> Algo {
        Algo::Forward(a)
    }

    unsafe fn heuristic(
        h: sys::cudnnHandle_t,
        d: &Descriptors,
    ) -> std::result::Result<Vec<Candidate<Self::A>>, CudnnError> {
        let mut perf = [std::mem::zeroed::<sys::cudnnConvolutionFwdAlgoPerf_t>(); 8];
        let mut n = 0;
        result::get_convolution_forward_algorithm(
            h,
            d.x.0,
            d.w.0,
            d.conv.0,
            d.y.0,
            perf.len() as i32,
            &mut n,
            perf.as_mut_ptr(),
        )?;
        Ok(candidates!(perf, n))
    }

    unsafe fn find(
        h: sys::cudnnHandle_t,
        d: &Descriptors,
        [x, w, y]: [u64; 3],
        ws: &Workspace,
    ) -> std::result::Result<Vec<Candidate<Self::A>>, CudnnError> {
        let mut perf = [std::mem::zeroed::<sys::cudnnConvolutionFwdAlgoPerf_t>(); 8];
        let mut n = 0;
        sys::cudnnFindConvolutionForwardAlgorithmEx(
            h,
            d.x.0,
            x as *const c_void,
            d.w.0,
            w as *const c_void,
            d.conv.0,
            d.y.0,
            y as *mut c_void,
            perf.len() as i32,
            &mut n,
            perf.as_mut_ptr(),
            ws.ptr as *mut c_void,
            ws.bytes,
        )
        .result()?;
        Ok(candidates!(perf, n))
    }

    unsafe fn workspace_size(
        h: sys::cudnnHandle_t,
        d: &Descriptors,
        a: Self::A,
    ) -> std::result::Result<usize, CudnnError> {
        result::get_convolution_forward_workspace_size(h, d.x.0, d.w.0, d.conv.0, d.y.0, a)
    }
}

impl PassCalls for BackwardData {
    type A = sys::cudnnConvolutionBwdDataAlgo_t;
    const PASS: Pass = Pass::BackwardData;
    const ALL: &'static [Self::A] = {
        use sys::cudnnConvolutionBwdDataAlgo_t::*;
        &[
            CUDNN_CONVOLUTION_BWD_DATA_ALGO_0,
            CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
            CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT,
            CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING,
            CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD,
            CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED,
        ]
    };
    const HEURISTIC: &'static str = "cudnnGetConvolutionBackwardDataAlgorithm_v7";
    const FIND: &'static str = "cudnnFindConvolutionBackwardDataAlgorithmEx";
    const WORKSPACE: &'static str = "cudnnGetConvolutionBackwardDataWorkspaceSize";

    fn wrap(a: Self::A) -> Algo {
        Algo::BackwardData(a)
    }

    unsafe fn heuristic(
        h: sys::cudnnHandle_t,
        d: &Descriptors,
    ) -> std::result::Result<Vec<Candidate<Self::A>>, CudnnError> {
        let mut perf = [std::mem::zeroed::<sys::cudnnConvolutionBwdDataAlgoPerf_t>(); 6];
        let mut n = 0;
        result::get_convolution_backward_data_algorithm(
            h,
            d.w.0,
            d.y.0,
            d.conv.0,
            d.x.0,
            perf.len() as i32,
            &mut n,
            perf.as_mut_ptr(),
        )?;
        Ok(candidates!(perf, n))
    }

    unsafe fn find(
        h: sys::cudnnHandle_t,
        d: &Descriptors,
        [w, dy, dx]: [u64; 3],
        ws: &Workspace,
    ) -> std::result::Result<Vec<Candidate<Self::A>>, CudnnError> {
        let mut perf = [std::mem::zeroed::<sys::cudnnConvolutionBwdDataAlgoPerf_t>(); 6];
        let mut n = 0;
        sys::cudnnFindConvolutionBackwardDataAlgorithmEx(
            h,
            d.w.0,
            w as *const c_void,
            d.y.0,
            dy as *const c_void,
            d.conv.0,
            d.x.0,
            dx as *mut c_void,
            perf.len() as i32,
            &mut n,
            perf.as_mut_ptr(),
            ws.ptr as *mut c_void,
            ws.bytes,
        )
        .result()?;
        Ok(candidates!(perf, n))
    }

    unsafe fn workspace_size(
        h: sys::cudnnHandle_t,
        d: &Descriptors,
        a: Self::A,
    ) -> std::result::Result<usize, CudnnError> {
        result::get_convolution_backward_data_workspace_size(h, d.w.0, d.y.0, d.conv.0, d.x.0, a)
    }
}

impl PassCalls for BackwardFilter {
    type A = sys::cudnnConvolutionBwdFilterAlgo_t;
    const PASS: Pass = Pass::BackwardFilter;
    const ALL: &'static [Self::A] = {
        use sys::cudnnConvolutionBwdFilterAlgo_t::*;
        &[
            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0,
            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1,
            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT,
            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3,
            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD,
            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED,
            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING,
        ]
    };
    const HEURISTIC: &'static str = "cudnnGetConvolutionBackwardFilterAlgorithm_v7";
    const FIND: &'static str = "cudnnFindConvolutionBackwardFilterAlgorithmEx";
    const WORKSPACE: &'static str = "cudnnGetConvolutionBackwardFilterWorkspaceSize";

    fn wrap(a: Self::A) -> Algo {
        Algo::BackwardFilter(a)
    }

    unsafe fn heuristic(
        h: sys::cudnnHandle_t,
        d: &Descriptors,
    ) -> std::result::Result<Vec<Candidate<Self::A>>, CudnnError> {
        let mut perf = [std::mem::zeroed::<sys::cudnnConvolutionBwdFilterAlgoPerf_t>(); 7];
        let mut n = 0;
        result::get_convolution_backward_filter_algorithm(
            h,
            d.x.0,
            d.y.0,
            d.conv.0,
            d.w.0,
            perf.len() as i32,
            &mut n,
            perf.as_mut_ptr(),
        )?;
        Ok(candidates!(perf, n))
    }

    unsafe fn find(
        h: sys::cudnnHandle_t,
        d: &Descriptors,
        [x, dy, dw]: [u64; 3],
        ws: &Workspace,
    ) -> std::result::Result<Vec<Candidate<Self::A>>, CudnnError> {
        let mut perf = [std::mem::zeroed::<sys::cudnnConvolutionBwdFilterAlgoPerf_t>(); 7];
        let mut n = 0;
        sys::cudnnFindConvolutionBackwardFilterAlgorithmEx(
            h,
            d.x.0,
            x as *const c_void,
            d.y.0,
            dy as *const c_void,
            d.conv.0,
            d.w.0,
            dw as *mut c_void,
            perf.len() as i32,
            &mut n,
            perf.as_mut_ptr(),
            ws.ptr as *mut c_void,
            ws.bytes,
        )
        .result()?;
        Ok(candidates!(perf, n))
    }

    unsafe fn workspace_size(
        h: sys::cudnnHandle_t,
        d: &Descriptors,
        a: Self::A,
    ) -> std::result::Result<usize, CudnnError> {
        result::get_convolution_backward_filter_workspace_size(h, d.x.0, d.y.0, d.conv.0, d.w.0, a)
    }
}
