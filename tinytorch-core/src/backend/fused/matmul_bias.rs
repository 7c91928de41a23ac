//! A matrix product with a bias row added to every output row in the same pass
//! (`Storage::matmul_bias`; CPU: `cpu/matmul.rs`, where gemm accumulates onto output blocks
//! filled with the bias). Other devices and dtypes answer `None`, and the op layer adds the
//! bias with a broadcast add.

use super::Span;
use crate::backend::cpu::matmul as cpu;
use crate::backend::Storage;
use crate::base::Layout;
use crate::error::Result;

impl Storage {
    /// `(b, m, k) x (b, k, n) + bias` for 3-D layouts as [`Storage::matmul`] takes them and a
    /// contiguous `bias` of `n` elements; `Ok(None)` where the device or dtype has no kernel.
    pub fn matmul_bias(
        &self,
        lhs: &Layout,
        rhs: &Storage,
        rhs_l: &Layout,
        bias: Span<'_>,
    ) -> Result<Option<Storage>> {
        match (self, rhs, bias.storage) {
            // A bias whose length is not the product's columns is not this kernel's; a
            // layout of another rank goes on to the kernel, which reports it.
            (Storage::Cpu(a), Storage::Cpu(b), Storage::Cpu(c))
                if rhs_l.shape().get(2).is_none_or(|&n| n == bias.len) =>
            {
                Ok(cpu::matmul_bias(a, lhs, b, rhs_l, c, bias.offset)?.map(Storage::Cpu))
            }
            _ => Ok(None),
        }
    }
}
