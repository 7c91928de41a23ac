//! [`ProcessGroup`]: the collectives of `torch.distributed` on tensors, over one backend's
//! [`Transport`]. Each public collective first checks that every rank called it with the same
//! shape and dtype (one small all-gather), so that a mistake is an error on every rank
//! instead of a hang or a silent truncation; then it converts the dtypes the backend does not
//! carry, runs the collective and writes the result in place, as PyTorch does.

use super::transport::{Pending, Transport};
use super::{Backend, ReduceOp};
use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::tensor::{DType, Device, Tensor};
use std::sync::Arc;

/// A group of processes that run collectives together (`torch.distributed.ProcessGroup`).
/// Cheap to clone; MPI is finalised when the last clone drops.
#[derive(Clone)]
pub struct ProcessGroup {
    transport: Arc<dyn Transport>,
}

/// Dimensions a descriptor spells out (a hash covers all of them).
const SHOWN_DIMS: usize = 4;
/// [dtype, argument, ndim, SHOWN_DIMS dims, hash of the whole shape]
const DESCRIPTOR_LEN: usize = 4 + SHOWN_DIMS;

/// What a rank passed to a collective, as integers every rank can compare.
fn describe(dtype: DType, shape: &[usize], argument: i64) -> [i64; DESCRIPTOR_LEN] {
    let mut d = [-1i64; DESCRIPTOR_LEN];
    d[0] = dtype_code(dtype);
    d[1] = argument;
    d[2] = shape.len() as i64;
    for (slot, dim) in d[3..3 + SHOWN_DIMS].iter_mut().zip(shape) {
        *slot = *dim as i64;
    }
    // The hash covers the dims past the shown ones too.
    let hash = fnv1a(shape.iter().map(|d| *d as u64));
    d[DESCRIPTOR_LEN - 1] = hash as i64;
    d
}

/// `dtype`'s place in [`DType::ALL`] (-1 for another): the code a descriptor sends.
pub(super) fn dtype_code(dtype: DType) -> i64 {
    DType::ALL
        .iter()
        .position(|t| *t == dtype)
        .map_or(-1, |i| i as i64)
}

/// The FNV-1a hash of `values`: a cheap fingerprint the ranks compare.
pub(super) fn fnv1a(values: impl IntoIterator<Item = u64>) -> u64 {
    values.into_iter().fold(0xcbf2_9ce4_8422_2325, |hash, v| {
        (hash ^ v).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The reduce ops by code, for messages.
const REDUCE_OPS: [ReduceOp; 3] = [ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max];

/// A descriptor in words: "float32 [4, 3], op Sum".
fn show(d: &[i64], argument: &str) -> String {
    let dtype = usize::try_from(d[0])
        .ok()
        .and_then(|i| DType::ALL.get(i))
        .map_or("another dtype".to_string(), |t| t.to_string());
    let ndim = d[2] as usize;
    let mut dims: Vec<String> = d[3..3 + SHOWN_DIMS.min(ndim)]
        .iter()
        .map(i64::to_string)
        .collect();
    if ndim > SHOWN_DIMS {
        dims.push("...".into());
    }
    let arg = match argument {
        "" => String::new(),
        "op" => match REDUCE_OPS.get(d[1] as usize) {
            Some(op) => format!(", op {op:?}"),
            None => format!(", op code {}", d[1]),
        },
        _ => format!(", {argument} {}", d[1]),
    };
    format!("{dtype} [{}]{arg}", dims.join(", "))
}

impl ProcessGroup {
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub(crate) fn new(transport: Arc<dyn Transport>) -> ProcessGroup {
        ProcessGroup { transport }
    }

    /// This process's rank (`dist.get_rank()`).
    pub fn rank(&self) -> usize {
        self.transport.rank()
    }
    /// Number of processes (`dist.get_world_size()`).
    pub fn world_size(&self) -> usize {
        self.transport.world_size()
    }
    /// The backend (`dist.get_backend()`).
    pub fn backend(&self) -> Backend {
        self.transport.backend()
    }
    /// The device whose tensors the collectives take: the CPU for MPI, this process's GPU
    /// for NCCL.
    pub fn device(&self) -> Device {
        self.transport.device()
    }

    /// Check that every rank called `op` with the same dtype, shape and argument (the
    /// reduce op or root); an error on every rank, naming each rank's call, otherwise.
    fn agree(&self, op: &'static str, t: Option<&Tensor>, argument: (&str, i64)) -> Result<()> {
        if self.world_size() == 1 {
            return Ok(());
        }
        let (dtype, shape) = t.map_or((DType::U8, &[][..]), |t| (t.dtype(), t.shape()));
        let mine = describe(dtype, shape, argument.1);
        let mine_t = Tensor::from_slice(&mine).to_device(self.device())?;
        // A failure here (a peer that never comes) is a failure of `op`.
        let all = (|| self.transport.all_gather(mine_t)?.wait()?.to_vec::<i64>())().map_err(
            |e| match e {
                Error::Distributed { msg, .. } => Error::distributed(op, msg),
                other => other,
            },
        )?;
        let ranks: Vec<&[i64]> = all.chunks(DESCRIPTOR_LEN).collect();
        if ranks.iter().all(|d| *d == ranks[0]) {
            return Ok(());
        }
        let calls: Vec<String> = ranks
            .iter()
            .enumerate()
            .map(|(r, d)| format!("rank {r}: {}", show(d, argument.0)))
            .collect();
        Err(Error::distributed(
            op,
            format!(
                "the ranks called it with different tensors or arguments ({})",
                calls.join("; ")
            ),
        ))
    }

    /// The tensor as the transport takes it: flat, contiguous, on the group's device, of a
    /// dtype it carries (with the reduce op to use on that dtype).
    fn to_wire(
        &self,
        op: &'static str,
        t: &Tensor,
        reduce: ReduceOp,
    ) -> Result<(Tensor, ReduceOp)> {
        if t.device() != self.device() {
            return Err(Error::Device {
                op,
                lhs: self.device(),
                rhs: t.device(),
            });
        }
        let (dtype, reduce) = match t.dtype() {
            // Bools combine as a logical or, which is the maximum of 0/1 bytes.
            DType::Bool => (DType::U8, ReduceOp::Max),
            d if self.transport.carries(d) => (d, reduce),
            // Half precision is reduced in f32 and rounded once.
            d if d.is_float() => (DType::F32, reduce),
            d => {
                return Err(Error::dtype(
                    op,
                    format!(
                        "the {} backend carries no {d} tensors",
                        self.backend().name()
                    ),
                ))
            }
        };
        let flat = t.detach().contiguous()?.reshape(&[-1])?.to_dtype(dtype)?;
        Ok((flat, reduce))
    }

    /// Write the flat result `out` into `t` (its shape and dtype), outside the graph.
    fn write_back(t: &Tensor, out: &Tensor) -> Result<()> {
        let _guard = no_grad();
        t.copy_(&out.to_dtype(t.dtype())?.reshape(&t.shape())?)?;
        Ok(())
    }

    /// Reduce `tensor` over the ranks with `op`, in place on every rank
    /// (`dist.all_reduce(tensor, op)`). `Avg` needs a floating dtype.
    pub fn all_reduce(&self, tensor: &Tensor, op: ReduceOp) -> Result<()> {
        const OP: &str = "all_reduce";
        if op == ReduceOp::Avg && !tensor.dtype().is_float() {
            return Err(Error::dtype(
                OP,
                format!(
                    "ReduceOp::Avg needs a floating dtype, got {}",
                    tensor.dtype()
                ),
            ));
        }
        self.agree(
            OP,
            Some(tensor),
            (
                "op",
                REDUCE_OPS.iter().position(|o| *o == op).expect("listed") as i64,
            ),
        )?;
        if tensor.numel() == 0 {
            return Ok(());
        }
        let out = self.all_reduce_flat(OP, tensor, op)?;
        Self::write_back(tensor, &out)
    }

    /// The all-reduce of `tensor` as a new flat tensor of the wire dtype, without the
    /// agreement check (for callers whose ranks agree by construction: DDP, SyncBatchNorm).
    pub(crate) fn all_reduce_flat(
        &self,
        op_name: &'static str,
        tensor: &Tensor,
        op: ReduceOp,
    ) -> Result<Tensor> {
        self.all_reduce_start(op_name, tensor, op)?.wait_averaged()
    }

    /// Start an all-reduce without the agreement check; see [`Self::all_reduce_flat`].
    pub(crate) fn all_reduce_start(
        &self,
        op_name: &'static str,
        tensor: &Tensor,
        op: ReduceOp,
    ) -> Result<ReduceWork> {
        let (flat, reduce) = self.to_wire(op_name, tensor, op)?;
        let divide_by = (op == ReduceOp::Avg).then_some(self.world_size());
        Ok(ReduceWork {
            pending: self.transport.all_reduce(flat, reduce)?,
            divide_by,
        })
    }

    /// Rank `src`'s `tensor` on every rank, in place (`dist.broadcast(tensor, src)`).
    pub fn broadcast(&self, tensor: &Tensor, src: usize) -> Result<()> {
        const OP: &str = "broadcast";
        self.check_rank(OP, src)?;
        self.agree(OP, Some(tensor), ("src", src as i64))?;
        self.broadcast_unchecked(tensor, src)
    }

    /// [`Self::broadcast`] without the agreement check.
    pub(crate) fn broadcast_unchecked(&self, tensor: &Tensor, src: usize) -> Result<()> {
        if tensor.numel() == 0 || self.world_size() == 1 {
            return Ok(());
        }
        let (flat, _) = self.to_wire("broadcast", tensor, ReduceOp::Sum)?;
        let out = self.transport.broadcast(flat, src)?.wait()?;
        Self::write_back(tensor, &out)
    }

    /// Every rank's `tensor`, in rank order (`dist.all_gather(tensor_list, tensor)`).
    pub fn all_gather(&self, tensor: &Tensor) -> Result<Vec<Tensor>> {
        const OP: &str = "all_gather";
        self.agree(OP, Some(tensor), ("", 0))?;
        let world = self.world_size();
        if tensor.numel() == 0 {
            return (0..world)
                .map(|_| tensor.detach().contiguous_copy())
                .collect();
        }
        let (flat, _) = self.to_wire(OP, tensor, ReduceOp::Sum)?;
        let out = self
            .transport
            .all_gather(flat)?
            .wait()?
            .to_dtype(tensor.dtype())?;
        let shape = tensor.shape();
        out.chunk(world, 0)?
            .iter()
            .map(|part| part.reshape(&shape))
            .collect()
    }

    /// Reduce `input` over the ranks with `op`, then rank `r` gets the `r`-th of
    /// `world_size` equal parts along dim 0 (`dist.reduce_scatter_tensor`). Dim 0 must be a
    /// multiple of the world size.
    pub fn reduce_scatter(&self, input: &Tensor, op: ReduceOp) -> Result<Tensor> {
        const OP: &str = "reduce_scatter";
        let world = self.world_size();
        let rows = input.shape().first().copied().unwrap_or(0);
        if input.ndim() == 0 || rows % world != 0 {
            return Err(Error::shape(
                OP,
                format!(
                    "input of shape {:?} does not split into {world} equal parts along dim 0",
                    input.shape()
                ),
            ));
        }
        if op == ReduceOp::Avg && !input.dtype().is_float() {
            return Err(Error::dtype(
                OP,
                format!(
                    "ReduceOp::Avg needs a floating dtype, got {}",
                    input.dtype()
                ),
            ));
        }
        self.agree(
            OP,
            Some(input),
            (
                "op",
                REDUCE_OPS.iter().position(|o| *o == op).expect("listed") as i64,
            ),
        )?;
        let mut shape: Vec<usize> = input.shape().to_vec();
        shape[0] /= world;
        if input.numel() == 0 {
            return Tensor::zeros(&shape, input.dtype(), input.device());
        }
        let (flat, reduce) = self.to_wire(OP, input, op)?;
        let mut out = self.transport.reduce_scatter(flat, reduce)?.wait()?;
        if op == ReduceOp::Avg {
            out = out.div_scalar(world as f64)?;
        }
        out.to_dtype(input.dtype())?.reshape(&shape)
    }

    /// Returns once every rank has entered it (`dist.barrier()`).
    pub fn barrier(&self) -> Result<()> {
        self.agree("barrier", None, ("", 0))?;
        self.transport.barrier()?.wait().map(drop)
    }

    fn check_rank(&self, op: &'static str, rank: usize) -> Result<()> {
        if rank >= self.world_size() {
            return Err(Error::index(
                op,
                format!(
                    "rank {rank} is out of range for a world of {}",
                    self.world_size()
                ),
            ));
        }
        Ok(())
    }
}

/// An all-reduce in flight that divides by the world size when done (for `Avg`).
pub(crate) struct ReduceWork {
    pending: Box<dyn Pending>,
    divide_by: Option<usize>,
}

impl ReduceWork {
    /// Poll it (drives its progress).
    pub(crate) fn is_completed(&mut self) -> Result<bool> {
        self.pending.test()
    }
    /// Wait (up to the group's timeout) for the flat result (averaged for `Avg`), in the
    /// wire dtype.
    pub(crate) fn wait_averaged(self) -> Result<Tensor> {
        let out = self.pending.wait()?;
        match self.divide_by {
            Some(n) => out.div_scalar(n as f64),
            None => Ok(out),
        }
    }
}
