//! Whether cuDNN 9 can be used in this process: the library opened once (cudarc's dynamic
//! loading, `libcudnn.so.9` found through `LD_LIBRARY_PATH` or the system's paths, as
//! PyTorch's `nvidia/cudnn/lib` wheel folder is), its version read and checked, and every
//! symbol the convolutions call looked up, all before the first cuDNN call.
//!
//! Why so careful: cudarc panics where TinyTorch wants an error. Opening a missing library
//! panics, and so does the first call of a function whose symbol a library of another
//! version lacks (each binding looks its symbol up lazily and `unwrap`s). So the library is
//! probed with `is_culib_present`, every symbol is looked up by hand, and the probe runs
//! under `catch_unwind` in case cudarc panics anyway. The outcome is kept for the process:
//! a library does not appear or vanish while it runs.

use std::sync::{Once, OnceLock};

/// Every cuDNN function the convolutions call, looked up before the first call so that a
/// library without one is "unavailable", not a panic in the middle of a training step.
const SYMBOLS: &[&str] = &[
    "cudnnGetVersion",
    "cudnnCreate",
    "cudnnDestroy",
    "cudnnSetStream",
    "cudnnCreateTensorDescriptor",
    "cudnnSetTensor4dDescriptor",
    "cudnnDestroyTensorDescriptor",
    "cudnnCreateFilterDescriptor",
    "cudnnSetFilter4dDescriptor",
    "cudnnDestroyFilterDescriptor",
    "cudnnCreateConvolutionDescriptor",
    "cudnnSetConvolution2dDescriptor",
    "cudnnSetConvolutionMathType",
    "cudnnSetConvolutionGroupCount",
    "cudnnDestroyConvolutionDescriptor",
    "cudnnGetConvolutionForwardAlgorithm_v7",
    "cudnnGetConvolutionBackwardDataAlgorithm_v7",
    "cudnnGetConvolutionBackwardFilterAlgorithm_v7",
    "cudnnFindConvolutionForwardAlgorithmEx",
    "cudnnFindConvolutionBackwardDataAlgorithmEx",
    "cudnnFindConvolutionBackwardFilterAlgorithmEx",
    "cudnnGetConvolutionForwardWorkspaceSize",
    "cudnnGetConvolutionBackwardDataWorkspaceSize",
    "cudnnGetConvolutionBackwardFilterWorkspaceSize",
    "cudnnConvolutionForward",
    "cudnnConvolutionBackwardData",
    "cudnnConvolutionBackwardFilter",
    "cudnnAddTensor",
];

/// The cuDNN major version cudarc's bindings (feature `cudnn-09021`) were generated for.
const MAJOR: usize = 9;

/// The outcome of loading cuDNN, once per process: its version number as cuDNN reports it
/// (`90100` for 9.1.0), or why it cannot be used.
fn loaded() -> &'static Result<usize, String> {
    static LOADED: OnceLock<Result<usize, String>> = OnceLock::new();
    LOADED.get_or_init(|| {
        probe(
            // SAFETY: only opens (and keeps open) the shared library, as cudarc would.
            || unsafe { cudarc::cudnn::sys::is_culib_present() },
            || {
                // SAFETY: the library is present (checked first); looking symbols up calls
                // nothing.
                let lib = unsafe { cudarc::cudnn::sys::culib() };
                let missing: Vec<&str> = SYMBOLS
                    .iter()
                    .copied()
                    // SAFETY: as above; the pointer is not used.
                    .filter(|s| unsafe { lib.get::<*const ()>(s.as_bytes()) }.is_err())
                    .collect();
                if !missing.is_empty() {
                    return Err(format!("it lacks {}", missing.join(", ")));
                }
                // SAFETY: the symbol exists (just checked); the function takes no arguments.
                Ok(unsafe { cudarc::cudnn::sys::cudnnGetVersion() })
            },
        )
    })
}

/// The loader's logic, apart from the library so that tests can stand in for it: `present`
/// says whether the library opens, `version` looks its symbols up and asks its version (and
/// may panic, as cudarc does; the panic becomes the error).
fn probe(
    present: impl FnOnce() -> bool + std::panic::UnwindSafe,
    version: impl FnOnce() -> Result<usize, String> + std::panic::UnwindSafe,
) -> Result<usize, String> {
    let outcome = std::panic::catch_unwind(|| {
        if !present() {
            return Err(format!(
                "libcudnn.so.{MAJOR} was not found: install cuDNN {MAJOR} (PyTorch's \
                 nvidia-cudnn-cu13 wheel has it) and put its lib folder (site-packages/nvidia/\
                 cudnn/lib) on LD_LIBRARY_PATH"
            ));
        }
        let v = version().map_err(|e| format!("the cuDNN library found cannot be used: {e}"))?;
        match major_of(v) {
            MAJOR => Ok(v),
            other => Err(format!(
                "the cuDNN library found is version {} ({other}.x); TinyTorch's bindings need \
                 cuDNN {MAJOR}",
                version_string(v)
            )),
        }
    });
    outcome.unwrap_or_else(|panic| {
        let why = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic without a message".into());
        Err(format!("loading cuDNN failed: {why}"))
    })
}

/// The major version in cuDNN's version number: `major * 10000 + minor * 100 + patch` since
/// cuDNN 9 (90100 is 9.1.0), `major * 1000 + minor * 100 + patch` before (8907 is 8.9.7).
fn major_of(v: usize) -> usize {
    if v >= 10_000 {
        v / 10_000
    } else {
        v / 1000
    }
}

/// `9.1.0` for 90100.
fn version_string(v: usize) -> String {
    if v >= 10_000 {
        format!("{}.{}.{}", v / 10_000, v / 100 % 100, v % 100)
    } else {
        format!("{}.{}.{}", v / 1000, v / 100 % 10, v % 100)
    }
}

/// Whether cuDNN loaded and can be used (`torch.backends.cudnn.is_available()`). Opens the
/// library on the first call.
pub fn is_available() -> bool {
    loaded().is_ok()
}

/// cuDNN's version number (`torch.backends.cudnn.version()`: 90100 for 9.1.0), or `None`
/// where it cannot be used.
pub fn version() -> Option<usize> {
    loaded().as_ref().ok().copied()
}

/// Why cuDNN cannot be used, or `Ok(())` where it can; the error names the library, the
/// version or the missing functions.
pub fn check() -> crate::error::Result<()> {
    match loaded() {
        Ok(_) => Ok(()),
        Err(why) => Err(crate::error::Error::Cuda {
            op: "cudnn",
            msg: why.clone(),
        }),
    }
}

/// Say once per process that CUDA convolutions run without cuDNN, and why (the message of
/// [`check`]); later calls are silent.
pub(crate) fn warn_fallback_once(why: &str) {
    static WARNED: Once = Once::new();
    WARNED.call_once(|| {
        eprintln!(
            "tinytorch: warning: CUDA convolutions run as im2col + cuBLAS matmul (slower) \
             because cuDNN cannot be used: {why}"
        );
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_an_error_that_says_where_to_put_it() {
        let e = probe(|| false, || unreachable!()).unwrap_err();
        assert!(
            e.contains("libcudnn.so.9") && e.contains("LD_LIBRARY_PATH"),
            "{e}"
        );
    }

    #[test]
    fn a_panic_in_cudarc_becomes_an_error() {
        let e = probe(|| true, || panic!("Missing symbol cudnnCreate")).unwrap_err();
        assert!(e.contains("Missing symbol cudnnCreate"), "{e}");
        let e = probe(|| panic!("no lib"), || Ok(90100)).unwrap_err();
        assert!(e.contains("no lib"), "{e}");
    }

    #[test]
    fn missing_functions_and_other_versions_are_named() {
        let e = probe(|| true, || Err("it lacks cudnnAddTensor".into())).unwrap_err();
        assert!(e.contains("cudnnAddTensor"), "{e}");
        let e = probe(|| true, || Ok(8907)).unwrap_err();
        assert!(e.contains("8.9.7") && e.contains("cuDNN 9"), "{e}");
        assert_eq!(probe(|| true, || Ok(90100)), Ok(90100));
        assert_eq!(probe(|| true, || Ok(91300)), Ok(91300));
    }

    #[test]
    fn version_numbers_of_both_encodings_decode() {
        assert_eq!(
            (major_of(90100), version_string(90100)),
            (9, "9.1.0".into())
        );
        assert_eq!(version_string(91002), "9.10.2");
        assert_eq!((major_of(8907), version_string(8907)), (8, "8.9.7".into()));
    }

    /// On a machine without libcudnn (this project's CI) the real loader answers with an
    /// error, never a panic, and keeps answering the same; with cuDNN 9 present it reports
    /// its version.
    #[test]
    fn the_real_loader_answers_without_panicking() {
        let first = std::panic::catch_unwind(check).expect("the loader must not panic");
        match &first {
            Ok(()) => assert_eq!(version().map(major_of), Some(MAJOR)),
            Err(e) => {
                assert!(!is_available() && version().is_none());
                assert!(e.to_string().contains("cudnn"), "{e}");
            }
        }
        assert_eq!(check().is_ok(), first.is_ok());
    }
}
