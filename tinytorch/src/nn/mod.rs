//! Neural-network building blocks: the `Module` trait, layers, initialisation and losses.

mod module;

pub use module::{prefixed, Module};

mod loss;
mod norm;
pub use loss::{
    binary_cross_entropy, binary_cross_entropy_with_logits, cross_entropy, huber_loss, kl_div,
    l1_loss, mse_loss, nll_loss, smooth_l1_loss, CrossEntropyLoss, KlDivReduction, MSELoss,
    Reduction,
};
pub use norm::{
    batch_norm, group_norm, layer_norm, rms_norm, BatchNorm, BatchNorm1d, BatchNorm2d, GroupNorm,
    LayerNorm, RMSNorm,
};
