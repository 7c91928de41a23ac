//! 2-D convolution on the CPU, by job: the column matrix (`im2col.rs`, also the backend's
//! im2col/col2im primitives), the chunk-parallel im2col + gemm kernels (`gemm.rs`, every
//! f32/f64 convolution), Winograd F(4x4, 3x3)/F(4x4, 5x5) (`winograd.rs`, f32 stride-1 with
//! enough channels; its AVX2 tile transforms in `winograd_avx2.rs`) and the direct AVX-512
//! kernels (`lanes.rs` with output positions in the lanes for stride 1, `direct.rs` with
//! channels in the lanes for the other f32 convolutions on CPUs that have it); bf16 ones of
//! stride 1 on AMX tiles (`bf16_tiles.rs`, chosen by `fused/conv.rs`). [`Algo::of`]
//! is the one place that picks among them; forward and backward run the algorithm the
//! forward picked.

#[cfg(target_arch = "x86_64")]
pub mod bf16_tiles;
mod direct;
mod gemm;
pub(super) mod im2col;
mod lanes;
mod winograd;
#[cfg(target_arch = "x86_64")]
mod winograd_avx2;

use crate::backend::cpu::float::KernelFloat;
pub use direct::set_enabled as set_direct_enabled;
pub use gemm::Conv;
pub use winograd::set_enabled as set_winograd_enabled;

/// The kernels a convolution runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algo {
    /// Winograd (f32 3x3/5x5, stride 1, enough channels).
    Winograd,
    /// Direct AVX-512 kernels, output positions in the lanes (f32, stride 1).
    Lanes,
    /// Direct AVX-512 kernels, channels in the lanes (f32).
    Direct,
    /// im2col + gemm, chunk-parallel (any f32/f64 convolution).
    Gemm,
}

impl Algo {
    /// The fastest algorithm that takes `conv` in `T`: Winograd where it applies, else the
    /// direct kernels (positions in the lanes where the stride is 1), else im2col + gemm.
    pub fn of<T: KernelFloat>(conv: &Conv) -> Algo {
        if winograd::applies::<T>(conv) {
            Algo::Winograd
        } else if direct::pays::<T>(conv) && lanes::applies(conv) {
            Algo::Lanes
        } else if direct::applies::<T>(conv) {
            Algo::Direct
        } else {
            Algo::Gemm
        }
    }
}

/// `(N, Co, OH, OW)` from the contiguous input `(N, Ci, H, W)`, weight `(Co, Ci/G, kh, kw)`
/// and optional bias `(Co)`.
pub fn forward<T: KernelFloat>(
    algo: Algo,
    x: &[T],
    w: &[T],
    bias: Option<&[T]>,
    c: &Conv,
) -> Vec<T> {
    match algo {
        Algo::Winograd => winograd::forward(x, w, bias, c),
        Algo::Lanes => {
            let y = lanes::forward(f32s(x), f32s(w), bias.map(f32s), c);
            T::from_f32_vec(y)
        }
        Algo::Direct => direct::forward(x, w, bias, c),
        Algo::Gemm => gemm::forward(x, w, bias, c),
    }
}

/// The input's gradient from the output's `gy` and the weight.
pub fn backward_input<T: KernelFloat>(algo: Algo, gy: &[T], w: &[T], c: &Conv) -> Vec<T> {
    match algo {
        Algo::Winograd => winograd::backward_input(gy, w, c),
        // Input gradients the direct kernels do not take (strided, "valid", channels that
        // pad badly to 16) stay on col2im.
        Algo::Lanes => lanes::backward_input(f32s(gy), f32s(w), c)
            .map(T::from_f32_vec)
            .unwrap_or_else(|| gemm::backward_input(gy, w, c)),
        Algo::Direct => {
            direct::backward_input(gy, w, c).unwrap_or_else(|| gemm::backward_input(gy, w, c))
        }
        Algo::Gemm => gemm::backward_input(gy, w, c),
    }
}

/// The weight's gradient from the input and the output's gradient `gy`.
pub fn backward_weight<T: KernelFloat>(algo: Algo, x: &[T], gy: &[T], c: &Conv) -> Vec<T> {
    match algo {
        Algo::Winograd => winograd::backward_weight(x, gy, c),
        // The direct kernels with channels in the lanes (see lanes.rs), where their sums
        // are long enough.
        Algo::Lanes if direct::applies::<T>(c) => direct::backward_weight(x, gy, c),
        Algo::Lanes | Algo::Gemm => gemm::backward_weight(x, gy, c),
        Algo::Direct => direct::backward_weight(x, gy, c),
    }
}

/// `x` as f32 (the direct paths run on f32 only: see `direct::applies`).
fn f32s<T: KernelFloat>(x: &[T]) -> &[f32] {
    T::as_f32_slice(x).expect("the direct convolution runs on f32 only")
}
