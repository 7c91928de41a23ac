//! Every CUDA kernel source compiles with NVRTC for every architecture TinyTorch supports
//! (`kernels::ARCHES`: sm_80, sm_86, sm_89, sm_90). Needs no GPU: CI installs PyPI's
//! `nvidia-cuda-nvrtc` wheel and puts its lib folder on LD_LIBRARY_PATH. Where libnvrtc is
//! missing the test fails unless TINYTORCH_SKIP_NVRTC=1 says that is expected.
#![cfg(feature = "cuda")]

use tinytorch::backend::cuda::{kernels, nvrtc_available};

#[test]
fn every_kernel_source_compiles_with_nvrtc() {
    if !nvrtc_available() {
        assert!(
            std::env::var("TINYTORCH_SKIP_NVRTC").is_ok_and(|v| v == "1"),
            "libnvrtc did not load: install nvidia-cuda-nvrtc and put its lib folder on \
             LD_LIBRARY_PATH (or set TINYTORCH_SKIP_NVRTC=1 to skip)"
        );
        eprintln!("skipped: libnvrtc not found (TINYTORCH_SKIP_NVRTC=1)");
        return;
    }
    let compiled = kernels::compile_all().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        compiled.len(),
        kernels::SOURCES.len() * kernels::ARCHES.len()
    );
    for (name, arch, ptx_bytes) in compiled {
        assert!(
            ptx_bytes > 1000,
            "{name}.cu produced only {ptx_bytes} bytes of PTX for {arch}"
        );
    }
}

#[test]
fn a_broken_kernel_reports_the_compiler_log() {
    if !nvrtc_available() {
        return;
    }
    let err = kernels::compile_source(
        "broken",
        "extern \"C\" __global__ void k() { undefined_fn(); }",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("undefined_fn"), "{err}");
}
