//! `DistributedSampler` (`torch.utils.data.distributed.DistributedSampler`): each of N ranks
//! gets its own disjoint share of a data set's indices, in an order drawn anew every epoch
//! from (seed, epoch), so that all ranks agree on the permutation without talking.

use super::randperm;
use crate::error::{Error, Result};
use crate::tensor::Generator;
use std::sync::atomic::{AtomicU64, Ordering};

/// Rank `rank`'s share of the indices of a data set, one epoch at a time. Give it to a
/// [`DataLoader`](super::DataLoader) with [`DataLoaderOptions::sampler`](super::DataLoaderOptions::sampler)
/// and call [`DistributedSampler::set_epoch`] before each epoch.
#[derive(Debug)]
pub struct DistributedSampler {
    num_replicas: usize,
    rank: usize,
    shuffle: bool,
    seed: u64,
    drop_last: bool,
    epoch: AtomicU64,
}

impl DistributedSampler {
    /// `DistributedSampler(dataset, num_replicas, rank, shuffle, seed, drop_last)`: errors
    /// unless `rank < num_replicas`.
    pub fn new(
        num_replicas: usize,
        rank: usize,
        shuffle: bool,
        seed: u64,
        drop_last: bool,
    ) -> Result<DistributedSampler> {
        if num_replicas == 0 || rank >= num_replicas {
            return Err(Error::invalid(
                "DistributedSampler",
                format!(
                    "invalid rank {rank}, rank should be in the interval [0, {}]",
                    num_replicas.saturating_sub(1)
                ),
            ));
        }
        Ok(DistributedSampler {
            num_replicas,
            rank,
            shuffle,
            seed,
            drop_last,
            epoch: AtomicU64::new(0),
        })
    }

    /// The epoch whose order the next [`DistributedSampler::indices`] draws (`set_epoch`).
    pub fn set_epoch(&self, epoch: u64) {
        self.epoch.store(epoch, Ordering::Relaxed);
    }

    /// The current epoch.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Relaxed)
    }

    /// How many indices each rank gets from a data set of `len` samples: `ceil(len / N)`
    /// (the last ones padded by repeating the first) or, with `drop_last`, `floor(len / N)`.
    pub fn num_samples(&self, len: usize) -> usize {
        if self.drop_last {
            len / self.num_replicas
        } else {
            len.div_ceil(self.num_replicas)
        }
    }

    /// This rank's indices for the current epoch: the epoch's order (a permutation drawn from
    /// `seed + epoch`, or `0..len` without shuffling), padded to a multiple of the number of
    /// ranks by repeating its start (or cut, with `drop_last`), then every N-th from `rank`.
    pub fn indices(&self, len: usize) -> Result<Vec<usize>> {
        let mut order: Vec<usize> = if self.shuffle {
            let mut gen = Generator::new(self.seed.wrapping_add(self.epoch()));
            randperm(len, &mut gen)?
        } else {
            (0..len).collect()
        };
        let total = self.num_samples(len) * self.num_replicas;
        if total <= order.len() {
            order.truncate(total);
        } else if !order.is_empty() {
            // Repeat the start as often as needed (a tiny data set may need it several times).
            let mut i = 0;
            while order.len() < total {
                order.push(order[i]);
                i += 1;
            }
        }
        Ok(order
            .into_iter()
            .skip(self.rank)
            .step_by(self.num_replicas)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ranks_shares_are_disjoint_cover_the_data_and_are_equal_in_length() {
        for (len, n) in [(10, 2), (11, 2), (10, 3), (2, 4), (0, 2)] {
            let shares: Vec<Vec<usize>> = (0..n)
                .map(|r| {
                    DistributedSampler::new(n, r, true, 7, false)
                        .unwrap()
                        .indices(len)
                        .unwrap()
                })
                .collect();
            let per = len.div_ceil(n);
            assert!(
                shares.iter().all(|s| s.len() == per),
                "{len} over {n}: {shares:?}"
            );
            let mut all: Vec<usize> = shares.concat();
            all.sort();
            all.dedup();
            assert_eq!(all, (0..len).collect::<Vec<_>>(), "{len} over {n}");
            if len % n == 0 {
                assert_eq!(shares.concat().len(), len, "no padding when it divides");
            }
        }
    }

    #[test]
    fn drop_last_cuts_instead_of_padding() {
        let s = DistributedSampler::new(3, 2, false, 0, true).unwrap();
        assert_eq!(s.indices(11).unwrap(), vec![2, 5, 8]);
        let s = DistributedSampler::new(3, 2, false, 0, false).unwrap();
        assert_eq!(s.indices(11).unwrap(), vec![2, 5, 8, 0]);
    }

    #[test]
    fn each_epoch_reshuffles_and_the_same_epoch_repeats() {
        let s = DistributedSampler::new(2, 0, true, 3, false).unwrap();
        let e0 = s.indices(100).unwrap();
        s.set_epoch(1);
        let e1 = s.indices(100).unwrap();
        assert_ne!(e0, e1);
        s.set_epoch(0);
        assert_eq!(s.indices(100).unwrap(), e0);
    }

    #[test]
    fn a_rank_outside_the_world_is_an_error() {
        let e = DistributedSampler::new(2, 2, true, 0, false).unwrap_err();
        assert!(e.to_string().contains("invalid rank 2"), "{e}");
    }
}
