//! Resampling and the pools and shuffles of `nn.functional` beyond the op table's PyTorch
//! fixtures: the modules against their functions, interpolate's options and shape rules,
//! bigger gradchecks, and every documented error naming the op and the values at fault.

use tinytorch::autograd::gradcheck::gradcheck;
use tinytorch::nn::functional::{interpolate, InterpolateMode};
use tinytorch::nn::{
    AdaptiveMaxPool2d, AvgPool1d, MaxPool1d, Module, PixelShuffle, PixelUnshuffle, Upsample,
    UpsampleSize,
};
use tinytorch::{manual_seed, DType, Device, Tensor};

fn randn(shape: &[usize]) -> Tensor {
    Tensor::randn(shape, DType::F64, Device::Cpu).unwrap()
}

fn same(a: &Tensor, b: &Tensor) -> bool {
    a.shape() == b.shape() && a.to_vec_f64().unwrap() == b.to_vec_f64().unwrap()
}

fn message(r: tinytorch::Result<Tensor>) -> String {
    match r {
        Err(e) => e.to_string(),
        Ok(t) => panic!("expected an error, got a tensor of shape {:?}", t.shape()),
    }
}

#[test]
fn modules_run_their_functions() {
    manual_seed(4);
    let x = randn(&[2, 8, 6, 4]);
    let seq = randn(&[2, 3, 9]);
    assert!(same(
        &PixelShuffle::new(2).forward(&x).unwrap(),
        &x.pixel_shuffle(2).unwrap()
    ));
    let back = PixelUnshuffle::new(2)
        .forward(&x.pixel_shuffle(2).unwrap())
        .unwrap();
    assert!(same(&back, &x));
    let mut mp = MaxPool1d::new(3);
    mp.stride = Some(2);
    mp.padding = 1;
    mp.ceil_mode = true;
    assert!(same(
        &mp.forward(&seq).unwrap(),
        &seq.max_pool1d(3, Some(2), 1, 1, true).unwrap()
    ));
    let ap = AvgPool1d::new(2);
    assert!(same(
        &ap.forward(&seq).unwrap(),
        &seq.avg_pool1d(2, None, 0, true).unwrap()
    ));
    assert!(same(
        &AdaptiveMaxPool2d::new([4, 3]).forward(&x).unwrap(),
        &x.adaptive_max_pool2d([4, 3]).unwrap()
    ));
    let mut up = Upsample::new(UpsampleSize::Scale(vec![1.5]), InterpolateMode::Bilinear);
    up.align_corners = Some(true);
    let y = up.forward(&x).unwrap();
    assert_eq!(y.shape(), &[2, 8, 9, 6]);
    let want = interpolate(
        &x,
        None,
        Some(&[1.5, 1.5]),
        InterpolateMode::Bilinear,
        Some(true),
        None,
    )
    .unwrap();
    assert!(same(&y, &want));
    assert!(up.named_parameters().is_empty());
}

#[test]
fn interpolate_shapes_and_corner_values() {
    let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[1, 1, 2, 2]).unwrap();
    // Nearest by 2 repeats each pixel in a 2x2 block.
    let n = interpolate(&x, None, Some(&[2.0]), InterpolateMode::Nearest, None, None).unwrap();
    assert_eq!(
        n.to_vec_f64().unwrap(),
        [1., 1., 2., 2., 1., 1., 2., 2., 3., 3., 4., 4., 3., 3., 4., 4.]
    );
    // align_corners keeps the corners; the centre is the mean.
    let b = interpolate(
        &x,
        Some(&[3]),
        None,
        InterpolateMode::Bilinear,
        Some(true),
        None,
    )
    .unwrap();
    assert_eq!(
        b.to_vec_f64().unwrap(),
        [1., 1.5, 2., 2., 2.5, 3., 3., 3.5, 4.]
    );
    // scale_factor sizes: floor(in * scale).
    let y = interpolate(
        &randn(&[1, 2, 5, 7]),
        None,
        Some(&[1.7, 0.5]),
        InterpolateMode::Nearest,
        None,
        None,
    )
    .unwrap();
    assert_eq!(y.shape(), &[1, 2, 8, 3]);
    // Nearest of 1 and 3 spatial dims.
    let y = interpolate(
        &randn(&[2, 3, 4]),
        Some(&[7]),
        None,
        InterpolateMode::Nearest,
        None,
        None,
    )
    .unwrap();
    assert_eq!(y.shape(), &[2, 3, 7]);
    let y = interpolate(
        &randn(&[1, 1, 2, 3, 4]),
        Some(&[3, 3, 3]),
        None,
        InterpolateMode::NearestExact,
        None,
        None,
    )
    .unwrap();
    assert_eq!(y.shape(), &[1, 1, 3, 3, 3]);
}

#[test]
fn gradients_pass_gradcheck() {
    manual_seed(5);
    let x = [randn(&[2, 2, 5, 4])];
    for (mode, size, ac) in [
        (InterpolateMode::Bilinear, [7, 3], Some(false)),
        (InterpolateMode::Bilinear, [3, 9], Some(true)),
        (InterpolateMode::Nearest, [11, 3], None),
    ] {
        gradcheck(
            |t| interpolate(&t[0], Some(&size), None, mode, ac, None),
            &x,
            1e-6,
            1e-7,
            1e-5,
        )
        .unwrap();
    }
    let planes = [randn(&[2, 3, 7, 5])];
    gradcheck(
        |t| t[0].adaptive_max_pool2d([3, 4]),
        &planes,
        1e-6,
        1e-7,
        1e-5,
    )
    .unwrap();
    gradcheck(
        |t| t[0].max_pool1d(3, Some(2), 1, 2, true),
        &[randn(&[2, 3, 11])],
        1e-6,
        1e-7,
        1e-5,
    )
    .unwrap();
}

#[test]
fn bad_arguments_are_errors_naming_the_values() {
    let img = randn(&[1, 4, 3, 4]);
    let m = message(img.pixel_shuffle(3));
    assert!(
        m.starts_with("pixel_shuffle") && m.contains("=4") && m.contains(" 9"),
        "{m}"
    );
    let m = message(img.pixel_shuffle(0));
    assert!(m.contains("positive upscale_factor"), "{m}");
    let m = message(randn(&[4, 4]).pixel_shuffle(2));
    assert!(
        m.contains("at least 3 dimensions") && m.contains("2 dimension"),
        "{m}"
    );
    let m = message(img.pixel_unshuffle(2));
    assert!(
        m.starts_with("pixel_unshuffle") && m.contains("height") && m.contains("=3"),
        "{m}"
    );
    let m = message(interpolate(
        &img,
        None,
        Some(&[2.0]),
        InterpolateMode::Nearest,
        Some(false),
        None,
    ));
    assert!(
        m.starts_with("interpolate") && m.contains("align_corners"),
        "{m}"
    );
    let m = message(interpolate(
        &img,
        Some(&[2]),
        Some(&[2.0]),
        InterpolateMode::Nearest,
        None,
        None,
    ));
    assert!(m.contains("only one of size or scale_factor"), "{m}");
    let m = message(interpolate(
        &img,
        None,
        None,
        InterpolateMode::Nearest,
        None,
        None,
    ));
    assert!(m.contains("either size or scale_factor"), "{m}");
    let m = message(interpolate(
        &img,
        Some(&[2, 3, 4]),
        None,
        InterpolateMode::Nearest,
        None,
        None,
    ));
    assert!(
        m.contains("[2, 3, 4]") && m.contains("(2 spatial dims)"),
        "{m}"
    );
    let m = message(interpolate(
        &img,
        None,
        Some(&[0.2]),
        InterpolateMode::Bilinear,
        None,
        None,
    ));
    assert!(m.contains("greater than 0") && m.contains("[0, 0]"), "{m}");
    let m = message(interpolate(
        &randn(&[1, 2, 3]),
        Some(&[4]),
        None,
        InterpolateMode::Bilinear,
        None,
        None,
    ));
    assert!(m.contains("bilinear") && m.contains("[1, 2, 3]"), "{m}");
    let m = message(interpolate(
        &img.to_dtype(DType::I64).unwrap(),
        Some(&[4]),
        None,
        InterpolateMode::Nearest,
        None,
        None,
    ));
    assert!(m.contains("floating-point"), "{m}");
    let m = InterpolateMode::parse("bicubic").unwrap_err().to_string();
    assert!(m.contains("bicubic"), "{m}");
    let seq = randn(&[1, 2, 5]);
    let m = message(seq.max_pool1d(3, None, 2, 1, false));
    assert!(
        m.starts_with("max_pool1d") && m.contains("padding 2") && m.contains("kernel_size 3"),
        "{m}"
    );
    let m = message(seq.avg_pool1d(0, None, 0, true));
    assert!(
        m.starts_with("avg_pool1d") && m.contains("kernel_size"),
        "{m}"
    );
    let m = message(randn(&[5]).max_pool1d(2, None, 0, 1, false));
    assert!(m.contains("[5]"), "{m}");
    let m = message(seq.max_pool1d(7, None, 0, 1, false));
    assert!(m.starts_with("max_pool1d"), "{m}");
    let m = message(randn(&[1, 2, 0, 3]).adaptive_max_pool2d([2, 2]));
    assert!(
        m.starts_with("adaptive_max_pool2d") && m.contains("[0, 3]"),
        "{m}"
    );
}
