//! Neural-network building blocks: the `Module` trait, layers, initialisation and losses.
//! Modules live at `nn::`; the functional forms at `nn::functional` (`torch.nn.functional`).

/// Implements `Module` for a layer without parameters that keeps a `training: bool` field
/// (activations, `Dropout`, `Flatten`, `Identity`): `forward` is `$body` with `$s` bound to
/// `self` and `$x` to the input, and train/eval mode sets and reports the field, as in
/// PyTorch (only `Dropout` reads it). Defined before the `mod` lines so every layer file
/// sees it.
macro_rules! parameterless_module {
    ($ty:ident, |$s:ident, $x:ident| $body:expr) => {
        impl Module for $ty {
            fn forward(&self, $x: &Tensor) -> Result<Tensor> {
                let $s = self;
                $body
            }

            fn set_training(&mut self, training: bool) {
                self.training = training;
            }

            fn is_training(&self) -> bool {
                self.training
            }
        }
    };
}

mod activation;
mod attention;
mod container;
mod conv;
mod dropout;
mod embedding;
mod flatten;
mod hooks;
pub mod init;
mod linear;
mod loss;
mod mlp;
mod module;
mod norm;
mod pixel_shuffle;
mod pool;
mod position;
mod rnn;
mod transformer;
mod upsample;

pub use crate::ops::loss::{KlDivReduction, Reduction};
pub use activation::{
    LeakyReLU, LogSoftmax, ReLU, SiLU, Sigmoid, Softmax, Softplus, Tanh, ELU, GELU,
};
pub use attention::{AttentionArgs, MultiheadAttention};
pub use container::{ModuleList, Sequential};
pub use conv::{Conv1d, Conv2d, ConvTranspose2d};
pub use dropout::Dropout;
pub use embedding::Embedding;
pub use flatten::{Flatten, Identity};
pub use hooks::{ForwardHook, ForwardPreHook, FullBackwardHook, RemovableHandle};
pub use linear::Linear;
pub use loss::{CrossEntropyLoss, MSELoss};
pub use mlp::{GeluMlp, SwiGlu};
pub use module::{prefixed, AsAny, AsModule, Module, ModuleHooks};
pub use norm::{BatchNorm, BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm, RMSNorm};
pub use pixel_shuffle::{PixelShuffle, PixelUnshuffle};
pub use pool::{AdaptiveAvgPool2d, AdaptiveMaxPool2d, AvgPool1d, AvgPool2d, MaxPool1d, MaxPool2d};
pub use position::{
    apply_rotary, rope_inv_freq, sinusoidal_table, RotaryEmbedding, SinusoidalPositionalEncoding,
};
pub use rnn::{
    GRUCell, LSTMCell, Nonlinearity, RNNCell, RNNOptions, RecurrentWeights, GRU, LSTM, RNN,
};
pub use transformer::{
    Activation, DecoderMasks, TransformerDecoderLayer, TransformerEncoderLayer, TransformerOptions,
};
pub use upsample::{Upsample, UpsampleSize};

/// Functional forms of the layers and losses (`torch.nn.functional`).
pub mod functional {
    pub use super::embedding::embedding;
    pub use super::linear::linear;
    pub use crate::ops::dropout;
    pub use crate::ops::loss::{
        binary_cross_entropy, binary_cross_entropy_with_logits, cross_entropy, distillation_loss,
        huber_loss, kl_div, l1_loss, mse_loss, nll_loss, smooth_l1_loss,
    };
    pub use crate::ops::norm::{
        batch_norm, batch_norm_add_relu, batch_norm_relu, group_norm, layer_norm, rms_norm,
    };
    pub use crate::ops::{interpolate, InterpolateMode};
}
