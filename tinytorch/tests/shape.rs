//! Copying shape ops: values against PyTorch (numbers computed with torch 2.x and hard-coded
//! here), f64 gradchecks, non-contiguous inputs, 0-d and empty tensors, and errors.

mod common;
use common::{arange64 as arange, gradcheck64 as check, t64 as t, vals64 as vals};

use tinytorch::ops::PadMode;
use tinytorch::{DType, Device, Error, Tensor};

// ---- cat / stack / hstack / vstack ---------------------------------------------------------

#[test]
fn cat_values_promotion_and_empty() {
    let a = arange(&[2, 3]);
    let b = arange(&[2, 2]).add_scalar(10.0).unwrap();
    // torch.cat([a, b], 1)
    let y = Tensor::cat(&[&a, &b], 1).unwrap();
    assert_eq!(y.shape(), &[2, 5]);
    assert_eq!(vals(&y), vec![0., 1., 2., 10., 11., 3., 4., 5., 12., 13.]);
    // Non-contiguous parts along dim 0 (negative dim).
    let y = Tensor::cat(&[&a.t().unwrap(), &b], -2).unwrap();
    assert_eq!(vals(&y), vec![0., 3., 1., 4., 2., 5., 10., 11., 12., 13.]);
    // torch.cat([tensor([1,2]), tensor([0.5])]) is float32.
    let i = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
    let f = Tensor::from_vec(vec![0.5f32], &[1]).unwrap();
    let y = Tensor::cat(&[&i, &f], 0).unwrap();
    assert_eq!(y.dtype(), DType::F32);
    assert_eq!(vals(&y), vec![1., 2., 0.5]);
    // 1-D empty tensors are skipped; the dtype still promotes (torch gives float64 here).
    let e = Tensor::zeros(&[0], DType::F64, Device::Cpu).unwrap();
    let y = Tensor::cat(&[&e, &a.to_dtype(DType::F32).unwrap()], 1).unwrap();
    assert_eq!((y.shape(), y.dtype()), (&[2usize, 3][..], DType::F64));
    assert_eq!(Tensor::cat(&[&e, &e], 0).unwrap().shape(), &[0]);
    // Empty along the cat dim.
    let z = Tensor::zeros(&[2, 0], DType::F64, Device::Cpu).unwrap();
    assert_eq!(vals(&Tensor::cat(&[&z, &a, &z], 1).unwrap()), vals(&a));
}

#[test]
fn cat_errors() {
    let a = arange(&[2, 3]);
    let e = Tensor::cat(&[&a, &arange(&[3, 3])], 1).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }));
    assert!(
        e.to_string().contains("[2, 3]") && e.to_string().contains("[3, 3]"),
        "{e}"
    );
    assert!(matches!(
        Tensor::cat(&[&a, &arange(&[6])], 0),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        Tensor::cat(&[&a, &Tensor::scalar(1.0f64)], 0),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(Tensor::cat(&[], 0), Err(Error::Invalid { .. })));
    assert!(matches!(
        Tensor::cat(&[&a, &a], 2),
        Err(Error::Index { .. })
    ));
}

#[test]
fn stack_hstack_vstack() {
    let a = arange(&[2, 3]);
    let a2 = a.mul_scalar(2.0).unwrap();
    // torch.stack([a, a*2], 1)
    let y = Tensor::stack(&[&a, &a2], 1).unwrap();
    assert_eq!(y.shape(), &[2, 2, 3]);
    assert_eq!(
        vals(&y),
        vec![0., 1., 2., 0., 2., 4., 3., 4., 5., 6., 8., 10.]
    );
    assert_eq!(Tensor::stack(&[&a, &a2], -1).unwrap().shape(), &[2, 3, 2]);
    let s = Tensor::stack(&[&Tensor::scalar(1.0f32), &Tensor::scalar(2.0f32)], 0).unwrap();
    assert_eq!((s.shape(), vals(&s)), (&[2usize][..], vec![1., 2.]));
    let e = Tensor::stack(&[&a, &arange(&[2, 2])], 0).unwrap_err();
    assert!(
        matches!(e, Error::Shape { .. }) && e.to_string().contains("entry 1"),
        "{e}"
    );
    assert!(matches!(Tensor::stack(&[], 0), Err(Error::Invalid { .. })));
    // torch.hstack([tensor([1.,2]), tensor([3.])]); hstack of 2-D goes along dim 1.
    let y = Tensor::hstack(&[&t(&[1., 2.], &[2]), &t(&[3.], &[1])]).unwrap();
    assert_eq!(vals(&y), vec![1., 2., 3.]);
    assert_eq!(
        Tensor::hstack(&[&a, &arange(&[2, 2])]).unwrap().shape(),
        &[2, 5]
    );
    // torch.vstack([tensor([1.,2,3]), a])
    let y = Tensor::vstack(&[&t(&[1., 2., 3.], &[3]), &a]).unwrap();
    assert_eq!(y.shape(), &[3, 3]);
    assert_eq!(vals(&y), vec![1., 2., 3., 0., 1., 2., 3., 4., 5.]);
}

#[test]
fn cat_stack_gradcheck() {
    let (a, b) = (arange(&[2, 3]), arange(&[2, 2]).add_scalar(0.5).unwrap());
    check(|x| Tensor::cat(&[&x[0], &x[1]], 1), &[a.clone(), b.clone()]);
    check(
        |x| Tensor::cat(&[&x[0].t()?, &x[1], &x[0].t()?], 0),
        &[a.clone(), arange(&[1, 2])],
    );
    check(
        |x| Tensor::cat(&[&x[1], &x[0]], 1),
        &[
            a.clone(),
            Tensor::zeros(&[0], DType::F64, Device::Cpu).unwrap(),
        ],
    );
    check(
        |x| Tensor::stack(&[&x[0], &x[1]], 1),
        &[a.clone(), a.mul_scalar(3.0).unwrap()],
    );
    check(
        |x| Tensor::vstack(&[&x[0], &x[1]]),
        &[t(&[1., 2., 3.], &[3]), a],
    );
}

// ---- flip / roll ---------------------------------------------------------------------------

#[test]
fn flip_and_roll_values() {
    let x = arange(&[2, 3, 4]);
    // torch.flip(x, [0, 2])[:8]
    assert_eq!(
        &vals(&x.flip(&[0, -1]).unwrap())[..8],
        &[15., 14., 13., 12., 19., 18., 17., 16.]
    );
    assert_eq!(vals(&x.flip(&[]).unwrap()), vals(&x));
    assert_eq!(vals(&Tensor::scalar(3.0f32).flip(&[0]).unwrap()), vec![3.0]);
    assert_eq!(
        vals(&arange(&[2, 3]).t().unwrap().flip(&[0]).unwrap()),
        vec![2., 5., 1., 4., 0., 3.]
    );
    assert!(matches!(x.flip(&[0, 0]), Err(Error::Invalid { .. })));
    assert!(matches!(x.flip(&[3]), Err(Error::Index { .. })));
    // torch.roll(x, [1, -1], [1, 2])[:12]
    let y = x.roll(&[1, -1], &[1, 2]).unwrap();
    assert_eq!(
        &vals(&y)[..12],
        &[9., 10., 11., 8., 1., 2., 3., 0., 5., 6., 7., 4.]
    );
    // Flattened roll: torch.roll(torch.arange(6.).reshape(2,3), 2)
    let y = arange(&[2, 3]).roll(&[2], &[]).unwrap();
    assert_eq!(
        (y.shape(), vals(&y)),
        (&[2usize, 3][..], vec![4., 5., 0., 1., 2., 3.])
    );
    // A shift larger than the dim wraps; empty tensors roll to themselves.
    assert_eq!(
        vals(&arange(&[3]).roll(&[-4], &[0]).unwrap()),
        vec![1., 2., 0.]
    );
    assert_eq!(
        Tensor::zeros(&[0, 2], DType::F32, Device::Cpu)
            .unwrap()
            .roll(&[1], &[0])
            .unwrap()
            .shape(),
        &[0, 2]
    );
    assert!(matches!(x.roll(&[1, 2], &[0]), Err(Error::Invalid { .. })));
    assert!(matches!(x.roll(&[1, 2], &[]), Err(Error::Invalid { .. })));
}

#[test]
fn flip_roll_gradcheck() {
    check(|x| x[0].flip(&[0, 1]), &[arange(&[2, 3])]);
    check(|x| x[0].t()?.roll(&[1, -2], &[0, 1]), &[arange(&[2, 3])]);
    check(|x| x[0].roll(&[4], &[]), &[arange(&[2, 3])]);
}

// ---- repeat / repeat_interleave ------------------------------------------------------------

#[test]
fn repeat_values() {
    let x = t(&[1., 2., 3., 4.], &[2, 2]);
    // torch.tensor([[1.,2],[3,4]]).repeat(1, 2)
    assert_eq!(
        vals(&x.repeat(&[1, 2]).unwrap()),
        vec![1., 2., 1., 2., 3., 4., 3., 4.]
    );
    assert_eq!(x.repeat(&[2, 1, 3]).unwrap().shape(), &[2, 2, 6]);
    assert_eq!(
        vals(&x.t().unwrap().repeat(&[2, 1]).unwrap()),
        vec![1., 3., 2., 4., 1., 3., 2., 4.]
    );
    // A repeat of ones still copies.
    let y = x.repeat(&[1, 1]).unwrap();
    assert!(!y.shares_storage(&x));
    assert_eq!(x.repeat(&[0, 2]).unwrap().shape(), &[0, 4]);
    assert_eq!(
        vals(&Tensor::scalar(3.0f64).repeat(&[2]).unwrap()),
        vec![3., 3.]
    );
    assert!(matches!(x.repeat(&[2]), Err(Error::Shape { .. })));
    // torch.repeat_interleave(x, 2, dim=1) and with no dim (flattened).
    assert_eq!(
        vals(&x.repeat_interleave(2, Some(1)).unwrap()),
        vec![1., 1., 2., 2., 3., 3., 4., 4.]
    );
    assert_eq!(
        vals(&x.repeat_interleave(2, None).unwrap()),
        vec![1., 1., 2., 2., 3., 3., 4., 4.]
    );
    assert_eq!(
        vals(&x.repeat_interleave(2, Some(0)).unwrap()),
        vec![1., 2., 1., 2., 3., 4., 3., 4.]
    );
    assert_eq!(x.repeat_interleave(0, Some(0)).unwrap().shape(), &[0, 2]);
    assert!(matches!(
        x.repeat_interleave(2, Some(2)),
        Err(Error::Index { .. })
    ));
}

#[test]
fn repeat_gradcheck() {
    check(|x| x[0].repeat(&[2, 1, 3]), &[arange(&[2, 2])]);
    check(
        |x| x[0].t()?.repeat_interleave(3, Some(1)),
        &[arange(&[2, 3])],
    );
    check(|x| x[0].repeat_interleave(2, None), &[arange(&[2, 3])]);
}

// ---- pad -----------------------------------------------------------------------------------

#[test]
fn pad_values() {
    let y = arange(&[1, 2, 3]).add_scalar(1.0).unwrap();
    // F.pad(y, [1,2,1,0], value=-1.)
    let p = y.pad(&[1, 2, 1, 0], PadMode::Constant(-1.0)).unwrap();
    assert_eq!(p.shape(), &[1, 3, 6]);
    let expect = vec![
        -1., -1., -1., -1., -1., -1., -1., 1., 2., 3., -1., -1., -1., 4., 5., 6., -1., -1.,
    ];
    assert_eq!(vals(&p), expect);
    // F.pad(y, [2,2], mode='reflect')
    let p = y.pad(&[2, 2], PadMode::Reflect).unwrap();
    assert_eq!(
        vals(&p),
        vec![3., 2., 1., 2., 3., 2., 1., 6., 5., 4., 5., 6., 5., 4.]
    );
    // F.pad(y.unsqueeze(0), [2,1,1,1], mode='reflect')
    let p = y
        .unsqueeze(0)
        .unwrap()
        .pad(&[2, 1, 1, 1], PadMode::Reflect)
        .unwrap();
    assert_eq!(p.shape(), &[1, 1, 4, 6]);
    let expect = vec![
        6., 5., 4., 5., 6., 5., 3., 2., 1., 2., 3., 2., 6., 5., 4., 5., 6., 5., 3., 2., 1., 2., 3.,
        2.,
    ];
    assert_eq!(vals(&p), expect);
    // F.pad(y, [1,3], mode='replicate')
    let p = y.pad(&[1, 3], PadMode::Replicate).unwrap();
    assert_eq!(
        vals(&p),
        vec![1., 1., 2., 3., 3., 3., 3., 4., 4., 5., 6., 6., 6., 6.]
    );
    // Non-contiguous input, integer dtype, zero pads (still a copy).
    let p = arange(&[2, 3])
        .t()
        .unwrap()
        .pad(&[0, 1], PadMode::Constant(9.0))
        .unwrap();
    assert_eq!(vals(&p), vec![0., 3., 9., 1., 4., 9., 2., 5., 9.]);
    let i = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
    let p = i.pad(&[1, 0], PadMode::Constant(7.0)).unwrap();
    assert_eq!(
        (p.dtype(), p.to_vec::<i64>().unwrap()),
        (DType::I64, vec![7, 1, 2])
    );
    let p = y.pad(&[0, 0], PadMode::Reflect).unwrap();
    assert!(!p.shares_storage(&y));
}

#[test]
fn pad_errors() {
    let y = arange(&[1, 2, 3]);
    // Reflect pad must be smaller than the dim (torch: "Padding size should be less than ...").
    let e = y.pad(&[3, 0], PadMode::Reflect).unwrap_err();
    assert!(
        matches!(e, Error::Invalid { .. }) && e.to_string().contains("(3, 0)"),
        "{e}"
    );
    assert!(matches!(
        y.pad(&[1], PadMode::Constant(0.0)),
        Err(Error::Invalid { .. })
    ));
    assert!(matches!(
        y.pad(&[1; 8], PadMode::Constant(0.0)),
        Err(Error::Invalid { .. })
    ));
    let empty = Tensor::zeros(&[2, 0], DType::F32, Device::Cpu).unwrap();
    assert!(matches!(
        empty.pad(&[1, 1], PadMode::Replicate),
        Err(Error::Invalid { .. })
    ));
    assert_eq!(
        empty.pad(&[1, 1], PadMode::Constant(0.0)).unwrap().shape(),
        &[2, 2]
    );
}

#[test]
fn pad_gradcheck() {
    check(
        |x| x[0].pad(&[1, 2, 0, 1], PadMode::Constant(0.5)),
        &[arange(&[2, 3])],
    );
    check(
        |x| x[0].t()?.pad(&[2, 1, 1, 1], PadMode::Reflect),
        &[arange(&[4, 3])],
    );
    check(
        |x| x[0].pad(&[3, 1], PadMode::Replicate),
        &[arange(&[2, 3])],
    );
}

// ---- tril / triu ---------------------------------------------------------------------------

#[test]
fn tril_triu_values() {
    let m = arange(&[3, 4]).add_scalar(1.0).unwrap();
    // m.tril(), m.tril(-1), m.triu(1)
    assert_eq!(
        vals(&m.tril(0).unwrap()),
        vec![1., 0., 0., 0., 5., 6., 0., 0., 9., 10., 11., 0.]
    );
    assert_eq!(
        vals(&m.tril(-1).unwrap()),
        vec![0., 0., 0., 0., 5., 0., 0., 0., 9., 10., 0., 0.]
    );
    assert_eq!(
        vals(&m.triu(1).unwrap()),
        vec![0., 2., 3., 4., 0., 0., 7., 8., 0., 0., 0., 12.]
    );
    // Batched and non-contiguous: triu of the transposed 4x3.
    let b = Tensor::stack(&[&m, &m], 0).unwrap();
    assert_eq!(
        vals(&b.tril(0).unwrap())[12..],
        vals(&m.tril(0).unwrap())[..]
    );
    assert_eq!(
        vals(&m.t().unwrap().triu(0).unwrap()),
        vec![1., 5., 9., 0., 6., 10., 0., 0., 11., 0., 0., 0.]
    );
    let i = Tensor::from_vec(vec![1i64; 4], &[2, 2]).unwrap();
    assert_eq!(
        i.triu(0).unwrap().to_vec::<i64>().unwrap(),
        vec![1, 1, 0, 1]
    );
    assert!(matches!(arange(&[3]).tril(0), Err(Error::Shape { .. })));
}

#[test]
fn tril_triu_gradcheck() {
    check(|x| x[0].tril(0), &[arange(&[3, 4])]);
    check(|x| x[0].transpose(1, 2)?.triu(-1), &[arange(&[2, 3, 4])]);
}

#[test]
fn empty_shape_ops() {
    let e = Tensor::zeros(&[0, 3], DType::F32, Device::Cpu).unwrap();
    assert_eq!(e.flip(&[0, 1]).unwrap().shape(), &[0, 3]);
    assert_eq!(e.repeat(&[2, 2]).unwrap().shape(), &[0, 6]);
    assert_eq!(e.repeat_interleave(3, Some(1)).unwrap().shape(), &[0, 9]);
    assert_eq!(e.pad(&[1, 1], PadMode::Reflect).unwrap().shape(), &[0, 5]);
    assert_eq!(e.tril(0).unwrap().shape(), &[0, 3]);
    assert_eq!(Tensor::cat(&[&e, &e], 0).unwrap().shape(), &[0, 3]);
    assert_eq!(Tensor::stack(&[&e, &e], 1).unwrap().shape(), &[0, 2, 3]);
}

// ---- gradients of views that pick parts of one tensor ---------------------------------------

/// Loss over overlapping parts of `x` (narrow, chunk, slice with a step, select) plus a full
/// use of `x`, so that later parts' gradients are added in place into the gradient that the
/// first one started (and one reaches a gradient that is a broadcast view, which must not be
/// written in place).
fn parts_loss(x: &Tensor) -> tinytorch::Result<Tensor> {
    let c = x.chunk(3, 1)?;
    let a = c[0].mul_scalar(2.0)?.sum_all()?;
    let b = c[1].mul_scalar(3.0)?.sum_all()?;
    let n = x.narrow(1, 1, 4)?.mul_scalar(5.0)?.sum_all()?;
    let s = x.slice(1, Some(0), None, 2)?.mul_scalar(7.0)?.sum_all()?;
    let r = x.select(0, 1)?.mul_scalar(11.0)?.sum_all()?;
    a.add(&b)?.add(&n)?.add(&s)?.add(&r)?.add(&x.sum_all()?)
}

#[test]
fn part_view_gradients_add_up() {
    // x (2, 6): chunk -> columns 0-1 (x2), 2-3 (x3), 4-5 (unused); narrow columns 1-4 (x5);
    // even columns (x7); row 1 (x11); plus 1 everywhere.
    let per_col = [
        2.0 + 7.0 + 1.0,
        2.0 + 5.0 + 1.0,
        3.0 + 5.0 + 7.0 + 1.0,
        3.0 + 5.0 + 1.0,
        5.0 + 7.0 + 1.0,
        1.0,
    ];
    let expected: Vec<f64> = (0..12)
        .map(|i| per_col[i % 6] + if i >= 6 { 11.0 } else { 0.0 })
        .collect();
    // A leaf, and a non-leaf (the parts' gradients meet in the engine's pending map).
    let x = arange(&[2, 6]).requires_grad_(true).unwrap();
    parts_loss(&x).unwrap().backward().unwrap();
    assert_eq!(vals(&x.grad().unwrap()), expected);
    let x = arange(&[2, 6]).requires_grad_(true).unwrap();
    parts_loss(&x.mul_scalar(1.0).unwrap())
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(vals(&x.grad().unwrap()), expected);
    // Twice through a retained graph: the same gradient again, accumulated in .grad.
    let x = arange(&[2, 6]).requires_grad_(true).unwrap();
    let loss = parts_loss(&x).unwrap();
    loss.backward_with(None, true).unwrap();
    loss.backward_with(None, false).unwrap();
    let twice: Vec<f64> = expected.iter().map(|v| 2.0 * v).collect();
    assert_eq!(vals(&x.grad().unwrap()), twice);
    // A third time fails clearly: the graph was freed.
    assert!(loss.backward().is_err());
    check(|i| parts_loss(&i[0]), &[arange(&[2, 6])]);
}
