//! The image classifiers the `tinytorch` command trains: an MLP, the seed CNN, LeNet-5 and the
//! CIFAR ResNet-20. Parameter names equal the state-dict keys of the PyTorch definitions in
//! `scripts/twins/torch_models.py`, so weights move between the two frameworks unchanged. And the
//! language model of `tinytorch train-lm`: a GPT in nanoGPT's layout (`gpt`). Pretrained
//! Hugging Face models: BERT encoders (`bert`) and Llama-style language models (`llama`).

pub mod bert;
pub mod gpt;
mod lenet;
pub mod llama;
mod resnet;

pub use lenet::{lenet5, lenet5_sized, LENET5_WIDTHS};
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

/// A layer whose output channels (features) structured pruning may remove, and the layer that
/// reads them: removing channel `c` removes the reader's input features
/// `c * per_channel .. (c + 1) * per_channel` (more than one where a flatten follows a
/// convolution).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelLink {
    /// The layer's state-dict name (`"0"`).
    pub layer: &'static str,
    /// The reader's state-dict name.
    pub reader: &'static str,
    /// The reader's input features per channel.
    pub per_channel: usize,
}

impl ModelKind {
    /// The hidden widths `build` gives the model (one per [`ChannelLink`]), or `None` for a
    /// model whose widths cannot change on their own (ResNet-20's residual additions tie
    /// them together).
    pub fn default_widths(self) -> Option<Vec<usize>> {
        match self {
            ModelKind::Mlp => Some(vec![128]),
            ModelKind::SeedCnn => Some(SEED_CNN_WIDTHS.to_vec()),
            ModelKind::LeNet5 => Some(LENET5_WIDTHS.to_vec()),
            ModelKind::ResNet20 => None,
        }
    }

    /// The layers whose widths [`ModelKind::default_widths`] lists, in that order, with their
    /// readers (for `input` images).
    pub fn channel_links(self, input: ImageShape) -> Option<Vec<ChannelLink>> {
        let link = |layer, reader, per_channel| ChannelLink {
            layer,
            reader,
            per_channel,
        };
        match self {
            ModelKind::Mlp => Some(vec![link("1", "3", 1)]),
            ModelKind::SeedCnn => Some(vec![
                link("0", "2", 1),
                link("2", "6", 1),
                link("6", "8", 1),
            ]),
            ModelKind::LeNet5 => {
                let (h, w, _) = lenet::lenet5_geometry(input);
                Some(vec![
                    link("0", "3", 1),
                    link("3", "7", h * w),
                    link("7", "9", 1),
                    link("9", "11", 1),
                ])
            }
            ModelKind::ResNet20 => None,
        }
    }

    /// [`ModelKind::build`] with other hidden widths (`None`: the defaults), e.g. a model whose
    /// channels structured pruning removed.
    pub fn build_with_widths(
        self,
        input: ImageShape,
        num_classes: usize,
        widths: Option<&[usize]>,
    ) -> Result<Box<dyn Module>> {
        let Some(widths) = widths else {
            return self.build(input, num_classes);
        };
        let want = self.default_widths().map_or(0, |w| w.len());
        if want == 0 || widths.len() != want || widths.contains(&0) {
            return Err(Error::invalid(
                "model",
                format!(
                    "{self} takes {want} positive hidden widths{}, got {widths:?}",
                    if want == 0 { " (none can change)" } else { "" }
                ),
            ));
        }
        Ok(match self {
            ModelKind::Mlp => Box::new(mlp_sized(input, num_classes, widths[0])?),
            ModelKind::SeedCnn => Box::new(seed_cnn_sized(
                input,
                num_classes,
                [widths[0], widths[1], widths[2]],
            )?),
            ModelKind::LeNet5 => Box::new(lenet5_sized(
                input,
                num_classes,
                [widths[0], widths[1], widths[2], widths[3]],
            )?),
            ModelKind::ResNet20 => unreachable!("no widths to change (checked above)"),
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
    mlp_sized(input, num_classes, 128)
}

/// The MLP with `hidden` hidden features.
pub fn mlp_sized(input: ImageShape, num_classes: usize, hidden: usize) -> Result<Sequential> {
    let pixels = input.channels * input.height * input.width;
    Ok(Sequential::new(vec![
        Box::new(Flatten::default()),
        Box::new(Linear::new(pixels, hidden, true)?),
        Box::new(ReLU::new()),
        Box::new(Linear::new(hidden, num_classes, true)?),
    ]))
}

/// The seed CNN: Conv(c, 48, 5x5, padding 2), ReLU, Conv(48, 96, 5x5, padding 2), ReLU, global
/// average pool, Flatten, Linear(96, 128), ReLU, Linear(128, classes). Any image size works
/// because of the global pooling.
pub fn seed_cnn(input: ImageShape, num_classes: usize) -> Result<Sequential> {
    seed_cnn_sized(input, num_classes, SEED_CNN_WIDTHS)
}

/// The seed CNN's hidden widths: the two convolutions' channels and the hidden features.
pub const SEED_CNN_WIDTHS: [usize; 3] = [48, 96, 128];

/// The seed CNN with other hidden widths `[conv1, conv2, fc]` (a structurally pruned one).
pub fn seed_cnn_sized(
    input: ImageShape,
    num_classes: usize,
    widths: [usize; 3],
) -> Result<Sequential> {
    let [c1, c2, f] = widths;
    let pad = ConvPadding::Explicit(2, 2);
    Ok(Sequential::new(vec![
        Box::new(conv(input.channels, c1, 5, 1, pad, true)?),
        Box::new(ReLU::new()),
        Box::new(conv(c1, c2, 5, 1, pad, true)?),
        Box::new(ReLU::new()),
        Box::new(AdaptiveAvgPool2d::new([1, 1])),
        Box::new(Flatten::default()),
        Box::new(Linear::new(c2, f, true)?),
        Box::new(ReLU::new()),
        Box::new(Linear::new(f, num_classes, true)?),
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
