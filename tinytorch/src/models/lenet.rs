//! LeNet-5 (LeCun et al. 1998) with the modern ReLU and max pooling.

use super::{conv, ImageShape};
use crate::error::{Error, Result};
use crate::nn::{Flatten, Linear, MaxPool2d, ReLU, Sequential};
use crate::ops::ConvPadding;

/// LeNet-5: Conv(c, 6, 5x5), ReLU, MaxPool 2, Conv(6, 16, 5x5), ReLU, MaxPool 2, Flatten,
/// Linear(16*5*5, 120), ReLU, Linear(120, 84), ReLU, Linear(84, classes). 28x28 inputs get
/// the customary padding of 2 on the first convolution so they reach the 5x5 feature maps a
/// 32x32 input reaches without it.
pub fn lenet5(input: ImageShape, num_classes: usize) -> Result<Sequential> {
    let pad = if input.height < 32 || input.width < 32 {
        (32usize.saturating_sub(input.height) / 2).max(32usize.saturating_sub(input.width) / 2)
    } else {
        0
    };
    // Spatial size after conv 5x5 (valid after padding), pool 2, conv 5x5, pool 2.
    let side = |n: usize| ((n + 2 * pad).saturating_sub(4) / 2).saturating_sub(4) / 2;
    let (h, w) = (side(input.height), side(input.width));
    if h == 0 || w == 0 {
        return Err(Error::invalid(
            "lenet5",
            format!(
                "input {}x{} is too small for LeNet-5",
                input.height, input.width
            ),
        ));
    }
    Ok(Sequential::new(vec![
        Box::new(conv(
            input.channels,
            6,
            5,
            1,
            ConvPadding::Explicit(pad, pad),
            true,
        )?),
        Box::new(ReLU::new()),
        Box::new(MaxPool2d::new([2, 2])),
        Box::new(conv(6, 16, 5, 1, ConvPadding::Valid, true)?),
        Box::new(ReLU::new()),
        Box::new(MaxPool2d::new([2, 2])),
        Box::new(Flatten::default()),
        Box::new(Linear::new(16 * h * w, 120, true)?),
        Box::new(ReLU::new()),
        Box::new(Linear::new(120, 84, true)?),
        Box::new(ReLU::new()),
        Box::new(Linear::new(84, num_classes, true)?),
    ]))
}
