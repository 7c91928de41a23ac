//! Pooling layers (`torch.nn.MaxPool1d/2d`, `AvgPool1d/2d`, `AdaptiveAvgPool2d`,
//! `AdaptiveMaxPool2d`); no parameters.

use crate::error::Result;
use crate::nn::Module;
use crate::tensor::Tensor;

/// `torch.nn.MaxPool2d(kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False)`.
pub struct MaxPool2d {
    /// Window size.
    pub kernel: [usize; 2],
    /// Step; `None` means the kernel size.
    pub stride: Option<[usize; 2]>,
    /// Implicit `-inf` padding.
    pub padding: [usize; 2],
    /// Window dilation.
    pub dilation: [usize; 2],
    /// Round the output size up.
    pub ceil_mode: bool,
}

impl MaxPool2d {
    /// A max pool with PyTorch's defaults (stride = kernel, no padding, dilation 1).
    pub fn new(kernel: [usize; 2]) -> MaxPool2d {
        MaxPool2d {
            kernel,
            stride: None,
            padding: [0, 0],
            dilation: [1, 1],
            ceil_mode: false,
        }
    }
}

impl Module for MaxPool2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.max_pool2d(
            self.kernel,
            self.stride,
            self.padding,
            self.dilation,
            self.ceil_mode,
        )
    }
}

/// `torch.nn.AvgPool2d(kernel_size, stride=None, padding=0, count_include_pad=True)`.
pub struct AvgPool2d {
    /// Window size.
    pub kernel: [usize; 2],
    /// Step; `None` means the kernel size.
    pub stride: Option<[usize; 2]>,
    /// Implicit zero padding.
    pub padding: [usize; 2],
    /// Count the padding in the divisor.
    pub count_include_pad: bool,
}

impl AvgPool2d {
    /// An average pool with PyTorch's defaults.
    pub fn new(kernel: [usize; 2]) -> AvgPool2d {
        AvgPool2d {
            kernel,
            stride: None,
            padding: [0, 0],
            count_include_pad: true,
        }
    }
}

impl Module for AvgPool2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.avg_pool2d(
            self.kernel,
            self.stride,
            self.padding,
            self.count_include_pad,
        )
    }
}

/// `torch.nn.AdaptiveAvgPool2d(output_size)`.
pub struct AdaptiveAvgPool2d {
    /// Output `(oh, ow)`.
    pub output_size: [usize; 2],
}

impl AdaptiveAvgPool2d {
    /// Pool to `output_size`; `[1, 1]` is global average pooling.
    pub fn new(output_size: [usize; 2]) -> AdaptiveAvgPool2d {
        AdaptiveAvgPool2d { output_size }
    }
}

impl Module for AdaptiveAvgPool2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.adaptive_avg_pool2d(self.output_size)
    }
}

/// `torch.nn.MaxPool1d(kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False)`.
pub struct MaxPool1d {
    /// Window size.
    pub kernel: usize,
    /// Step; `None` means the kernel size.
    pub stride: Option<usize>,
    /// Implicit `-inf` padding.
    pub padding: usize,
    /// Window dilation.
    pub dilation: usize,
    /// Round the output size up.
    pub ceil_mode: bool,
}

impl MaxPool1d {
    /// A max pool with PyTorch's defaults (stride = kernel, no padding, dilation 1).
    pub fn new(kernel: usize) -> MaxPool1d {
        MaxPool1d {
            kernel,
            stride: None,
            padding: 0,
            dilation: 1,
            ceil_mode: false,
        }
    }
}

impl Module for MaxPool1d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.max_pool1d(
            self.kernel,
            self.stride,
            self.padding,
            self.dilation,
            self.ceil_mode,
        )
    }
}

/// `torch.nn.AvgPool1d(kernel_size, stride=None, padding=0, count_include_pad=True)`.
pub struct AvgPool1d {
    /// Window size.
    pub kernel: usize,
    /// Step; `None` means the kernel size.
    pub stride: Option<usize>,
    /// Implicit zero padding.
    pub padding: usize,
    /// Count the padding in the divisor.
    pub count_include_pad: bool,
}

impl AvgPool1d {
    /// An average pool with PyTorch's defaults.
    pub fn new(kernel: usize) -> AvgPool1d {
        AvgPool1d {
            kernel,
            stride: None,
            padding: 0,
            count_include_pad: true,
        }
    }
}

impl Module for AvgPool1d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.avg_pool1d(
            self.kernel,
            self.stride,
            self.padding,
            self.count_include_pad,
        )
    }
}

/// `torch.nn.AdaptiveMaxPool2d(output_size)` (without `return_indices`).
pub struct AdaptiveMaxPool2d {
    /// Output `(oh, ow)`.
    pub output_size: [usize; 2],
}

impl AdaptiveMaxPool2d {
    /// Pool to `output_size`; `[1, 1]` is global max pooling.
    pub fn new(output_size: [usize; 2]) -> AdaptiveMaxPool2d {
        AdaptiveMaxPool2d { output_size }
    }
}

impl Module for AdaptiveMaxPool2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.adaptive_max_pool2d(self.output_size)
    }
}
