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
    lenet5_sized(input, num_classes, LENET5_WIDTHS)
}

/// LeNet-5's hidden widths: the two convolutions' channels and the two hidden Linear layers'
/// features.
pub const LENET5_WIDTHS: [usize; 4] = [6, 16, 120, 84];

/// The spatial size of LeNet-5's last feature maps (each channel's features in the first
/// Linear layer) and the padding of its first convolution, for `input`.
pub(super) fn lenet5_geometry(input: ImageShape) -> (usize, usize, usize) {
    let pad = if input.height < 32 || input.width < 32 {
        (32usize.saturating_sub(input.height) / 2).max(32usize.saturating_sub(input.width) / 2)
    } else {
        0
    };
    // Spatial size after conv 5x5 (valid after padding), pool 2, conv 5x5, pool 2.
    let side = |n: usize| ((n + 2 * pad).saturating_sub(4) / 2).saturating_sub(4) / 2;
    (side(input.height), side(input.width), pad)
}

/// LeNet-5 with other hidden widths `[conv1, conv2, fc1, fc2]` (a structurally pruned one).
pub fn lenet5_sized(
    input: ImageShape,
    num_classes: usize,
    widths: [usize; 4],
) -> Result<Sequential> {
    let (h, w, pad) = lenet5_geometry(input);
    let [c1, c2, f1, f2] = widths;
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
            c1,
            5,
            1,
            ConvPadding::Explicit(pad, pad),
            true,
        )?),
        Box::new(ReLU::new()),
        Box::new(MaxPool2d::new([2, 2])),
        Box::new(conv(c1, c2, 5, 1, ConvPadding::Valid, true)?),
        Box::new(ReLU::new()),
        Box::new(MaxPool2d::new([2, 2])),
        Box::new(Flatten::default()),
        Box::new(Linear::new(c2 * h * w, f1, true)?),
        Box::new(ReLU::new()),
        Box::new(Linear::new(f1, f2, true)?),
        Box::new(ReLU::new()),
        Box::new(Linear::new(f2, num_classes, true)?),
    ]))
}
