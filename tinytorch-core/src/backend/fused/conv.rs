//! Fused 2-D convolution kernels (forward and both gradients in one call each, no column
//! matrix kept between them): `Storage::conv2d_forward` picks the CPU's algorithm once
//! (`cpu/conv/mod.rs`: Winograd, direct AVX-512 or chunked im2col + gemm, f32 and f64) and the
//! backward runs the one it picked. f16 and bf16 operands are widened to f32 (exactly), run
//! through the f32 kernels and the results rounded once: the products and sums of a half-
//! precision convolution with f32 accumulation, as PyTorch's CPU convolutions compute them,
//! at f32's speed (the im2col composition with bf16 products was 3-4x slower than f32's
//! Winograd). bf16 convolutions of stride 1 on CPUs with AMX run on its tiles instead
//! (`cpu/conv/bf16_tiles.rs`: implicit GEMMs, 16 times an FMA's work per instruction).
//! On CUDA, cuDNN runs all three (`cuda/cudnn/`) where it loads and takes the convolution.
//! Devices without such kernels answer `None`, and the op layer composes the
//! convolution from the im2col/col2im primitives and matmul.

use super::{host, narrow, whole, widen, Span};
use crate::backend::cpu::conv::{self as cpu, Algo, Conv};
use crate::backend::cpu::float::KernelFloat;
use crate::backend::cpu::CpuElement;
use crate::backend::{ConvGeometry, Storage};
use crate::base::DType;
use crate::error::{Error, Result};

pub use crate::backend::cpu::conv::{
    set_direct_enabled as set_direct_convolution, set_winograd_enabled as set_winograd_convolution,
};

/// One convolution: the geometry of the whole batch, the output channels and the groups.
#[derive(Clone, Copy, Debug)]
pub struct Conv2dSpec {
    /// Sizes, stride, dilation and padding.
    pub geom: ConvGeometry,
    /// Output channels `Co`.
    pub out_channels: usize,
    /// Groups `G`, dividing both channel counts.
    pub groups: usize,
}

/// What the backward needs of the forward: the problem and the kernels it ran (so that the
/// gradients match the forward's arithmetic).
pub struct ConvPlan {
    conv: Conv,
    dtype: DType,
    kernels: Kernels,
}

/// The kernels a forward ran, which its backward runs too.
enum Kernels {
    /// The CPU's, with the algorithm it picked (half precision widened to f32).
    Cpu(Algo),
    /// bf16 on the CPU's AMX tiles (`cpu/conv/bf16_tiles.rs`), not widened to f32.
    #[cfg(target_arch = "x86_64")]
    Bf16Tiles,
    /// cuDNN, for this problem (its algorithms are cached per problem and pass).
    #[cfg(feature = "cuda")]
    Cudnn(crate::backend::cuda::cudnn::ConvProblem),
}

/// True where this bf16 convolution runs on AMX tiles rather than widened through the f32
/// kernels.
fn bf16_on_tiles(conv: &Conv) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        cpu::bf16_tiles::applies(conv)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = conv;
        false
    }
}

impl Storage {
    /// `(N, Co, OH, OW)` from the contiguous input `(N, Ci, H, W)`, weight `(Co, Ci/G, kh,
    /// kw)` and optional bias `(Co)`, all of one dtype. `Ok(None)` where the device has no
    /// fused kernel for it.
    pub fn conv2d_forward(
        x: Span<'_>,
        w: Span<'_>,
        bias: Option<Span<'_>>,
        spec: &Conv2dSpec,
    ) -> Result<Option<(Storage, ConvPlan)>> {
        let conv = Conv {
            geom: spec.geom,
            out_channels: spec.out_channels,
            groups: spec.groups,
        };
        match (x.storage, x.dtype()) {
            (Storage::Cpu(_), DType::F32) => cpu_forward::<f32>(x, w, bias, conv).map(Some),
            (Storage::Cpu(_), DType::F64) => cpu_forward::<f64>(x, w, bias, conv).map(Some),
            #[cfg(target_arch = "x86_64")]
            (Storage::Cpu(_), DType::BF16) if bf16_on_tiles(&conv) => {
                tiles_forward(x, w, bias, conv).map(Some)
            }
            (Storage::Cpu(_), half @ (DType::F16 | DType::BF16)) => {
                let (xf, wf) = (widen(OP, x, "input")?, widen(OP, w, "weight")?);
                let bf = bias.map(|b| widen(OP, b, "bias")).transpose()?;
                let (y, mut plan) =
                    cpu_forward::<f32>(whole(&xf), whole(&wf), bf.as_ref().map(whole), conv)?;
                plan.dtype = half;
                Ok(Some((narrow(OP, &y, half)?, plan)))
            }
            #[cfg(feature = "cuda")]
            (Storage::Cuda(_), dtype) => cudnn_forward(x, w, bias, spec, conv, dtype),
            _ => Ok(None),
        }
    }

    /// The input's gradient `(N, Ci, H, W)` from the output's gradient `gy` and the weight.
    pub fn conv2d_backward_input(gy: Span<'_>, w: Span<'_>, plan: &ConvPlan) -> Result<Storage> {
        let algo = match &plan.kernels {
            Kernels::Cpu(algo) => *algo,
            #[cfg(target_arch = "x86_64")]
            Kernels::Bf16Tiles => {
                let (_, nw, ny) = sizes(&plan.conv);
                let gy = host_slice::<half::bf16>(gy, "grad_output", ny)?;
                let w = host_slice::<half::bf16>(w, "weight", nw)?;
                return Ok(host(cpu::bf16_tiles::backward_input(gy, w, &plan.conv)));
            }
            #[cfg(feature = "cuda")]
            Kernels::Cudnn(p) => return cudnn_backward_input(gy, w, p),
        };
        match plan.dtype {
            DType::F32 => cpu_backward_input::<f32>(gy, w, &plan.conv, algo),
            DType::F64 => cpu_backward_input::<f64>(gy, w, &plan.conv, algo),
            half @ (DType::F16 | DType::BF16) => {
                let (gyf, wf) = (widen(OP, gy, "grad_output")?, widen(OP, w, "weight")?);
                narrow(
                    OP,
                    &cpu_backward_input::<f32>(whole(&gyf), whole(&wf), &plan.conv, algo)?,
                    half,
                )
            }
            other => Err(Error::unsupported_dtype("conv2d", other)),
        }
    }

    /// The weight's gradient `(Co, Ci/G, kh, kw)` from the input and the output's gradient.
    pub fn conv2d_backward_weight(x: Span<'_>, gy: Span<'_>, plan: &ConvPlan) -> Result<Storage> {
        let algo = match &plan.kernels {
            Kernels::Cpu(algo) => *algo,
            #[cfg(target_arch = "x86_64")]
            Kernels::Bf16Tiles => {
                let (nx, _, ny) = sizes(&plan.conv);
                let gy = host_slice::<half::bf16>(gy, "grad_output", ny)?;
                let x = host_slice::<half::bf16>(x, "input", nx)?;
                return Ok(host(cpu::bf16_tiles::backward_weight(x, gy, &plan.conv)));
            }
            #[cfg(feature = "cuda")]
            Kernels::Cudnn(p) => return cudnn_backward_weight(x, gy, p),
        };
        match plan.dtype {
            DType::F32 => cpu_backward_weight::<f32>(x, gy, &plan.conv, algo),
            DType::F64 => cpu_backward_weight::<f64>(x, gy, &plan.conv, algo),
            half @ (DType::F16 | DType::BF16) => {
                let (xf, gyf) = (widen(OP, x, "input")?, widen(OP, gy, "grad_output")?);
                narrow(
                    OP,
                    &cpu_backward_weight::<f32>(whole(&xf), whole(&gyf), &plan.conv, algo)?,
                    half,
                )
            }
            other => Err(Error::unsupported_dtype("conv2d", other)),
        }
    }
}

const OP: &str = "conv2d";

fn sizes(c: &Conv) -> (usize, usize, usize) {
    let g = &c.geom;
    let x = g.batch * g.channels * g.input[0] * g.input[1];
    let w = c.out_channels * g.rows() / c.groups;
    let y = g.batch * c.out_channels * g.output[0] * g.output[1];
    (x, w, y)
}

/// The `len` elements of host operand `what` as `T`s; an error for another length, dtype
/// or device.
fn host_slice<'a, T: CpuElement>(s: Span<'a>, what: &str, len: usize) -> Result<&'a [T]> {
    s.check_len(OP, what, len)?;
    s.cpu_or_err::<T>(OP, what)
}

/// The bf16 forward on AMX tiles.
#[cfg(target_arch = "x86_64")]
fn tiles_forward(
    x: Span<'_>,
    w: Span<'_>,
    bias: Option<Span<'_>>,
    conv: Conv,
) -> Result<(Storage, ConvPlan)> {
    let (nx, nw, _) = sizes(&conv);
    let x = host_slice::<half::bf16>(x, "input", nx)?;
    let w = host_slice::<half::bf16>(w, "weight", nw)?;
    let bias = bias
        .map(|b| host_slice::<half::bf16>(b, "bias", conv.out_channels))
        .transpose()?;
    let y = cpu::bf16_tiles::forward(x, w, bias, &conv);
    let plan = ConvPlan {
        conv,
        dtype: DType::BF16,
        kernels: Kernels::Bf16Tiles,
    };
    Ok((host(y), plan))
}

fn cpu_forward<T: KernelFloat>(
    x: Span<'_>,
    w: Span<'_>,
    bias: Option<Span<'_>>,
    conv: Conv,
) -> Result<(Storage, ConvPlan)> {
    let (nx, nw, _) = sizes(&conv);
    x.check_len(OP, "input", nx)?;
    w.check_len(OP, "weight", nw)?;
    if let Some(b) = bias {
        b.check_len(OP, "bias", conv.out_channels)?;
    }
    let bias = bias.map(|b| b.cpu_or_err::<T>(OP, "bias")).transpose()?;
    let algo = Algo::of::<T>(&conv);
    let y = cpu::forward(
        algo,
        x.cpu_or_err::<T>(OP, "input")?,
        w.cpu_or_err::<T>(OP, "weight")?,
        bias,
        &conv,
    );
    let plan = ConvPlan {
        conv,
        dtype: T::DTYPE,
        kernels: Kernels::Cpu(algo),
    };
    Ok((host(y), plan))
}

fn cpu_backward_input<T: KernelFloat>(
    gy: Span<'_>,
    w: Span<'_>,
    conv: &Conv,
    algo: Algo,
) -> Result<Storage> {
    let (_, nw, ny) = sizes(conv);
    gy.check_len(OP, "grad_output", ny)?;
    w.check_len(OP, "weight", nw)?;
    let gy = gy.cpu_or_err::<T>(OP, "grad_output")?;
    Ok(host(cpu::backward_input(
        algo,
        gy,
        w.cpu_or_err::<T>(OP, "weight")?,
        conv,
    )))
}

fn cpu_backward_weight<T: KernelFloat>(
    x: Span<'_>,
    gy: Span<'_>,
    conv: &Conv,
    algo: Algo,
) -> Result<Storage> {
    let (nx, _, ny) = sizes(conv);
    gy.check_len(OP, "grad_output", ny)?;
    x.check_len(OP, "input", nx)?;
    let gy = gy.cpu_or_err::<T>(OP, "grad_output")?;
    Ok(host(cpu::backward_weight(
        algo,
        x.cpu_or_err::<T>(OP, "input")?,
        gy,
        conv,
    )))
}

/// A GPU operand of cuDNN: its buffer and first element, after checking that it holds
/// `len` elements of `dtype` (the descriptors promise cuDNN exactly that).
#[cfg(feature = "cuda")]
fn cuda_operand<'a>(
    s: Span<'a>,
    what: &str,
    dtype: DType,
    len: usize,
) -> Result<(&'a crate::backend::CudaStorage, usize)> {
    s.check_len(OP, what, len)?;
    if s.dtype() != dtype {
        return Err(Error::dtype(
            OP,
            format!("{what} is {}, the input {dtype}", s.dtype()),
        ));
    }
    Ok((super::cuda_buffer(OP, s.storage)?, s.offset))
}

/// The forward through cuDNN where it is on, loads and takes this convolution; `None`
/// otherwise, and the op layer composes im2col + matmul.
#[cfg(feature = "cuda")]
fn cudnn_forward(
    x: Span<'_>,
    w: Span<'_>,
    bias: Option<Span<'_>>,
    spec: &Conv2dSpec,
    conv: Conv,
    dtype: DType,
) -> Result<Option<(Storage, ConvPlan)>> {
    use crate::backend::cuda::cudnn;
    let Some(p) = cudnn::plan(spec, dtype) else {
        return Ok(None);
    };
    let x = cuda_operand(x, "input", dtype, p.x_len())?;
    let w = cuda_operand(w, "weight", dtype, p.w_len())?;
    let bias = bias
        .map(|b| cuda_operand(b, "bias", dtype, spec.out_channels))
        .transpose()?;
    let y = cudnn::forward(x, w, bias, &p)?;
    Ok(y.map(|y| {
        let plan = ConvPlan {
            conv,
            dtype,
            kernels: Kernels::Cudnn(p),
        };
        (Storage::Cuda(y), plan)
    }))
}

#[cfg(feature = "cuda")]
fn cudnn_backward_input(
    gy: Span<'_>,
    w: Span<'_>,
    p: &crate::backend::cuda::cudnn::ConvProblem,
) -> Result<Storage> {
    let gy = cuda_operand(gy, "grad_output", p.dtype, p.y_len())?;
    let w = cuda_operand(w, "weight", p.dtype, p.w_len())?;
    crate::backend::cuda::cudnn::backward_data(gy, w, p).map(Storage::Cuda)
}

#[cfg(feature = "cuda")]
fn cudnn_backward_weight(
    x: Span<'_>,
    gy: Span<'_>,
    p: &crate::backend::cuda::cudnn::ConvProblem,
) -> Result<Storage> {
    let x = cuda_operand(x, "input", p.dtype, p.x_len())?;
    let gy = cuda_operand(gy, "grad_output", p.dtype, p.y_len())?;
    crate::backend::cuda::cudnn::backward_filter(x, gy, p).map(Storage::Cuda)
}
