//! Random tensors and the seedable generator. TODO(helper): implement.

/// Seed the default generator (`torch.manual_seed`).
pub fn manual_seed(_seed: u64) {}
