//! The key/value cache of generation: per layer, buffers of `block_size` positions
//! allocated once, written in place as tokens arrive. Attention reads a view of the filled
//! part, so a new token costs the same whatever the context length (no copying of the past).

use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::tensor::{DType, Device, Tensor};

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
                format!("{} positions exceed the cache's {cap}", self.len + t),
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
