//! The nn stack working together: a small CNN (Conv2d, BatchNorm2d, ReLU, MaxPool2d, global
//! average pooling, Linear) trained with fused cross-entropy and SGD + momentum on a synthetic
//! task that needs spatial features (is the bright blob in the left or right half?). The loss
//! must fall and the training accuracy must reach 90%.

mod common;
use common::{sgd_momentum, small_cnn};

use tinytorch::nn::functional::cross_entropy;
use tinytorch::nn::{Module, Reduction};
use tinytorch::ops::ConvPadding;
use tinytorch::optim::Optimizer;
use tinytorch::{manual_seed, DType, Device, Result, Tensor};

/// `n` 1x8x8 images: noise plus a 3x3 blob in the left or right half; label 0 = left, 1 = right.
fn dataset(n: usize) -> Result<(Tensor, Tensor)> {
    let mut pixels = Tensor::rand(&[n, 1, 8, 8], DType::F32, Device::Cpu)?
        .mul_scalar(0.3)?
        .to_vec::<f32>()?;
    let labels: Vec<i64> = (0..n).map(|i| (i % 2) as i64).collect();
    for (i, &label) in labels.iter().enumerate() {
        let (row, col) = (
            1 + (i / 2) % 4,
            if label == 0 { 1 } else { 4 } + (i / 8) % 2,
        );
        for r in row..row + 3 {
            for c in col..col + 3 {
                pixels[i * 64 + r * 8 + c] += 1.0;
            }
        }
    }
    Ok((
        Tensor::from_vec(pixels, &[n, 1, 8, 8])?,
        Tensor::from_vec(labels, &[n])?,
    ))
}

#[test]
fn small_cnn_learns_a_spatial_task() -> Result<()> {
    manual_seed(0);
    // Keep the left/right layout: pool to 1x2 rather than to one value.
    let model = small_cnn(ConvPadding::Same, [1, 2], 2)?;
    let mut opt = sgd_momentum(model.parameters(), 0.1, 0.9)?;
    let (x, y) = dataset(64)?;
    let loss_of = |logits: &Tensor| cross_entropy(logits, &y, None, -100, Reduction::Mean, 0.0);
    let first = loss_of(&model.forward(&x)?)?.item::<f32>()?;
    for _ in 0..40 {
        opt.zero_grad();
        let loss = loss_of(&model.forward(&x)?)?;
        loss.backward()?;
        opt.step()?;
    }
    let logits = model.forward(&x)?;
    let last = loss_of(&logits)?.item::<f32>()?;
    let correct = logits
        .argmax(Some(1), false)?
        .eq(&y)?
        .to_dtype(DType::F32)?
        .mean_all()?
        .item::<f32>()?;
    assert!(last < first * 0.5, "loss {first} -> {last}");
    assert!(correct >= 0.9, "training accuracy {correct}");
    Ok(())
}
