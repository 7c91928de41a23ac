//! FLOP and byte counts of one traced op, by the standard formulas.
//!
//! The convention is `torch.utils.flop_counter.FlopCounterMode`'s: a multiply-add is two
//! FLOPs, and only the ops that carry a model's arithmetic are counted — matrix products
//! (`matmul`, `addmm`, `mm`, `bmm`, `dot`), convolutions (`conv1d`, `conv2d`,
//! `conv_transpose2d`) and `scaled_dot_product_attention`. Element-wise ops, norms, pooling
//! and softmax count zero, as there. Multiply-adds (MACs, fvcore's and ptflops' "FLOPs" for
//! these layers) are half the FLOPs.

use crate::autograd::trace::OpRecord;

/// Forward FLOPs of `op` (two per multiply-add; see the module docs).
pub fn forward_flops(op: &OpRecord) -> u64 {
    2 * forward_macs(op)
}

/// Forward multiply-adds of `op`.
pub fn forward_macs(op: &OpRecord) -> u64 {
    let out = op.output.numel() as u64;
    let shape = |i: usize| op.inputs.get(i).map(|t| t.shape.as_slice());
    match op.name {
        // (..., M, K) @ (..., K, N): K multiply-adds per output element (also for 1-D sides;
        // `addmm`'s bias adds no multiply).
        "matmul" | "addmm" | "mm" | "bmm" | "dot" => shape(0)
            .and_then(|a| a.last())
            .map_or(0, |&k| out * k as u64),
        // Each output element reads (C_in / groups) x kernel inputs: the weight's elements
        // per output channel.
        "conv1d" | "conv2d" => match shape(1) {
            Some(w) if !w.is_empty() && w[0] > 0 => {
                out * (w.iter().product::<usize>() / w[0]) as u64
            }
            _ => 0,
        },
        // The transpose scatters each input element over C_out / groups x kernel outputs;
        // the weight is (C_in, C_out / groups, kH, kW).
        "conv_transpose2d" => match (shape(0), shape(1)) {
            (Some(x), Some(w)) if !w.is_empty() && w[0] > 0 => {
                let inputs = x.iter().product::<usize>() as u64;
                inputs * (w.iter().product::<usize>() / w[0]) as u64
            }
            _ => 0,
        },
        // Q (..., L, E) K^T (..., S, E) then the weights (..., L, S) times V (..., S, Ev).
        "scaled_dot_product_attention" => match (shape(0), shape(1), shape(2)) {
            (Some(q), Some(k), Some(v)) if q.len() >= 2 && k.len() >= 2 && v.len() >= 2 => {
                let batch: u64 = q[..q.len() - 2].iter().product::<usize>() as u64;
                let (l, e) = (q[q.len() - 2] as u64, q[q.len() - 1] as u64);
                let s = k[k.len() - 2] as u64;
                let ev = v[v.len() - 1] as u64;
                batch * l * s * (e + ev)
            }
            _ => 0,
        },
        _ => 0,
    }
}

/// Ops that make a view (or a free reshape) and move no data.
const VIEWS: &[&str] = &[
    "view",
    "transpose",
    "permute",
    "slice",
    "select",
    "narrow",
    "expand",
    "unsqueeze",
    "squeeze",
    "as_strided",
    "diagonal",
    "unfold",
];

/// Whether the op named `name` makes a view (moves no data).
pub fn is_view(name: &str) -> bool {
    VIEWS.contains(&name)
}

/// Bytes an op reads and writes in its forward pass: every input once and the output once
/// (zero for views). The denominator of its arithmetic intensity.
pub fn forward_bytes(op: &OpRecord) -> u64 {
    if is_view(op.name) {
        return 0;
    }
    let inputs: usize = op.inputs.iter().map(|t| t.bytes()).sum();
    (inputs + op.output.bytes()) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autograd::trace::TracedTensor;
    use crate::base::DType;
    use crate::tensor::{Tensor, TensorId};
    use std::time::Duration;

    fn record(name: &'static str, inputs: &[&[usize]], output: &[usize]) -> OpRecord {
        let id: TensorId = Tensor::zeros(&[1], DType::F32, crate::Device::Cpu)
            .unwrap()
            .id();
        let t = |s: &[usize]| TracedTensor {
            id,
            shape: s.to_vec(),
            dtype: DType::F32,
        };
        OpRecord {
            name,
            inputs: inputs.iter().map(|s| t(s)).collect(),
            output: t(output),
            forward: Duration::ZERO,
            backward: Duration::ZERO,
            value: None,
        }
    }

    #[test]
    fn the_standard_formulas() {
        // Linear 784 -> 128 at batch 64: 64 * 128 * 784 MACs.
        let mm = record("matmul", &[&[64, 784], &[784, 128]], &[64, 128]);
        assert_eq!(forward_macs(&mm), 64 * 128 * 784);
        assert_eq!(forward_flops(&mm), 2 * 64 * 128 * 784);
        // Conv 48 -> 96, 5x5, 28x28 output, batch 2: N Cout Ho Wo Cin k k.
        let conv = record(
            "conv2d",
            &[&[2, 48, 28, 28], &[96, 48, 5, 5], &[96]],
            &[2, 96, 28, 28],
        );
        assert_eq!(forward_macs(&conv), 2 * 96 * 28 * 28 * 48 * 25);
        // Grouped: 4 groups of 8 -> 8 channels: each output reads 8 * 9 inputs.
        let grouped = record("conv2d", &[&[1, 32, 8, 8], &[32, 8, 3, 3]], &[1, 32, 8, 8]);
        assert_eq!(forward_macs(&grouped), 32 * 64 * 8 * 9);
        // Transposed 16 -> 8, 4x4 kernel: every input element times Cout k k.
        let up = record(
            "conv_transpose2d",
            &[&[1, 16, 5, 5], &[16, 8, 4, 4]],
            &[1, 8, 12, 12],
        );
        assert_eq!(forward_macs(&up), 16 * 25 * 8 * 16);
        // Attention, batch 2, 4 heads, L = S = 10, E = 16: 2 * 4 * 10 * 10 * (16 + 16).
        let attn = record(
            "scaled_dot_product_attention",
            &[&[2, 4, 10, 16], &[2, 4, 10, 16], &[2, 4, 10, 16]],
            &[2, 4, 10, 16],
        );
        assert_eq!(forward_macs(&attn), 2 * 4 * 10 * 10 * 32);
        let relu = record("relu", &[&[4, 5]], &[4, 5]);
        assert_eq!(forward_flops(&relu), 0);
        assert_eq!(forward_bytes(&relu), 2 * 20 * 4);
        assert_eq!(forward_bytes(&record("transpose", &[&[4, 5]], &[5, 4])), 0);
    }
}
