//! The CIFAR ResNet-20 of He et al. 2016 (section 4.2): a 3x3 stem, three stages of three
//! basic blocks with 16, 32 and 64 channels (the last two start with stride 2), global average
//! pooling and a linear classifier. Shortcuts that change shape use the paper's option A:
//! subsample by 2 and pad the new channels with zeros, so they have no parameters. Names
//! follow the widely used PyTorch port (`conv1`, `bn1`, `layer1.0.conv1`, ..., `linear`).

use super::conv;
use crate::error::Result;
use crate::nn::init::{kaiming_normal_, FanMode};
use crate::nn::{prefixed, BatchNorm2d, Conv2d, Linear, Module};
use crate::ops::{ConvPadding, PadMode};
use crate::tensor::Tensor;

/// Two 3x3 convolutions with batch norm and a residual connection.
pub struct BasicBlock {
    conv1: Conv2d,
    bn1: BatchNorm2d,
    conv2: Conv2d,
    bn2: BatchNorm2d,
    /// Channels added by the option-A shortcut on each side (0 when shapes match).
    pad_channels: usize,
    stride: usize,
}

impl BasicBlock {
    /// A block from `in_planes` to `planes` channels whose first convolution has `stride`.
    pub fn new(in_planes: usize, planes: usize, stride: usize) -> Result<BasicBlock> {
        let same = ConvPadding::Explicit(1, 1);
        Ok(BasicBlock {
            conv1: kaiming(conv(in_planes, planes, 3, stride, same, false)?)?,
            bn1: BatchNorm2d::new(planes)?,
            conv2: kaiming(conv(planes, planes, 3, 1, same, false)?)?,
            bn2: BatchNorm2d::new(planes)?,
            pad_channels: (planes - in_planes) / 2,
            stride,
        })
    }

    fn shortcut(&self, x: &Tensor) -> Result<Tensor> {
        if self.stride == 1 && self.pad_channels == 0 {
            return Ok(x.clone());
        }
        let s = self.stride;
        let sub = x.slice(2, None, None, s)?.slice(3, None, None, s)?;
        let p = self.pad_channels as isize;
        sub.pad(&[0, 0, 0, 0, p, p], PadMode::Constant(0.0))
    }
}

impl Module for BasicBlock {
    /// x: (N, in_planes, H, W) -> (N, planes, H / stride, W / stride).
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        // out: (N, planes, H / stride, W / stride) after each convolution.
        let out = self.bn1.call_relu(&self.conv1.call(x)?)?;
        // The shortcut brings x to out's shape (subsampled, channels zero-padded); the
        // second batch norm, the sum and the ReLU are one op.
        self.bn2
            .call_add_relu(&self.conv2.call(&out)?, &self.shortcut(x)?)
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        self.named_children()
            .into_iter()
            .flat_map(|(name, m)| prefixed(&name, m.named_parameters()))
            .collect()
    }

    fn named_buffers(&self) -> Vec<(String, Tensor)> {
        self.named_children()
            .into_iter()
            .flat_map(|(name, m)| prefixed(&name, m.named_buffers()))
            .collect()
    }

    fn set_training(&mut self, training: bool) {
        self.bn1.set_training(training);
        self.bn2.set_training(training);
    }

    fn is_training(&self) -> bool {
        self.bn1.is_training()
    }

    fn named_children(&self) -> Vec<(String, &dyn Module)> {
        vec![
            ("conv1".into(), &self.conv1),
            ("bn1".into(), &self.bn1),
            ("conv2".into(), &self.conv2),
            ("bn2".into(), &self.bn2),
        ]
    }
}

/// A CIFAR-style residual network (`resnet20` has three blocks per stage).
pub struct ResNet {
    conv1: Conv2d,
    bn1: BatchNorm2d,
    /// `layer1`, `layer2`, `layer3`: the blocks of each stage.
    stages: Vec<Vec<BasicBlock>>,
    linear: Linear,
}

impl ResNet {
    /// ResNet-20 for `in_channels`-channel images of any size of at least 4x4.
    pub fn resnet20(in_channels: usize, num_classes: usize) -> Result<ResNet> {
        Self::new(in_channels, num_classes, 3)
    }

    /// A ResNet with `blocks` basic blocks per stage (depth 6 * blocks + 2).
    pub fn new(in_channels: usize, num_classes: usize, blocks: usize) -> Result<ResNet> {
        let mut stages = Vec::new();
        let mut in_planes = 16;
        for (planes, first_stride) in [(16, 1), (32, 2), (64, 2)] {
            let mut stage = Vec::new();
            for b in 0..blocks {
                let stride = if b == 0 { first_stride } else { 1 };
                stage.push(BasicBlock::new(in_planes, planes, stride)?);
                in_planes = planes;
            }
            stages.push(stage);
        }
        let linear = Linear::new(64, num_classes, true)?;
        kaiming_normal_(&linear.weight, 0.0, FanMode::FanIn, "leaky_relu")?;
        Ok(ResNet {
            conv1: kaiming(conv(
                in_channels,
                16,
                3,
                1,
                ConvPadding::Explicit(1, 1),
                false,
            )?)?,
            bn1: BatchNorm2d::new(16)?,
            stages,
            linear,
        })
    }

    fn named(&self, buffers: bool) -> Vec<(String, Tensor)> {
        let of = |m: &dyn Module| {
            if buffers {
                m.named_buffers()
            } else {
                m.named_parameters()
            }
        };
        let mut out = prefixed("conv1", of(&self.conv1));
        out.extend(prefixed("bn1", of(&self.bn1)));
        for (s, stage) in self.stages.iter().enumerate() {
            for (b, block) in stage.iter().enumerate() {
                out.extend(prefixed(&format!("layer{}.{b}", s + 1), of(block)));
            }
        }
        out.extend(prefixed("linear", of(&self.linear)));
        out
    }
}

impl Module for ResNet {
    /// x: (N, C, H, W) -> logits (N, classes).
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        // out: (N, 16, H, W), then (N, 32, H/2, W/2) and (N, 64, H/4, W/4) through the stages.
        let mut out = self.bn1.call_relu(&self.conv1.call(x)?)?;
        for block in self.stages.iter().flatten() {
            out = block.call(&out)?;
        }
        // pooled: (N, 64).
        let pooled = out.adaptive_avg_pool2d([1, 1])?.flatten(1, -1)?;
        self.linear.call(&pooled)
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        self.named(false)
    }

    fn named_buffers(&self) -> Vec<(String, Tensor)> {
        self.named(true)
    }

    fn set_training(&mut self, training: bool) {
        self.bn1.set_training(training);
        for block in self.stages.iter_mut().flatten() {
            block.set_training(training);
        }
    }

    fn is_training(&self) -> bool {
        self.bn1.is_training()
    }

    /// `conv1`, `bn1`, the blocks as `layer<s>.<b>` (PyTorch has a `Sequential` per stage;
    /// here the blocks are named directly, so the names of `named_modules` and of the
    /// parameters are PyTorch's, without the stage containers), `linear`.
    fn named_children(&self) -> Vec<(String, &dyn Module)> {
        let mut out: Vec<(String, &dyn Module)> =
            vec![("conv1".into(), &self.conv1), ("bn1".into(), &self.bn1)];
        for (s, stage) in self.stages.iter().enumerate() {
            for (b, block) in stage.iter().enumerate() {
                out.push((format!("layer{}.{b}", s + 1), block));
            }
        }
        out.push(("linear".into(), &self.linear));
        out
    }
}

/// The port's `_weights_init`: Kaiming-normal convolution weights (fan-in, gain sqrt 2).
fn kaiming(c: Conv2d) -> Result<Conv2d> {
    kaiming_normal_(&c.weight, 0.0, FanMode::FanIn, "leaky_relu")?;
    Ok(c)
}
