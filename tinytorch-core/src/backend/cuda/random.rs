//! Random tensors drawn on the device (kernels/random.cu, Philox4x32-10): uniform, normal
//! and Bernoulli, each element a function of the draw's seed and its index, so that a
//! dropout mask or a noise tensor costs one kernel and no copy from the host.

use super::launch::{grid, launch};
use super::op_codes::random;
use super::{device, suffix, CudaStorage};
use crate::base::DType;
use crate::error::{Error, Result};

const MODULE: &str = "random";

/// What to draw.
#[derive(Clone, Copy, Debug)]
pub enum Draw<'a> {
    /// Uniform in [0, 1) with this many random mantissa bits (the dtype's precision).
    Uniform {
        /// Random bits of each value.
        bits: u32,
    },
    /// Standard normal.
    Normal,
    /// 1 with the probability at the same index of these contiguous values (buffer, element
    /// offset), of the output's dtype; one outside [0, 1] is reported at the next
    /// synchronisation.
    BernoulliOf(&'a CudaStorage, usize),
}

/// `n` values of `dtype` (f32, f64, f16 or bf16) drawn on `cuda:ordinal` as `draw` says,
/// from `seed`.
pub fn draw(
    ordinal: usize,
    dtype: DType,
    n: usize,
    seed: u64,
    draw: Draw<'_>,
) -> Result<CudaStorage> {
    if !dtype.is_float() {
        return Err(Error::unsupported_dtype("random", dtype));
    }
    let dev = device::get(ordinal)?;
    let out = CudaStorage::uninit(&dev, dtype, n)?;
    if n == 0 {
        return Ok(out);
    }
    let (kind, bits, p, probs) = match draw {
        Draw::Uniform { bits } => (random::UNIFORM, bits, 0.0, 0u64),
        Draw::Normal => (random::NORMAL, 53, 0.0, 0),
        Draw::BernoulliOf(probs, at) => {
            if probs.dtype != dtype || at + n > probs.len {
                return Err(Error::invalid(
                    "bernoulli",
                    format!(
                        "{n} probabilities of {dtype} from offset {at} in a buffer of {} {}",
                        probs.len, probs.dtype
                    ),
                ));
            }
            (random::BERNOULLI, 53, 0.0, probs.ptr_at(at))
        }
    };
    launch!(
        &dev,
        MODULE,
        format!("random_{}", suffix(dtype)),
        grid(n),
        n as i64,
        kind,
        seed,
        bits as i32,
        p,
        probs,
        out.ptr(),
        dev.error_flag_ptr()
    );
    Ok(out)
}
