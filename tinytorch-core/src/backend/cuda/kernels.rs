//! The kernel sources (`kernels/*.cu`, embedded at build time) and their compilation with
//! NVRTC at first use. No nvcc is needed to build TinyTorch; a machine without libnvrtc gets
//! an `Err` when a CUDA op first runs.

use super::device::{cuda_err, nvrtc_available};
use crate::error::{Error, Result};
use cudarc::nvrtc::{CompileOptions, Ptx};

/// Types, conversions and indexing shared by every source (prepended before compiling).
const PRELUDE: &str = include_str!("kernels/prelude.cuh");

/// Every kernel source by module name.
pub const SOURCES: &[(&str, &str)] = &[
    ("elementwise", include_str!("kernels/elementwise.cu")),
    ("reduce", include_str!("kernels/reduce.cu")),
    ("index", include_str!("kernels/index.cu")),
    ("conv", include_str!("kernels/conv.cu")),
    ("attention", include_str!("kernels/attention.cu")),
    ("norm", include_str!("kernels/norm.cu")),
    ("batch_norm", include_str!("kernels/batch_norm.cu")),
    ("matmul", include_str!("kernels/matmul.cu")),
    ("adam", include_str!("kernels/adam.cu")),
    ("cross_entropy", include_str!("kernels/cross_entropy.cu")),
    ("random", include_str!("kernels/random.cu")),
];

/// Compile module `name` to PTX for `arch` (e.g. `compute_90`; NVRTC's default when None).
/// A kernel that does not compile returns NVRTC's log in the error.
pub fn compile(name: &str, arch: Option<&'static str>) -> Result<Ptx> {
    let src = SOURCES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, s)| *s)
        .ok_or_else(|| Error::invalid("nvrtc", format!("no kernel source named {name:?}")))?;
    compile_with_arch(name, src, arch)
}

/// Compile a source (after the prelude) for NVRTC's default architecture.
pub fn compile_source(name: &str, src: &str) -> Result<Ptx> {
    compile_with_arch(name, src, None)
}

fn compile_with_arch(name: &str, src: &str, arch: Option<&'static str>) -> Result<Ptx> {
    if !nvrtc_available() {
        return Err(Error::Cuda {
            op: "nvrtc",
            msg: "libnvrtc did not load (put CUDA's lib folder on LD_LIBRARY_PATH)".into(),
        });
    }
    let opts = CompileOptions {
        arch,
        options: vec!["--std=c++17".into()],
        name: Some(format!("{name}.cu")),
        ..Default::default()
    };
    let codes = super::op_codes::defines();
    cudarc::nvrtc::compile_ptx_with_opts(format!("{PRELUDE}\n{codes}\n{src}"), opts).map_err(|e| {
        match e {
            cudarc::nvrtc::CompileError::CompileError { log, .. } => Error::Cuda {
                op: "nvrtc",
                msg: format!("{name}.cu does not compile:\n{}", log.to_string_lossy()),
            },
            other => cuda_err("nvrtc", other),
        }
    })
}

/// The GPU architectures TinyTorch supports and tests the kernels for: Ampere (A100, RTX
/// 30xx), Ada (L4, RTX 40xx) and Hopper (H100/H200). The kernels use nothing newer than
/// sm_80 offers; a device compiles for its own `compute_XY` at first use.
pub const ARCHES: &[&str] = &["compute_80", "compute_86", "compute_89", "compute_90"];

/// Compile every source for every architecture of [`ARCHES`]; returns (module name,
/// architecture, PTX size in bytes) for each.
pub fn compile_all() -> Result<Vec<(&'static str, &'static str, usize)>> {
    use rayon::prelude::*;
    // One NVRTC program per (source, architecture), compiled on every core: NVRTC's calls are
    // thread-safe for distinct programs, and CI's test of every kernel takes half the time.
    let jobs: Vec<(&'static str, &'static str)> = SOURCES
        .iter()
        .flat_map(|(name, _)| ARCHES.iter().map(move |arch| (*name, *arch)))
        .collect();
    jobs.into_par_iter()
        .map(|(name, arch)| Ok((name, arch, compile(name, Some(arch))?.to_src().len())))
        .collect()
}
