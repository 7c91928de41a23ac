//! `Display` against PyTorch's `repr` (strings printed by PyTorch 2.x with default print options).

use tinytorch::{DType, Device, Result, Tensor};

#[test]
fn two_by_two_integral() -> Result<()> {
    let t = Tensor::from_vec(vec![1.0f32, 2., 3., 4.], &[2, 2])?;
    assert_eq!(format!("{t}"), "tensor([[1., 2.],\n        [3., 4.]])");
    Ok(())
}

#[test]
fn fractional() -> Result<()> {
    let t = Tensor::from_vec(vec![1.0f32, 2.5, 3., -4.], &[2, 2])?;
    assert_eq!(
        format!("{t}"),
        "tensor([[ 1.0000,  2.5000],\n        [ 3.0000, -4.0000]])"
    );
    Ok(())
}

#[test]
fn float64() -> Result<()> {
    let t = Tensor::from_vec(vec![1.5f64, -2.25], &[2])?;
    assert_eq!(
        format!("{t}"),
        "tensor([ 1.5000, -2.2500], dtype=torch.float64)"
    );
    Ok(())
}

#[test]
fn sci_small() -> Result<()> {
    let t = Tensor::from_vec(vec![1e-5f32, 1.0], &[2])?;
    assert_eq!(format!("{t}"), "tensor([1.0000e-05, 1.0000e+00])");
    Ok(())
}

#[test]
fn sci_large_int() -> Result<()> {
    let t = Tensor::from_vec(vec![1e9f32, 1.0], &[2])?;
    assert_eq!(format!("{t}"), "tensor([1.0000e+09, 1.0000e+00])");
    Ok(())
}

#[test]
fn sci_ratio() -> Result<()> {
    let t = Tensor::from_vec(vec![123456.0f64, 0.001], &[2])?;
    assert_eq!(
        format!("{t}"),
        "tensor([1.2346e+05, 1.0000e-03], dtype=torch.float64)"
    );
    Ok(())
}

#[test]
fn ints() -> Result<()> {
    let t = Tensor::from_vec(vec![1i64, -20, 300], &[3])?;
    assert_eq!(format!("{t}"), "tensor([  1, -20, 300])");
    Ok(())
}

#[test]
fn uint8() -> Result<()> {
    let t = Tensor::from_vec(vec![1u8, 20, 255], &[3])?;
    assert_eq!(format!("{t}"), "tensor([  1,  20, 255], dtype=torch.uint8)");
    Ok(())
}

#[test]
fn bools() -> Result<()> {
    let t = Tensor::from_vec(vec![true, false, false, true], &[2, 2])?;
    assert_eq!(
        format!("{t}"),
        "tensor([[ True, False],\n        [False,  True]])"
    );
    Ok(())
}

#[test]
fn scalar_float() -> Result<()> {
    let t = Tensor::scalar(3.5f32);
    assert_eq!(format!("{t}"), "tensor(3.5000)");
    Ok(())
}

#[test]
fn scalar_int() -> Result<()> {
    let t = Tensor::scalar(7i64);
    assert_eq!(format!("{t}"), "tensor(7)");
    Ok(())
}

#[test]
fn scalar_f64_integral() -> Result<()> {
    let t = Tensor::scalar(2.0f64);
    assert_eq!(format!("{t}"), "tensor(2., dtype=torch.float64)");
    Ok(())
}

#[test]
fn empty_1d() -> Result<()> {
    let t = Tensor::zeros(&[0], DType::F32, Device::Cpu)?;
    assert_eq!(format!("{t}"), "tensor([])");
    Ok(())
}

#[test]
fn empty_2d() -> Result<()> {
    let t = Tensor::zeros(&[2, 0], DType::F32, Device::Cpu)?;
    assert_eq!(format!("{t}"), "tensor([], size=(2, 0))");
    Ok(())
}

#[test]
fn empty_int() -> Result<()> {
    let t = Tensor::zeros(&[0], DType::I64, Device::Cpu)?;
    assert_eq!(format!("{t}"), "tensor([], dtype=torch.int64)");
    Ok(())
}

#[test]
fn non_finite() -> Result<()> {
    let t = Tensor::from_vec(vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1.5], &[4])?;
    assert_eq!(format!("{t}"), "tensor([   nan,    inf,   -inf, 1.5000])");
    Ok(())
}

#[test]
fn nan_integral() -> Result<()> {
    let t = Tensor::from_vec(vec![f32::NAN, 1.0], &[2])?;
    assert_eq!(format!("{t}"), "tensor([nan, 1.])");
    Ok(())
}

#[test]
fn only_zeros() -> Result<()> {
    let t = Tensor::zeros(&[3], DType::F32, Device::Cpu)?;
    assert_eq!(format!("{t}"), "tensor([0., 0., 0.])");
    Ok(())
}

#[test]
fn summarised_1d() -> Result<()> {
    let t = Tensor::arange(0., 2000., 1., DType::F32, Device::Cpu)?;
    assert_eq!(format!("{t}"), "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n        1.9990e+03])");
    Ok(())
}

#[test]
fn summarised_2d() -> Result<()> {
    let t = Tensor::arange(0., 2000., 1., DType::F32, Device::Cpu)?
        .reshape(&[40, 50])?
        .mul_scalar(0.5)?;
    assert_eq!(format!("{t}"), "tensor([[0.0000e+00, 5.0000e-01, 1.0000e+00,  ..., 2.3500e+01, 2.4000e+01,\n         2.4500e+01],\n        [2.5000e+01, 2.5500e+01, 2.6000e+01,  ..., 4.8500e+01, 4.9000e+01,\n         4.9500e+01],\n        [5.0000e+01, 5.0500e+01, 5.1000e+01,  ..., 7.3500e+01, 7.4000e+01,\n         7.4500e+01],\n        ...,\n        [9.2500e+02, 9.2550e+02, 9.2600e+02,  ..., 9.4850e+02, 9.4900e+02,\n         9.4950e+02],\n        [9.5000e+02, 9.5050e+02, 9.5100e+02,  ..., 9.7350e+02, 9.7400e+02,\n         9.7450e+02],\n        [9.7500e+02, 9.7550e+02, 9.7600e+02,  ..., 9.9850e+02, 9.9900e+02,\n         9.9950e+02]])");
    Ok(())
}

#[test]
fn summarised_4d_int() -> Result<()> {
    let t = Tensor::arange(0., 1200., 1., DType::I64, Device::Cpu)?.reshape(&[2, 3, 4, 50])?;
    assert_eq!(format!("{t}"), "tensor([[[[   0,    1,    2,  ...,   47,   48,   49],\n          [  50,   51,   52,  ...,   97,   98,   99],\n          [ 100,  101,  102,  ...,  147,  148,  149],\n          [ 150,  151,  152,  ...,  197,  198,  199]],\n\n         [[ 200,  201,  202,  ...,  247,  248,  249],\n          [ 250,  251,  252,  ...,  297,  298,  299],\n          [ 300,  301,  302,  ...,  347,  348,  349],\n          [ 350,  351,  352,  ...,  397,  398,  399]],\n\n         [[ 400,  401,  402,  ...,  447,  448,  449],\n          [ 450,  451,  452,  ...,  497,  498,  499],\n          [ 500,  501,  502,  ...,  547,  548,  549],\n          [ 550,  551,  552,  ...,  597,  598,  599]]],\n\n\n        [[[ 600,  601,  602,  ...,  647,  648,  649],\n          [ 650,  651,  652,  ...,  697,  698,  699],\n          [ 700,  701,  702,  ...,  747,  748,  749],\n          [ 750,  751,  752,  ...,  797,  798,  799]],\n\n         [[ 800,  801,  802,  ...,  847,  848,  849],\n          [ 850,  851,  852,  ...,  897,  898,  899],\n          [ 900,  901,  902,  ...,  947,  948,  949],\n          [ 950,  951,  952,  ...,  997,  998,  999]],\n\n         [[1000, 1001, 1002,  ..., 1047, 1048, 1049],\n          [1050, 1051, 1052,  ..., 1097, 1098, 1099],\n          [1100, 1101, 1102,  ..., 1147, 1148, 1149],\n          [1150, 1151, 1152,  ..., 1197, 1198, 1199]]]])");
    Ok(())
}

#[test]
fn wrapped_line() -> Result<()> {
    let t = Tensor::arange(0., 30., 1., DType::F32, Device::Cpu)?.mul_scalar(1.5)?;
    assert_eq!(format!("{t}"), "tensor([ 0.0000,  1.5000,  3.0000,  4.5000,  6.0000,  7.5000,  9.0000, 10.5000,\n        12.0000, 13.5000, 15.0000, 16.5000, 18.0000, 19.5000, 21.0000, 22.5000,\n        24.0000, 25.5000, 27.0000, 28.5000, 30.0000, 31.5000, 33.0000, 34.5000,\n        36.0000, 37.5000, 39.0000, 40.5000, 42.0000, 43.5000])");
    Ok(())
}

#[test]
fn wrapped_f64_suffix() -> Result<()> {
    let t = Tensor::arange(0., 20., 1., DType::F64, Device::Cpu)?.mul_scalar(0.25)?;
    assert_eq!(format!("{t}"), "tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000, 1.2500, 1.5000, 1.7500, 2.0000,\n        2.2500, 2.5000, 2.7500, 3.0000, 3.2500, 3.5000, 3.7500, 4.0000, 4.2500,\n        4.5000, 4.7500], dtype=torch.float64)");
    Ok(())
}

#[test]
fn three_d() -> Result<()> {
    let t = Tensor::arange(0., 24., 1., DType::F32, Device::Cpu)?
        .reshape(&[2, 3, 4])?
        .div_scalar(8.0)?;
    assert_eq!(format!("{t}"), "tensor([[[0.0000, 0.1250, 0.2500, 0.3750],\n         [0.5000, 0.6250, 0.7500, 0.8750],\n         [1.0000, 1.1250, 1.2500, 1.3750]],\n\n        [[1.5000, 1.6250, 1.7500, 1.8750],\n         [2.0000, 2.1250, 2.2500, 2.3750],\n         [2.5000, 2.6250, 2.7500, 2.8750]]])");
    Ok(())
}

#[test]
fn transposed() -> Result<()> {
    let t = Tensor::arange(0., 6., 1., DType::I64, Device::Cpu)?
        .reshape(&[2, 3])?
        .t()?;
    assert_eq!(
        format!("{t}"),
        "tensor([[0, 3],\n        [1, 4],\n        [2, 5]])"
    );
    Ok(())
}

#[test]
fn half() -> Result<()> {
    let t = Tensor::from_vec(vec![0.1f32, 0.2], &[2])?.to_dtype(DType::F16)?;
    assert_eq!(
        format!("{t}"),
        "tensor([0.1000, 0.2000], dtype=torch.float16)"
    );
    Ok(())
}

#[test]
fn bfloat() -> Result<()> {
    let t = Tensor::from_vec(vec![0.1f32, 2.0], &[2])?.to_dtype(DType::BF16)?;
    assert_eq!(
        format!("{t}"),
        "tensor([0.1001, 2.0000], dtype=torch.bfloat16)"
    );
    Ok(())
}

#[test]
fn tie_rounding() -> Result<()> {
    let t = Tensor::from_vec(vec![0.03125f64, 1.0], &[2])?;
    assert_eq!(
        format!("{t}"),
        "tensor([0.0312, 1.0000], dtype=torch.float64)"
    );
    Ok(())
}

#[test]
fn negative_zero() -> Result<()> {
    let t = Tensor::from_vec(vec![-0.0f32, 1.0], &[2])?;
    assert_eq!(format!("{t}"), "tensor([-0., 1.])");
    Ok(())
}

#[test]
fn requires_grad() -> Result<()> {
    let t = Tensor::from_vec(vec![1.0f32, 2.], &[2])?.requires_grad_(true)?;
    assert_eq!(format!("{t}"), "tensor([1., 2.], requires_grad=True)");
    Ok(())
}

#[test]
fn grad_fn() -> Result<()> {
    let t = Tensor::from_vec(vec![1.0f32, 2.], &[2])?
        .requires_grad_(true)?
        .mul_scalar(2.0)?;
    assert_eq!(format!("{t}"), "tensor([2., 4.], grad_fn=<MulBackward0>)");
    Ok(())
}

#[test]
fn suffix_on_new_line() -> Result<()> {
    let t = Tensor::arange(0., 9., 1., DType::F64, Device::Cpu)?.mul_scalar(0.5)?;
    assert_eq!(format!("{t}"), "tensor([0.0000, 0.5000, 1.0000, 1.5000, 2.0000, 2.5000, 3.0000, 3.5000, 4.0000],\n       dtype=torch.float64)");
    Ok(())
}

#[test]
fn sci_2d() -> Result<()> {
    let t = Tensor::from_vec(vec![1e-8f64, 2.0, 3.0, 4e10], &[2, 2])?;
    assert_eq!(format!("{t}"), "tensor([[1.0000e-08, 2.0000e+00],\n        [3.0000e+00, 4.0000e+10]], dtype=torch.float64)");
    Ok(())
}
