use tinytorch::{DType, Device, Tensor};

#[test]
fn add_broadcast_and_views() {
    let a = Tensor::from_vec(vec![1.0f32, 2., 3., 4., 5., 6.], &[2, 3]).unwrap();
    let b = Tensor::from_vec(vec![10.0f32, 20., 30.], &[3]).unwrap();
    let c = (&a + &b).unwrap();
    assert_eq!(
        c.to_vec::<f32>().unwrap(),
        vec![11., 22., 33., 14., 25., 36.]
    );
    let t = a.t().unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![1., 4., 2., 5., 3., 6.]);
    let s = a.slice(1, Some(0), None, 2).unwrap();
    assert_eq!(s.to_vec::<f32>().unwrap(), vec![1., 3., 4., 6.]);
    let r = t.reshape(&[6]).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![1., 4., 2., 5., 3., 6.]);
    let i = Tensor::arange(0., 5., 1., DType::I64, Device::Cpu).unwrap();
    assert_eq!(i.to_vec::<i64>().unwrap(), vec![0, 1, 2, 3, 4]);
}

#[test]
fn mul_backward_same_shape() {
    let a = Tensor::from_vec(vec![1.0f64, 2., 3.], &[3])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let b = Tensor::from_vec(vec![4.0f64, 5., 6.], &[3])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let c = (&a * &b).unwrap();
    c.backward_with(
        Some(&Tensor::ones(&[3], DType::F64, Device::Cpu).unwrap()),
        false,
    )
    .unwrap();
    assert_eq!(a.grad().unwrap().to_vec::<f64>().unwrap(), vec![4., 5., 6.]);
    assert_eq!(b.grad().unwrap().to_vec::<f64>().unwrap(), vec![1., 2., 3.]);
}

#[test]
fn broadcast_backward_and_gradcheck() {
    use tinytorch::autograd::gradcheck::gradcheck;
    let a = Tensor::from_vec(vec![1.0f64, 2., 3., 4., 5., 6.], &[2, 3]).unwrap();
    let b = Tensor::from_vec(vec![0.5f64, 1.5, 2.5], &[3]).unwrap();
    gradcheck(|x| &x[0] * &x[1], &[a.clone(), b.clone()], 1e-6, 1e-7, 1e-6).unwrap();
    gradcheck(
        |x| x[0].t()?.div(&x[1].unsqueeze(1)?),
        &[a.clone(), b.clone()],
        1e-6,
        1e-7,
        1e-6,
    )
    .unwrap();
    gradcheck(
        |x| x[0].slice(1, Some(1), None, 1)?.sum(&[0], false),
        &[a],
        1e-6,
        1e-7,
        1e-6,
    )
    .unwrap();
}

#[test]
fn deep_chain_does_not_overflow_the_stack() {
    let x = Tensor::from_vec(vec![1.0f32], &[1])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let mut y = x.clone();
    for _ in 0..100_000 {
        y = y.add_scalar(1.0).unwrap();
    }
    y.sum_all().unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![1.0]);
    drop(y);
}

#[test]
fn clamp_with_tensor_bounds_broadcasts_and_differentiates() {
    use tinytorch::autograd::gradcheck::gradcheck;
    let x = Tensor::from_vec(vec![-2.0f64, 0.5, 3.0, 0.2, -0.7, 0.9], &[2, 3]).unwrap();
    let lo = Tensor::from_vec(vec![-1.0f64, 0.0, -1.0], &[3]).unwrap();
    let hi = Tensor::from_vec(vec![1.0f64, 1.0, 0.5], &[3]).unwrap();
    // torch.clamp(x, lo, hi) -> [[-1.0, 0.5, 0.5], [0.2, 0.0, 0.5]]
    let y = x.clamp_tensor(Some(&lo), Some(&hi)).unwrap();
    assert_eq!(
        y.to_vec::<f64>().unwrap(),
        vec![-1.0, 0.5, 0.5, 0.2, 0.0, 0.5]
    );
    // min > max gives max, as in PyTorch.
    let z = x
        .clamp_tensor(Some(&hi.add_scalar(1.0).unwrap()), Some(&hi))
        .unwrap();
    assert_eq!(
        z.to_vec::<f64>().unwrap(),
        vec![1.0, 1.0, 0.5, 1.0, 1.0, 0.5]
    );
    gradcheck(
        |t| t[0].clamp_tensor(Some(&t[1]), Some(&t[2])),
        &[x.clone(), lo, hi],
        1e-6,
        1e-7,
        1e-6,
    )
    .unwrap();
    assert!(x.clamp_tensor(None, None).is_err());
    let bad = Tensor::from_vec(vec![0.0f64; 4], &[4]).unwrap();
    assert!(x.clamp_tensor(Some(&bad), None).is_err());
}
