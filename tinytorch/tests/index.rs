//! Index ops: values against PyTorch (numbers computed with torch 2.x and hard-coded here),
//! f64 gradchecks, non-contiguous inputs and indices, 0-d and empty tensors, and errors.

mod common;
use common::{arange64 as arange, gradcheck64 as check, t64 as t, vals64 as vals};

use tinytorch::{DType, Device, Error, Tensor};

fn tf(data: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_vec(data.to_vec(), shape).unwrap()
}
fn ti(data: &[i64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(data.to_vec(), shape).unwrap()
}
fn err_text(r: tinytorch::Result<impl std::fmt::Debug>) -> String {
    r.unwrap_err().to_string()
}

// ---- index_select --------------------------------------------------------------------------

#[test]
fn index_select_values() {
    let x = arange(&[3, 4]);
    // torch.index_select(torch.arange(12.).reshape(3,4), 1, torch.tensor([3,0,3]))
    let y = x.index_select(1, &ti(&[3, 0, 3], &[3])).unwrap();
    assert_eq!(y.shape(), &[3, 3]);
    assert_eq!(vals(&y), vec![3., 0., 3., 7., 4., 7., 11., 8., 11.]);
    // Non-contiguous source and index: x.t() with the index tensor([2,1,2,0])[::2].
    let idx = ti(&[2, 1, 2, 0], &[4]).slice(0, None, None, 2).unwrap();
    let y = x.t().unwrap().index_select(0, &idx).unwrap();
    assert_eq!(vals(&y), vec![2., 6., 10., 2., 6., 10.]);
    // Negative dim, every dtype keeps its dtype.
    for dt in [
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::I64,
        DType::U8,
        DType::Bool,
    ] {
        let y = x
            .to_dtype(dt)
            .unwrap()
            .index_select(-2, &ti(&[2, 0], &[2]))
            .unwrap();
        assert_eq!(y.dtype(), dt);
        let expect = Tensor::from_vec(vec![8., 9., 10., 11., 0., 1., 2., 3.], &[2, 4])
            .unwrap()
            .to_dtype(dt)
            .unwrap();
        assert_eq!(vals(&y), vals(&expect));
    }
}

#[test]
fn index_select_embedding_lookup_large() {
    // Big enough for the parallel fast path: rows of a contiguous table.
    let (rows, cols) = (1000, 64);
    let table = arange(&[rows, cols]).to_dtype(DType::F32).unwrap();
    let idx: Vec<i64> = (0..2000).map(|i| (i * 37) % rows as i64).collect();
    let y = table.index_select(0, &Tensor::from_slice(&idx)).unwrap();
    let v = y.to_vec::<f32>().unwrap();
    for (r, &i) in idx.iter().enumerate() {
        assert_eq!(v[r * cols + 5], (i as usize * cols + 5) as f32);
    }
}

#[test]
fn index_select_edge_cases_and_errors() {
    // 0-d source with a one-element index gives 0-d (torch.index_select(tensor(5.), 0, tensor([0]))).
    let s = Tensor::scalar(5.0f32);
    let y = s.index_select(0, &ti(&[0], &[1])).unwrap();
    assert_eq!(y.shape(), &[] as &[usize]);
    assert_eq!(vals(&y), vec![5.0]);
    // Empty index gives an empty dim.
    let y = arange(&[3, 2]).index_select(0, &ti(&[], &[0])).unwrap();
    assert_eq!(y.shape(), &[0, 2]);
    // Errors: out of range (names the index and the size), negative, dtype, rank.
    let x = arange(&[3, 2]);
    let e = err_text(x.index_select(0, &ti(&[1, 3], &[2])));
    assert!(e.contains("index 3") && e.contains("size 3"), "{e}");
    assert!(matches!(
        x.index_select(0, &ti(&[-1], &[1])),
        Err(Error::Index { .. })
    ));
    assert!(matches!(
        x.index_select(0, &tf(&[0.0], &[1])),
        Err(Error::DType { .. })
    ));
    assert!(matches!(
        x.index_select(0, &ti(&[0, 1], &[1, 2])),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        x.index_select(2, &ti(&[0], &[1])),
        Err(Error::Index { .. })
    ));
}

#[test]
fn index_select_gradcheck() {
    let idx = ti(&[2, 0, 2, 1], &[4]);
    check(
        |x| x[0].index_select(1, &idx),
        &[arange(&[2, 3]).add_scalar(0.5).unwrap()],
    );
    check(|x| x[0].t()?.index_select(0, &idx), &[arange(&[2, 3])]);
    check(
        |x| x[0].index_select(0, &ti(&[0], &[1])),
        &[Tensor::scalar(2.0f64)],
    );
}

// ---- index_add -----------------------------------------------------------------------------

#[test]
fn index_add_accumulates_duplicates() {
    // torch.ones(3,2).index_add(0, torch.tensor([0,2,0]), torch.tensor([[1.,2],[3,4],[5,6]]))
    let src = t(&[1., 2., 3., 4., 5., 6.], &[3, 2]);
    let y = Tensor::ones(&[3, 2], DType::F64, Device::Cpu)
        .unwrap()
        .index_add(0, &ti(&[0, 2, 0], &[3]), &src)
        .unwrap();
    assert_eq!(vals(&y), vec![7., 9., 1., 1., 4., 5.]);
    // Non-contiguous self and source along dim 1.
    let base = Tensor::ones(&[2, 3], DType::F64, Device::Cpu)
        .unwrap()
        .t()
        .unwrap();
    let src_t = t(&[1., 3., 5., 2., 4., 6.], &[2, 3]).t().unwrap();
    let y = base.index_add(0, &ti(&[0, 2, 0], &[3]), &src_t).unwrap();
    assert_eq!(vals(&y), vec![7., 9., 1., 1., 4., 5.]);
    // ... and along dim 1: torch.ones(2,3).index_add(1, tensor([2,2]), tensor([[1.,2],[3,4]]))
    let y = Tensor::ones(&[3, 2], DType::F64, Device::Cpu)
        .unwrap()
        .t()
        .unwrap();
    let y = y
        .index_add(1, &ti(&[2, 2], &[2]), &t(&[1., 2., 3., 4.], &[2, 2]))
        .unwrap();
    assert_eq!(vals(&y), vec![1., 1., 4., 1., 1., 8.]);
    // i64 and bool accumulate too.
    let y = ti(&[0, 0], &[2])
        .index_add(0, &ti(&[1, 1, 1], &[3]), &ti(&[1, 2, 3], &[3]))
        .unwrap();
    assert_eq!(y.to_vec::<i64>().unwrap(), vec![0, 6]);
    // Errors: shape of source, dtype of source, range.
    let ones = Tensor::ones(&[3, 2], DType::F64, Device::Cpu).unwrap();
    assert!(matches!(
        ones.index_add(0, &ti(&[0], &[1]), &src),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        ones.index_add(0, &ti(&[0, 1, 2], &[3]), &src.to_dtype(DType::F32).unwrap()),
        Err(Error::DType { .. })
    ));
    let e = err_text(ones.index_add(0, &ti(&[0, 1, 5], &[3]), &src));
    assert!(e.contains("index 5") && e.contains("size 3"), "{e}");
}

#[test]
fn index_add_gradcheck() {
    let idx = ti(&[1, 1, 0], &[3]);
    check(
        |x| x[0].index_add(0, &idx, &x[1]),
        &[arange(&[2, 2]), arange(&[3, 2]).mul_scalar(0.3).unwrap()],
    );
}

// ---- gather / scatter ----------------------------------------------------------------------

#[test]
fn gather_values() {
    let x = arange(&[3, 4]);
    // torch.gather(x, 0, torch.tensor([[2,0,1,1],[0,2,2,0]]))
    let idx = ti(&[2, 0, 1, 1, 0, 2, 2, 0], &[2, 4]);
    assert_eq!(
        vals(&x.gather(0, &idx).unwrap()),
        vec![8., 1., 6., 7., 0., 9., 10., 3.]
    );
    // torch.gather(x, 1, torch.tensor([[3,0],[1,1],[0,2]])), index given transposed.
    let idx = ti(&[3, 1, 0, 0, 1, 2], &[2, 3]).t().unwrap();
    assert_eq!(
        vals(&x.gather(1, &idx).unwrap()),
        vec![3., 0., 5., 5., 8., 10.]
    );
    // Non-contiguous source: torch.arange(12.).reshape(3,4).t().gather(1, torch.tensor([[1,2,0,0]]))
    let idx = ti(&[1, 2, 0, 0], &[1, 4]);
    assert_eq!(
        vals(&x.t().unwrap().gather(1, &idx).unwrap()),
        vec![4., 8., 0., 0.]
    );
    // 0-d
    assert_eq!(
        vals(
            &Tensor::scalar(3.0f64)
                .gather(0, &Tensor::scalar(0i64))
                .unwrap()
        ),
        vec![3.0]
    );
    // Errors: rank, size, range, dtype.
    assert!(matches!(
        x.gather(0, &ti(&[0], &[1])),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        x.gather(0, &ti(&[0; 5], &[1, 5])),
        Err(Error::Shape { .. })
    ));
    let e = err_text(x.gather(1, &ti(&[4], &[1, 1])));
    assert!(e.contains("index 4") && e.contains("size 4"), "{e}");
    assert!(matches!(
        x.gather(1, &Tensor::from_vec(vec![0u8], &[1, 1]).unwrap()),
        Err(Error::DType { .. })
    ));
}

#[test]
fn scatter_values() {
    let z = Tensor::zeros(&[3, 4], DType::F64, Device::Cpu).unwrap();
    let idx = ti(&[2, 0, 1, 1, 0, 2, 2, 0], &[2, 4]);
    let src = arange(&[2, 4]).add_scalar(1.0).unwrap();
    // torch.zeros(3,4).scatter(0, idx, torch.arange(1.,9.).reshape(2,4))
    let expect = vec![5., 2., 0., 8., 0., 0., 3., 4., 1., 6., 7., 0.];
    assert_eq!(vals(&z.scatter(0, &idx, &src).unwrap()), expect);
    // A larger src only contributes its leading block.
    let big = t(&[1., 2., 3., 4., 9., 5., 6., 7., 8., 9.], &[2, 5]);
    assert_eq!(vals(&z.scatter(0, &idx, &big).unwrap()), expect);
    // torch.zeros(3,4).scatter(1, torch.tensor([[1],[3],[0]]), 7.)
    let y = z.scatter_value(1, &ti(&[1, 3, 0], &[3, 1]), 7.0).unwrap();
    assert_eq!(
        vals(&y),
        vec![0., 7., 0., 0., 0., 0., 0., 7., 7., 0., 0., 0.]
    );
    // self is not modified (out-of-place).
    assert_eq!(vals(&z), vec![0.0; 12]);
}

#[test]
fn scatter_add_accumulates_duplicates() {
    let z = Tensor::zeros(&[2, 3], DType::F64, Device::Cpu).unwrap();
    // torch.zeros(2,3).scatter_add(0, torch.tensor([[1,0,1],[1,1,0],[1,0,0]]), torch.arange(1.,10.).reshape(3,3))
    let idx = ti(&[1, 0, 1, 1, 1, 0, 1, 0, 0], &[3, 3]);
    let y = z
        .scatter_add(0, &idx, &arange(&[3, 3]).add_scalar(1.0).unwrap())
        .unwrap();
    assert_eq!(vals(&y), vec![0., 10., 15., 12., 5., 3.]);
    // dim 1 with a non-contiguous src: torch.tensor([[1.,2,9],[3,4,9]]) seen through a transpose.
    let src = t(&[1., 3., 2., 4., 9., 9.], &[3, 2]).t().unwrap();
    let y = z.scatter_add(1, &ti(&[2, 2, 0, 0], &[2, 2]), &src).unwrap();
    assert_eq!(vals(&y), vec![0., 0., 3., 7., 0., 0.]);
    // f16 accumulates in f32.
    let h = z
        .to_dtype(DType::F16)
        .unwrap()
        .scatter_add(0, &idx, &arange(&[3, 3]).to_dtype(DType::F16).unwrap())
        .unwrap();
    assert_eq!(vals(&h), vec![0., 8., 13., 9., 4., 2.]);
}

#[test]
fn scatter_errors() {
    let z = Tensor::zeros(&[2, 3], DType::F32, Device::Cpu).unwrap();
    let src = Tensor::ones(&[2, 3], DType::F32, Device::Cpu).unwrap();
    let e = err_text(z.scatter(0, &ti(&[0, 2], &[1, 2]), &src));
    assert!(e.contains("index 2") && e.contains("size 2"), "{e}");
    assert!(matches!(
        z.scatter(0, &ti(&[0, 1], &[1, 2]), &src.to_dtype(DType::F64).unwrap()),
        Err(Error::DType { .. })
    ));
    assert!(matches!(
        z.scatter_add(0, &tf(&[0.0], &[1, 1]), &src),
        Err(Error::DType { .. })
    ));
    // index larger than src
    assert!(matches!(
        z.scatter_add(0, &ti(&[0; 3], &[3, 1]), &src),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        z.scatter_value(1, &ti(&[0; 3], &[1, 3, 1]), 1.0),
        Err(Error::Shape { .. })
    ));
}

#[test]
fn gather_scatter_gradcheck() {
    let idx = ti(&[2, 0, 1, 1, 0, 2, 2, 0], &[2, 4]);
    check(
        |x| x[0].gather(0, &idx),
        &[arange(&[3, 4]).mul_scalar(0.1).unwrap()],
    );
    // Duplicate indices: the gradient accumulates.
    let dup = ti(&[1, 1, 1, 0, 0, 0], &[2, 3]);
    check(|x| x[0].t()?.gather(1, &dup), &[arange(&[3, 2])]);
    check(
        |x| x[0].scatter(0, &idx, &x[1]),
        &[arange(&[3, 4]), arange(&[2, 5]).add_scalar(1.0).unwrap()],
    );
    check(
        |x| x[0].scatter_add(0, &dup, &x[1]),
        &[arange(&[2, 3]), arange(&[2, 3]).mul_scalar(2.0).unwrap()],
    );
    check(
        |x| x[0].scatter_value(1, &ti(&[1, 3, 0], &[3, 1]), 7.0),
        &[arange(&[3, 4])],
    );
}

// ---- masked_select / nonzero ---------------------------------------------------------------

#[test]
fn masked_select_broadcasts() {
    let x = arange(&[3, 4]);
    let m = Tensor::from_vec(vec![true, false, true, true], &[4]).unwrap();
    // torch.arange(12.).reshape(3,4).masked_select(torch.tensor([True,False,True,True]))
    let y = x.masked_select(&m).unwrap();
    assert_eq!(y.shape(), &[9]);
    assert_eq!(vals(&y), vec![0., 2., 3., 4., 6., 7., 8., 10., 11.]);
    // self broadcasts to the mask's shape.
    let m2 = Tensor::from_vec(vec![true, false, false, true], &[2, 2]).unwrap();
    assert_eq!(
        vals(&t(&[1., 2.], &[2]).masked_select(&m2).unwrap()),
        vec![1., 2.]
    );
    // Errors.
    assert!(matches!(
        x.masked_select(&ti(&[1, 0, 1, 1], &[4])),
        Err(Error::DType { .. })
    ));
    assert!(matches!(
        x.masked_select(&Tensor::from_vec(vec![true; 3], &[3]).unwrap()),
        Err(Error::Shape { .. })
    ));
    // gradcheck, including a broadcast self whose gradient sums.
    check(|x| x[0].masked_select(&m), &[arange(&[3, 4])]);
    check(|x| x[0].masked_select(&m2), &[t(&[1., 2.], &[2])]);
}

#[test]
fn nonzero_coordinates() {
    // torch.tensor([[0,1.,0],[2,0,nan]]).nonzero()
    let x = t(&[0., 1., 0., 2., 0., f64::NAN], &[2, 3]);
    let y = x.nonzero().unwrap();
    assert_eq!(y.dtype(), DType::I64);
    assert_eq!(y.shape(), &[3, 2]);
    assert_eq!(y.to_vec::<i64>().unwrap(), vec![0, 1, 1, 0, 1, 2]);
    // 0-d: shape (1, 0) or (0, 0); non-contiguous input.
    assert_eq!(Tensor::scalar(5.0f32).nonzero().unwrap().shape(), &[1, 0]);
    assert_eq!(Tensor::scalar(0.0f32).nonzero().unwrap().shape(), &[0, 0]);
    assert_eq!(
        x.t().unwrap().nonzero().unwrap().to_vec::<i64>().unwrap(),
        vec![0, 1, 1, 0, 2, 1]
    );
}

// ---- sort / argsort / topk -----------------------------------------------------------------

#[test]
fn sort_values_stability_and_nan() {
    let s = t(&[3., 1., 2., 1., f64::NAN, 0., -1., 0.], &[2, 4]);
    // torch.sort(s, dim=1, stable=True)
    let (v, i) = s.sort(1, false).unwrap();
    let v = vals(&v);
    assert_eq!(&v[..7], &[1., 1., 2., 3., -1., 0., 0.]);
    assert!(v[7].is_nan());
    assert_eq!(i.to_vec::<i64>().unwrap(), vec![1, 3, 2, 0, 2, 1, 3, 0]);
    // descending=True, stable=True
    let (v, i) = s.sort(-1, true).unwrap();
    assert!(vals(&v)[4].is_nan());
    assert_eq!(i.to_vec::<i64>().unwrap(), vec![0, 2, 1, 3, 0, 1, 3, 2]);
    // dim 0 and a transposed view.
    let (_, i) = s.sort(0, false).unwrap();
    assert_eq!(i.to_vec::<i64>().unwrap(), vec![0, 1, 1, 1, 1, 0, 0, 0]);
    let (_, i) = s.t().unwrap().sort(1, false).unwrap();
    assert_eq!(i.to_vec::<i64>().unwrap(), vec![0, 1, 1, 0, 1, 0, 1, 0]);
    // Integer and 0-d inputs.
    let (v, i) = ti(&[3, -1, 2], &[3]).sort(0, true).unwrap();
    assert_eq!(
        (v.to_vec::<i64>().unwrap(), i.to_vec::<i64>().unwrap()),
        (vec![3, 2, -1], vec![0, 2, 1])
    );
    let (v, i) = Tensor::scalar(3.0f32).sort(0, false).unwrap();
    assert_eq!(
        (v.shape(), vals(&v), vals(&i)),
        (&[] as &[usize], vec![3.0], vec![0.0])
    );
    // argsort: torch.argsort(t, 1, descending=True)
    let x = t(&[5., 1., 4., 2., 0., 9., 3., 7.], &[2, 4]);
    assert_eq!(
        x.argsort(1, true).unwrap().to_vec::<i64>().unwrap(),
        vec![0, 2, 3, 1, 1, 3, 2, 0]
    );
    assert!(matches!(x.sort(2, false), Err(Error::Index { .. })));
}

#[test]
fn topk_values() {
    let x = t(&[5., 1., 4., 2., 0., 9., 3., 7.], &[2, 4]);
    // torch.topk(x, 2, 1)
    let (v, i) = x.topk(2, 1, true, true).unwrap();
    assert_eq!(vals(&v), vec![5., 4., 9., 7.]);
    assert_eq!(i.to_vec::<i64>().unwrap(), vec![0, 2, 1, 3]);
    // torch.topk(x, 1, 0, largest=False)
    let (v, i) = x.topk(1, 0, false, true).unwrap();
    assert_eq!(v.shape(), &[1, 4]);
    assert_eq!(vals(&v), vec![0., 1., 3., 2.]);
    assert_eq!(i.to_vec::<i64>().unwrap(), vec![1, 0, 1, 0]);
    let (v, _) = x.topk(0, 1, true, true).unwrap();
    assert_eq!(v.shape(), &[2, 0]);
    assert!(matches!(x.topk(5, 1, true, true), Err(Error::Index { .. })));
}

#[test]
fn sort_topk_gradcheck() {
    let x = t(&[0.3, -1.2, 2.5, 0.7, 1.1, -0.4], &[2, 3]);
    check(|x| Ok(x[0].sort(1, false)?.0), std::slice::from_ref(&x));
    check(|x| Ok(x[0].t()?.sort(1, true)?.0), std::slice::from_ref(&x));
    check(
        |x| Ok(x[0].topk(2, 1, true, false)?.0),
        std::slice::from_ref(&x),
    );
    check(|x| Ok(x[0].topk(1, 0, false, true)?.0), &[x]);
}

// ---- one_hot -------------------------------------------------------------------------------

#[test]
fn one_hot_values_and_errors() {
    // F.one_hot(torch.tensor([2,0,1]))
    let y = ti(&[2, 0, 1], &[3]).one_hot(-1).unwrap();
    assert_eq!(y.dtype(), DType::I64);
    assert_eq!(y.to_vec::<i64>().unwrap(), vec![0, 0, 1, 1, 0, 0, 0, 1, 0]);
    let y = ti(&[2, 4], &[2, 1]).one_hot(5).unwrap();
    assert_eq!(y.shape(), &[2, 1, 5]);
    assert_eq!(
        y.to_vec::<i64>().unwrap(),
        vec![0, 0, 1, 0, 0, 0, 0, 0, 0, 1]
    );
    assert_eq!(
        Tensor::scalar(1i64)
            .one_hot(3)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![0, 1, 0]
    );
    assert_eq!(ti(&[], &[0]).one_hot(4).unwrap().shape(), &[0, 4]);
    assert!(matches!(
        ti(&[], &[0]).one_hot(-1),
        Err(Error::Invalid { .. })
    ));
    assert!(matches!(
        ti(&[3], &[1]).one_hot(3),
        Err(Error::Invalid { .. })
    ));
    assert!(matches!(
        ti(&[-1], &[1]).one_hot(3),
        Err(Error::Invalid { .. })
    ));
    assert!(matches!(
        tf(&[1.0], &[1]).one_hot(3),
        Err(Error::DType { .. })
    ));
}

#[test]
fn empty_tensors_do_not_panic() {
    let e = Tensor::zeros(&[0, 3], DType::F32, Device::Cpu).unwrap();
    let (v, i) = e.sort(1, false).unwrap();
    assert_eq!((v.shape(), i.shape()), (&[0usize, 3][..], &[0usize, 3][..]));
    let (v, _) = e.sort(0, true).unwrap();
    assert_eq!(v.shape(), &[0, 3]);
    let (v, _) = Tensor::zeros(&[3, 0], DType::F32, Device::Cpu)
        .unwrap()
        .topk(0, 1, true, true)
        .unwrap();
    assert_eq!(v.shape(), &[3, 0]);
    let x = arange(&[2, 3]);
    let none = ti(&[], &[0, 3]);
    assert_eq!(x.gather(0, &none).unwrap().shape(), &[0, 3]);
    assert_eq!(
        vals(
            &x.scatter_add(
                0,
                &none,
                &Tensor::zeros(&[0, 3], DType::F64, Device::Cpu).unwrap()
            )
            .unwrap()
        ),
        vals(&x)
    );
    assert_eq!(vals(&x.scatter_value(0, &none, 1.0).unwrap()), vals(&x));
    let src = Tensor::zeros(&[0, 3], DType::F64, Device::Cpu).unwrap();
    assert_eq!(
        vals(&x.index_add(0, &ti(&[], &[0]), &src).unwrap()),
        vals(&x)
    );
    assert_eq!(
        e.index_select(1, &ti(&[2, 2], &[2])).unwrap().shape(),
        &[0, 2]
    );
    assert_eq!(
        e.masked_select(&Tensor::from_vec(vec![true; 3], &[3]).unwrap())
            .unwrap()
            .shape(),
        &[0]
    );
    assert_eq!(e.nonzero().unwrap().shape(), &[0, 2]);
    // Gradients through empty index ops.
    check(|x| x[0].gather(0, &none), &[arange(&[2, 3])]);
}

#[test]
fn zero_dim_index_ops() {
    // torch.zeros(3).scatter(0, torch.tensor(1), torch.tensor([5.])): a 0-d index counts as 1-D.
    let z = Tensor::zeros(&[3], DType::F64, Device::Cpu).unwrap();
    let y = z
        .scatter(0, &Tensor::scalar(1i64), &t(&[5.], &[1]))
        .unwrap();
    assert_eq!(vals(&y), vec![0., 5., 0.]);
    check(
        |x| x[0].scatter(0, &Tensor::scalar(1i64), &x[1]),
        &[arange(&[3]), t(&[5.], &[1])],
    );
    check(
        |x| x[0].scatter_add(0, &Tensor::scalar(0i64), &x[1]),
        &[Tensor::scalar(1.0f64), Tensor::scalar(2.0f64)],
    );
    check(
        |x| x[0].index_add(0, &ti(&[0], &[1]), &x[1]),
        &[Tensor::scalar(1.0f64), Tensor::scalar(2.0f64)],
    );
    check(|x| Ok(x[0].sort(0, true)?.0), &[Tensor::scalar(1.0f64)]);
}
