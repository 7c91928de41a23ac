//! The key/value cache of generation (GPT and Llama): per layer, buffers of a fixed number of
//! positions allocated once, written in place as tokens arrive. Attention reads a view of the
//! filled part, so the past is never copied. Llama caches only its key/value heads (grouped-
//! query attention) and keys after the rotary embedding.
//!
//! A rolling cache ([`KvCache::rolling`], Mistral's sliding window of W positions) keeps only
//! the last W - 1 positions, all a new query can attend to besides itself: each call attends
//! over those and the new positions (one concatenation, O(W)), then keeps the last W - 1.
//! Memory and per-token cost stay flat however long the sequence grows.

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
    /// Positions held.
    len: usize,
    /// Positions seen and since dropped (rolling caches only).
    dropped: usize,
    /// For a rolling cache, the positions it keeps (its buffers' length, at least 1).
    keep: Option<usize>,
}

impl KvCache {
    /// Empty buffers of shape `[batch, heads, max_positions, head_dim]` per layer.
    pub fn new(layers: usize, shape: [usize; 4], dtype: DType, device: Device) -> Result<Self> {
        let buf = || Tensor::zeros(&shape, dtype, device);
        Ok(KvCache {
            keys: (0..layers).map(|_| buf()).collect::<Result<_>>()?,
            values: (0..layers).map(|_| buf()).collect::<Result<_>>()?,
            len: 0,
            dropped: 0,
            keep: None,
        })
    }

    /// A rolling cache that keeps the last `keep` positions (`shape[2]` is ignored): any
    /// number of positions pass through it.
    pub fn rolling(
        layers: usize,
        shape: [usize; 4],
        keep: usize,
        dtype: DType,
        device: Device,
    ) -> Result<Self> {
        let [b, h, _, d] = shape;
        let mut cache = Self::new(layers, [b, h, keep.max(1), d], dtype, device)?;
        cache.keep = Some(keep);
        Ok(cache)
    }

    /// Positions held (all seen so far, except in a rolling cache).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Positions seen so far: the position the next token takes.
    pub fn position(&self) -> usize {
        self.dropped + self.len
    }

    /// True before the first token.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Forget every position (start a new sequence).
    pub fn clear(&mut self) {
        self.len = 0;
        self.dropped = 0;
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
        if self.keep.is_none() && self.len + t > self.capacity() {
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
        if let Some(keep) = self.keep {
            return self.append_rolling(layer, k, v, keep);
        }
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

    /// A rolling cache's append: the held positions and the new ones, concatenated for the
    /// caller's attention; the last `keep` of them stay.
    fn append_rolling(
        &mut self,
        layer: usize,
        k: &Tensor,
        v: &Tensor,
        keep: usize,
    ) -> Result<(Tensor, Tensor)> {
        let _guard = no_grad();
        let held = self.len;
        let kept = keep.min(held + k.shape()[2]);
        let roll = |buf: &Tensor, new: &Tensor| -> Result<Tensor> {
            let joined = Tensor::cat(&[&buf.narrow(2, 0, held)?, new], 2)?;
            // `joined` is a new tensor, so writing the buffer cannot disturb what it read.
            let start = joined.shape()[2] - kept;
            buf.narrow(2, 0, kept)?
                .copy_(&joined.narrow(2, start as isize, kept)?)?;
            Ok(joined)
        };
        Ok((roll(&self.keys[layer], k)?, roll(&self.values[layer], v)?))
    }

    /// Count `t` new positions (after every layer appended them).
    pub(crate) fn advance(&mut self, t: usize) {
        match self.keep {
            None => self.len += t,
            Some(keep) => {
                let total = self.len + t;
                let kept = keep.min(total);
                self.dropped += total - kept;
                self.len = kept;
            }
        }
    }
}
