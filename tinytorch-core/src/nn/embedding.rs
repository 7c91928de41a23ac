//! `nn.Embedding`: a lookup table of vectors indexed by integer ids.

use crate::autograd::needs_grad;
use crate::error::{Error, Result};
use crate::nn::init::normal_;
use crate::nn::Module;
use crate::tensor::{DType, Device, Tensor};

/// `torch.nn.functional.embedding(input, weight, padding_idx)`: rows of `weight`
/// `(num_embeddings, embedding_dim)` picked by the i64 ids in `input`; the output shape is
/// `input.shape + [embedding_dim]`. The row `padding_idx` receives no gradient.
pub fn embedding(input: &Tensor, weight: &Tensor, padding_idx: Option<usize>) -> Result<Tensor> {
    if weight.ndim() != 2 {
        return Err(Error::shape(
            "embedding",
            format!(
                "weight must be 2-D (num_embeddings, embedding_dim), got {:?}",
                weight.shape()
            ),
        ));
    }
    // PyTorch takes int32 indices as well.
    let input = &match input.dtype() {
        DType::I32 => input.to_dtype(DType::I64)?,
        _ => input.clone(),
    };
    if input.dtype() != DType::I64 {
        return Err(Error::dtype(
            "embedding",
            format!("Expected tensor for argument #1 'indices' to have scalar type Long; but got {} instead", input.dtype()),
        ));
    }
    let (num, dim) = (weight.shape()[0], weight.shape()[1]);
    let flat = input.reshape(&[-1])?;
    // On a GPU the index kernel flags an out-of-range index and the next synchronisation
    // reports it (PyTorch's device-side assert): reading the indices here would make the
    // host wait for the device in every forward.
    let checked_here = if flat.device().is_cpu() {
        flat.to_vec::<i64>()?
    } else {
        Vec::new()
    };
    if let Some(bad) = checked_here
        .into_iter()
        .find(|&i| i < 0 || i as usize >= num)
    {
        return Err(Error::index(
            "embedding",
            format!(
                "index {bad} is out of range for an embedding with {num} rows (weight {:?})",
                weight.shape()
            ),
        ));
    }
    let table = match padding_idx {
        Some(pad) if needs_grad(&[weight]) => mask_padding_grad(weight, pad)?,
        _ => weight.clone(),
    };
    let rows = table.index_select(0, &flat)?;
    let mut shape = input.shape().to_vec();
    shape.push(dim);
    rows.reshape(&shape)
}

/// The same values as `weight`, but the gradient of row `pad` is cut: `w * m + w.detach() *
/// (1 - m)` with `m` zero on that row. Both terms are exact (one factor is 0 or 1), so the
/// forward values are unchanged.
fn mask_padding_grad(weight: &Tensor, pad: usize) -> Result<Tensor> {
    let num = weight.shape()[0];
    let mut m = vec![1.0f64; num];
    m[pad] = 0.0;
    let mask = Tensor::from_vec(m, &[num, 1])?
        .to_dtype(weight.dtype())?
        .to_device(weight.device())?;
    let frozen = weight.detach().mul(&mask.rsub_scalar(1.0)?)?;
    weight.mul(&mask)?.add(&frozen)
}

/// `torch.nn.Embedding(num_embeddings, embedding_dim, padding_idx)`: weight initialised
/// N(0, 1) with the padding row zeroed; that row's gradient stays zero.
pub struct Embedding {
    /// `(num_embeddings, embedding_dim)`.
    pub weight: Tensor,
    /// The row that is not trained (and starts at zero).
    pub padding_idx: Option<usize>,
    training: bool,
}

impl Embedding {
    /// `nn.Embedding(num_embeddings, embedding_dim, padding_idx)`, f32 on the CPU. Errors
    /// when `padding_idx >= num_embeddings`.
    pub fn new(
        num_embeddings: usize,
        embedding_dim: usize,
        padding_idx: Option<usize>,
    ) -> Result<Embedding> {
        if let Some(p) = padding_idx {
            if p >= num_embeddings {
                return Err(Error::invalid(
                    "Embedding",
                    format!("Padding_idx {p} must be within num_embeddings ({num_embeddings})"),
                ));
            }
        }
        let weight = Tensor::zeros(&[num_embeddings, embedding_dim], DType::F32, Device::Cpu)?;
        normal_(&weight, 0.0, 1.0)?;
        if let Some(p) = padding_idx {
            let _guard = crate::autograd::no_grad();
            weight.select(0, p as isize)?.fill_(0.0)?;
        }
        Ok(Embedding {
            weight: weight.requires_grad_(true)?,
            padding_idx,
            training: true,
        })
    }
}

impl Module for Embedding {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        embedding(x, &self.weight, self.padding_idx)
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        vec![("weight".to_string(), self.weight.clone())]
    }

    fn set_training(&mut self, training: bool) {
        self.training = training;
    }

    fn is_training(&self) -> bool {
        self.training
    }
}
