//! The image classifiers the `tinytorch` command trains: an MLP, the seed CNN, LeNet-5 and the
//! CIFAR ResNet-20. Parameter names equal the state-dict keys of the PyTorch definitions in
//! `scripts/torch_models.py`, so weights move between the two frameworks unchanged. And the
//! language model of `tinytorch train-lm`: a GPT in nanoGPT's layout (`gpt`). Pretrained
//! Hugging Face models: BERT encoders (`bert`) and Llama-style language models (`llama`).

pub mod bert;
pub mod gpt;
mod lenet;
pub mod llama;
mod resnet;

pub use lenet::lenet5;
pub use resnet::{BasicBlock, ResNet};

use crate::error::{Error, Result};
use crate::nn::functional::cross_entropy;
use crate::nn::Reduction;
use crate::nn::{AdaptiveAvgPool2d, Conv2d, Flatten, Linear, Module, ReLU, Sequential};
use crate::ops::ConvPadding;
use crate::tensor::Tensor;
use std::fmt;
use std::str::FromStr;

/// The shape of the images a model is built for: channels, height, width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageShape {
    /// Colour channels (1 for Fashion-MNIST, 3 for CIFAR-10).
    pub channels: usize,
    /// Height in pixels.
    pub height: usize,
    /// Width in pixels.
    pub width: usize,
}

impl ImageShape {
    /// Fashion-MNIST's 1x28x28.
    pub const MNIST: ImageShape = ImageShape {
        channels: 1,
        height: 28,
        width: 28,
    };
    /// CIFAR-10's 3x32x32.
    pub const CIFAR: ImageShape = ImageShape {
        channels: 3,
        height: 32,
        width: 32,
    };
}

/// The models `tinytorch train --model` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelKind {
    /// `mlp`: Flatten, Linear(pixels, 128), ReLU, Linear(128, classes).
    Mlp,
    /// `seed-cnn`: two 5x5 convolutions (48 and 96 channels), global average pooling and a
    /// 96-128-classes MLP head.
    SeedCnn,
    /// `lenet5`: LeCun et al. 1998 with ReLU and max pooling.
    LeNet5,
    /// `resnet20`: He et al. 2016's CIFAR ResNet (3x3 basic blocks, 16-32-64 channels).
    ResNet20,
}

impl ModelKind {
    /// Every kind, in the order the help text lists them.
    pub const ALL: [ModelKind; 4] = [
        ModelKind::Mlp,
        ModelKind::SeedCnn,
        ModelKind::LeNet5,
        ModelKind::ResNet20,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Mlp => "mlp",
            ModelKind::SeedCnn => "seed-cnn",
            ModelKind::LeNet5 => "lenet5",
            ModelKind::ResNet20 => "resnet20",
        }
    }

    /// A freshly initialised model (PyTorch's default initialisation, drawn from the global
    /// generator) for `input` images and `num_classes` classes.
    pub fn build(self, input: ImageShape, num_classes: usize) -> Result<Box<dyn Module>> {
        Ok(match self {
            ModelKind::Mlp => Box::new(mlp(input, num_classes)?),
            ModelKind::SeedCnn => Box::new(seed_cnn(input, num_classes)?),
            ModelKind::LeNet5 => Box::new(lenet5(input, num_classes)?),
            ModelKind::ResNet20 => Box::new(ResNet::resnet20(input.channels, num_classes)?),
        })
    }
}

impl fmt::Display for ModelKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ModelKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        ModelKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = ModelKind::ALL.iter().map(|k| k.name()).collect();
                Error::invalid(
                    "model",
                    format!("unknown model '{s}', expected one of {}", names.join(", ")),
                )
            })
    }
}

/// Mean cross-entropy of language-model `logits` `(B, T, V)` against `targets` `(B, T)`,
/// position by position (`-100` is ignored): the loss of GPT and Llama.
pub(crate) fn token_cross_entropy(logits: &Tensor, targets: &Tensor) -> Result<Tensor> {
    let v = logits.shape()[logits.ndim() - 1] as isize;
    cross_entropy(
        &logits.reshape(&[-1, v])?,
        &targets.reshape(&[-1])?,
        None,
        -100,
        Reduction::Mean,
        0.0,
    )
}

/// `nn.Sequential(nn.Flatten(), nn.Linear(c*h*w, 128), nn.ReLU(), nn.Linear(128, classes))`.
pub fn mlp(input: ImageShape, num_classes: usize) -> Result<Sequential> {
    let pixels = input.channels * input.height * input.width;
    Ok(Sequential::new(vec![
        Box::new(Flatten::default()),
        Box::new(Linear::new(pixels, 128, true)?),
        Box::new(ReLU::new()),
        Box::new(Linear::new(128, num_classes, true)?),
    ]))
}

/// The seed CNN: Conv(c, 48, 5x5, padding 2), ReLU, Conv(48, 96, 5x5, padding 2), ReLU, global
/// average pool, Flatten, Linear(96, 128), ReLU, Linear(128, classes). Any image size works
/// because of the global pooling.
pub fn seed_cnn(input: ImageShape, num_classes: usize) -> Result<Sequential> {
    let pad = ConvPadding::Explicit(2, 2);
    Ok(Sequential::new(vec![
        Box::new(conv(input.channels, 48, 5, 1, pad, true)?),
        Box::new(ReLU::new()),
        Box::new(conv(48, 96, 5, 1, pad, true)?),
        Box::new(ReLU::new()),
        Box::new(AdaptiveAvgPool2d::new([1, 1])),
        Box::new(Flatten::default()),
        Box::new(Linear::new(96, 128, true)?),
        Box::new(ReLU::new()),
        Box::new(Linear::new(128, num_classes, true)?),
    ]))
}

/// A square convolution with dilation 1 and one group.
pub(crate) fn conv(
    cin: usize,
    cout: usize,
    k: usize,
    stride: usize,
    padding: ConvPadding,
    bias: bool,
) -> Result<Conv2d> {
    Conv2d::new(
        cin,
        cout,
        [k, k],
        [stride, stride],
        padding,
        [1, 1],
        1,
        bias,
    )
}
