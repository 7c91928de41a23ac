//! The key/value cache of generation (GPT and Llama): per layer, buffers of a fixed number of
//! positions allocated once, written in place as tokens arrive. Attention reads a view of the
//! filled part, so the past is never copied. Llama caches only its key/value heads (grouped-
//! query attention) and keys after the rotary embedding.

use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::tensor::{DType, Device, Tensor};

/// `(t, past + t)` bool mask of `t` new queries over the `past` cached keys and themselves:
/// query `i` (position `past + i`) sees keys `j <= past + i`.
pub(crate) fn causal_mask(t: usize, past: usize, device: Device) -> Result<Tensor> {
    Tensor::ones(&[t, past + t], DType::Bool, device)?.tril(past as i64)
}

/// Keys and values of the positions seen so far, for every layer.
pub struct KvCache {
    keys: Vec<Tensor>,
    values: Vec<Tensor>,
    len: usize,
}

impl KvCache {
    /// Empty buffers of shape `[batch, heads, max_positions, head_dim]` per layer.
    pub fn new(layers: usize, shape: [usize; 4], dtype: DType, device: Device) -> Result<Self> {
        let buf = || Tensor::zeros(&shape, dtype, device);
        Ok(KvCache {
            keys: (0..layers).map(|_| buf()).collect::<Result<_>>()?,
            values: (0..layers).map(|_| buf()).collect::<Result<_>>()?,
            len: 0,
        })
    }

    /// Positions cached so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True before the first token.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Forget every position (start a new sequence).
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// The most positions the cache holds.
    pub fn capacity(&self) -> usize {
        self.keys.first().map_or(0, |k| k.shape()[2])
    }

    /// Check that `t` new positions of `batch` sequences through `layers` layers fit, before
    /// any layer writes (so a failed call leaves the cache as it was).
    pub(crate) fn check(&self, batch: usize, t: usize, layers: usize) -> Result<()> {
        let Some(k) = self.keys.first() else {
            return Err(Error::invalid("KvCache", "the cache has no layers"));
        };
        if self.keys.len() != layers || k.shape()[0] != batch {
            return Err(Error::shape(
                "KvCache",
                format!(
                    "a cache of {} layers for batch {} cannot serve {layers} layers and batch {batch}",
                    self.keys.len(),
                    k.shape()[0]
                ),
            ));
        }
        if self.len + t > self.capacity() {
            return Err(Error::invalid(
                "KvCache",
                format!(
                    "{} positions exceed the cache's capacity of {}",
                    self.len + t,
                    self.capacity()
                ),
            ));
        }
        Ok(())
    }

    /// Write layer `layer`'s keys and values `(B, H, t, D)` of the new positions after the
    /// cached ones; returns views of all positions so far (the caller then `advance`s).
    pub(crate) fn append(
        &mut self,
        layer: usize,
        k: &Tensor,
        v: &Tensor,
    ) -> Result<(Tensor, Tensor)> {
        let t = k.shape()[2];
        let cap = self.keys[layer].shape()[2];
        if self.len + t > cap {
            return Err(Error::invalid(
                "KvCache",
                format!(
                    "{} positions exceed the cache's capacity of {cap}",
                    self.len + t
                ),
            ));
        }
        let _guard = no_grad();
        let end = self.len + t;
        for (buf, new) in [(&self.keys[layer], k), (&self.values[layer], v)] {
            buf.narrow(2, self.len as isize, t)?.copy_(new)?;
        }
        Ok((
            self.keys[layer].narrow(2, 0, end)?,
            self.values[layer].narrow(2, 0, end)?,
        ))
    }

    /// Count `t` new positions (after every layer appended them).
    pub(crate) fn advance(&mut self, t: usize) {
        self.len += t;
    }
}
