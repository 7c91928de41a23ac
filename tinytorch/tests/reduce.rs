//! Reductions, scans and softmax against values computed with PyTorch 2.x (hard-coded below),
//! f64 gradient checks, non-contiguous / 0-d / empty inputs and error cases.

mod common;
use common::{assert_close_to, backward_sum, Tol};

use tinytorch::autograd::gradcheck::gradcheck;
use tinytorch::{DType, Device, Result, Tensor};

fn t64(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

/// The 2x3 matrix used by most value tests.
fn x23() -> Tensor {
    t64(&[1.5, -2.0, 3.0, 0.5, 4.0, -1.0], &[2, 3])
}

/// f64 gradcheck of a one-input function.
fn check(f: impl Fn(&[Tensor]) -> Result<Tensor>, input: &Tensor) {
    gradcheck(f, std::slice::from_ref(input), 1e-6, 1e-7, 1e-5).unwrap();
}

/// A 3x4x5 f64 input with distinct values (no ties), not too close to zero.
fn x345() -> Tensor {
    let v: Vec<f64> = (0..60)
        .map(|i| ((i * 37 % 61) as f64 - 30.0) / 10.0 + 0.05)
        .collect();
    t64(&v, &[3, 4, 5])
}

// ---- values against PyTorch --------------------------------------------------------------

#[test]
fn sum_mean_prod_values() {
    let x = x23();
    assert_close_to(
        &x.sum(&[0], false).unwrap(),
        &[2.0, 2.0, 2.0],
        Tol::scaled(1e-12).equal_nan(),
        "x.sum(&[0], false)",
    );
    let s = x.sum(&[1], true).unwrap();
    assert_eq!(s.shape(), &[2, 1]);
    assert_close_to(&s, &[2.5, 3.5], Tol::scaled(1e-12).equal_nan(), "s");
    assert_close_to(
        &x.mean_all().unwrap(),
        &[1.0],
        Tol::scaled(1e-12).equal_nan(),
        "x.mean_all()",
    );
    assert_close_to(
        &x.mean(&[1], false).unwrap(),
        &[0.8333333333333334, 1.1666666666666667],
        Tol::scaled(1e-12).equal_nan(),
        "x.mean(&[1], false)",
    );
    assert_close_to(
        &x.prod(&[1], false).unwrap(),
        &[-9.0, -2.0],
        Tol::scaled(1e-12).equal_nan(),
        "x.prod(&[1], false)",
    );
    let x3 = Tensor::arange(0., 24., 1., DType::F64, Device::Cpu)
        .unwrap()
        .reshape(&[2, 3, 4])
        .unwrap();
    assert_close_to(
        &x3.sum(&[0, 2], false).unwrap(),
        &[60.0, 92.0, 124.0],
        Tol::scaled(1e-12).equal_nan(),
        "x3.sum(&[0, 2], false)",
    );
    let a = x3.amax(&[0, -1], true).unwrap();
    assert_eq!(a.shape(), &[1, 3, 1]);
    assert_close_to(&a, &[15.0, 19.0, 23.0], Tol::EXACT.equal_nan(), "a");
}

#[test]
fn statistics_values() {
    let x = x23();
    assert_close_to(
        &x.var(&[1], 1.0, false).unwrap(),
        &[6.583333333333334, 6.583333333333334],
        Tol::scaled(1e-12).equal_nan(),
        "x.var(&[1], 1.0, false)",
    );
    assert_close_to(
        &x.var(&[0], 0.0, false).unwrap(),
        &[0.25, 9.0, 4.0],
        Tol::scaled(1e-12).equal_nan(),
        "x.var(&[0], 0.0, false)",
    );
    assert_close_to(
        &x.var(&[], 1.0, false).unwrap(),
        &[5.3],
        Tol::scaled(1e-12).equal_nan(),
        "x.var(&[], 1.0, false)",
    );
    assert_close_to(
        &x.std(&[1], 1.0, false).unwrap(),
        &[2.565800719723442, 2.565800719723442],
        Tol::scaled(1e-12).equal_nan(),
        "x.std(&[1], 1.0, false)",
    );
    assert_close_to(
        &x.logsumexp(&[1], false).unwrap(),
        &[3.2069069336734133, 4.036269565124779],
        Tol::scaled(1e-12).equal_nan(),
        "x.logsumexp(&[1], false)",
    );
    assert_close_to(
        &x.logsumexp(&[0, 1], false).unwrap(),
        &[4.398358933882533],
        Tol::scaled(1e-12).equal_nan(),
        "x.logsumexp(&[0, 1], false)",
    );
    assert_close_to(
        &x.norm(2.0, &[1], false).unwrap(),
        &[3.905124837953327, 4.153311931459037],
        Tol::scaled(1e-12).equal_nan(),
        "x.norm(2.0, &[1], false)",
    );
    assert_close_to(
        &x.norm(1.0, &[], false).unwrap(),
        &[12.0],
        Tol::scaled(1e-12).equal_nan(),
        "x.norm(1.0, &[], false)",
    );
    assert_close_to(
        &x.norm(f64::INFINITY, &[0], false).unwrap(),
        &[1.5, 4.0, 3.0],
        Tol::EXACT.equal_nan(),
        "x.norm(f64::INFINITY, &[0], false)",
    );
    let f = Tensor::from_vec(vec![1.0f32, 2., 3.], &[3]).unwrap();
    assert_close_to(
        &f.std(&[0], 0.0, false).unwrap(),
        &[0.8164966106414795],
        Tol::scaled(1e-6).equal_nan(),
        "f.std(&[0], 0.0, false)",
    );
}

#[test]
fn max_min_arg_values() {
    let x = x23();
    let (v, i) = x.max_dim(1, false).unwrap();
    assert_close_to(&v, &[3.0, 4.0], Tol::EXACT.equal_nan(), "v");
    assert_eq!(i.to_vec::<i64>().unwrap(), vec![2, 1]);
    let (v, i) = x.min_dim(0, false).unwrap();
    assert_close_to(&v, &[0.5, -2.0, -1.0], Tol::EXACT.equal_nan(), "v");
    assert_eq!(i.to_vec::<i64>().unwrap(), vec![1, 0, 1]);
    let (v, i) = x.max_dim(-1, true).unwrap();
    assert_eq!((v.shape(), i.shape()), (&[2usize, 1][..], &[2usize, 1][..]));
    assert_eq!(x.argmax(None, false).unwrap().item::<i64>().unwrap(), 4);
    assert_eq!(x.argmax(None, true).unwrap().shape(), &[1, 1]);
    assert_eq!(
        x.argmin(Some(1), false).unwrap().to_vec::<i64>().unwrap(),
        vec![1, 2]
    );
    assert_eq!(
        x.argmax(Some(1), true).unwrap().to_vec::<i64>().unwrap(),
        vec![2, 1]
    );
    assert_close_to(
        &x.max_all().unwrap(),
        &[4.0],
        Tol::EXACT.equal_nan(),
        "x.max_all()",
    );
    assert_close_to(
        &x.min_all().unwrap(),
        &[-2.0],
        Tol::EXACT.equal_nan(),
        "x.min_all()",
    );
    // NaN is the max, and argmax points at it (PyTorch).
    let n = Tensor::from_vec(vec![1.0f32, f32::NAN, 3.0], &[3]).unwrap();
    assert!(n.max_all().unwrap().item::<f32>().unwrap().is_nan());
    assert_eq!(n.argmax(None, false).unwrap().item::<i64>().unwrap(), 1);
}

#[test]
fn scan_and_softmax_values() {
    let x = x23();
    assert_close_to(
        &x.cumsum(1).unwrap(),
        &[1.5, -0.5, 2.5, 0.5, 4.5, 3.5],
        Tol::scaled(1e-12).equal_nan(),
        "x.cumsum(1)",
    );
    assert_close_to(
        &x.cumprod(0).unwrap(),
        &[1.5, -2.0, 3.0, 0.75, -8.0, -3.0],
        Tol::scaled(1e-12).equal_nan(),
        "x.cumprod(0)",
    );
    let sm = [
        0.18142608857948594,
        0.005478593159646257,
        0.8130953182608678,
        0.0291217615374784,
        0.9643802951468596,
        0.00649794331566194,
    ];
    assert_close_to(
        &x.softmax(1).unwrap(),
        &sm,
        Tol::scaled(1e-12).equal_nan(),
        "x.softmax(1)",
    );
    let lsm = [
        -0.31326168751822286,
        -6.00247568513773,
        -0.01814992791780978,
        -1.3132616875182228,
        -0.002475685137730357,
        -4.0181499279178094,
    ];
    assert_close_to(
        &x.log_softmax(0).unwrap(),
        &lsm,
        Tol::scaled(1e-12).equal_nan(),
        "x.log_softmax(0)",
    );
    // Non-last dim through a transposed input, f32.
    let xf = x.to_dtype(DType::F32).unwrap();
    let y = xf.t().unwrap().softmax(0).unwrap();
    assert_eq!(y.dtype(), DType::F32);
    assert_close_to(&y.t().unwrap(), &sm, Tol::scaled(1e-6).equal_nan(), "y.t()");
}

#[test]
fn softmax_of_extreme_inputs_is_finite() {
    let s = Tensor::from_vec(vec![1000.0f32, -1000.0, 0.0, 999.0], &[4]).unwrap();
    assert_close_to(
        &s.softmax(0).unwrap(),
        &[0.7310585975646973, 0.0, 0.0, 0.2689414322376251],
        Tol::scaled(1e-6).equal_nan(),
        "s.softmax(0)",
    );
    assert_close_to(
        &s.log_softmax(0).unwrap(),
        &[
            -0.31326165795326233,
            -2000.313232421875,
            -1000.313232421875,
            -1.31326162815094,
        ],
        Tol::scaled(1e-6).equal_nan(),
        "s.log_softmax(0)",
    );
    assert_close_to(
        &s.logsumexp(&[0], false).unwrap(),
        &[1000.313232421875],
        Tol::scaled(1e-6).equal_nan(),
        "s.logsumexp(&[0], false)",
    );
    let big = Tensor::from_vec(vec![1000.0f64, 1000.0, -1000.0, -1000.0], &[2, 2]).unwrap();
    for y in [
        big.softmax(1).unwrap(),
        big.log_softmax(0).unwrap(),
        big.logsumexp(&[1], false).unwrap(),
    ] {
        assert!(y.to_vec_f64().unwrap().iter().all(|v| v.is_finite()));
    }
}

#[test]
fn integer_and_bool_dtypes() {
    let xi = Tensor::from_vec(vec![1i64, 2, 3, 4, 5, 6], &[2, 3]).unwrap();
    let s = xi.sum(&[0], false).unwrap();
    assert_eq!(s.dtype(), DType::I64);
    assert_eq!(s.to_vec::<i64>().unwrap(), vec![5, 7, 9]);
    assert_eq!(xi.prod(&[], false).unwrap().item::<i64>().unwrap(), 720);
    assert_eq!(xi.max_all().unwrap().item::<i64>().unwrap(), 6);
    assert_eq!(
        xi.cumsum(1).unwrap().to_vec::<i64>().unwrap(),
        vec![1, 3, 6, 4, 9, 15]
    );
    let u = Tensor::from_vec(vec![200u8, 100, 7], &[3]).unwrap();
    assert_eq!(u.sum_all().unwrap().item::<i64>().unwrap(), 307);
    assert_eq!(u.amax(&[], false).unwrap().item::<u8>().unwrap(), 200);
    assert_eq!(u.argmin(None, false).unwrap().item::<i64>().unwrap(), 2);
    let b = Tensor::from_vec(vec![true, false, true], &[3]).unwrap();
    let bs = b.sum_all().unwrap();
    assert_eq!((bs.dtype(), bs.item::<i64>().unwrap()), (DType::I64, 2));
    assert!(!b.all().unwrap().item::<bool>().unwrap());
    assert!(b.any().unwrap().item::<bool>().unwrap());
    assert_eq!(b.cumsum(0).unwrap().dtype(), DType::I64);
    assert!(b.max_all().unwrap().item::<bool>().unwrap());
    let m = Tensor::from_vec(vec![1.0f32, 0.0, 2.0, 3.0], &[2, 2]).unwrap();
    assert_eq!(
        m.all_dims(&[1], false).unwrap().to_vec::<bool>().unwrap(),
        vec![false, true]
    );
    assert_eq!(m.any_dims(&[0], true).unwrap().shape(), &[1, 2]);
    // PyTorch refuses softmax of integers (cast first); logsumexp computes them in f32.
    assert!(xi.softmax(1).is_err());
    assert_eq!(
        xi.to_dtype(DType::F32).unwrap().softmax(1).unwrap().dtype(),
        DType::F32
    );
    assert_eq!(xi.logsumexp(&[1], false).unwrap().dtype(), DType::F32);
}

#[test]
fn half_types_accumulate_in_f32() {
    let h = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.5], &[4])
        .unwrap()
        .to_dtype(DType::F16)
        .unwrap();
    let s = h.sum_all().unwrap();
    assert_eq!(s.dtype(), DType::F16);
    assert_close_to(&s, &[10.5], Tol::EXACT.equal_nan(), "s");
    assert_close_to(
        &h.mean_all().unwrap(),
        &[2.625],
        Tol::EXACT.equal_nan(),
        "h.mean_all()",
    );
    assert_close_to(
        &h.softmax(0).unwrap(),
        &[
            0.022613525390625,
            0.06146240234375,
            0.1671142578125,
            0.7490234375,
        ],
        Tol::scaled(1e-3).equal_nan(),
        "h.softmax(0)",
    );
    // 4096 ones: an f16 accumulator would stop at 2048.
    let ones = Tensor::ones(&[4096], DType::BF16, Device::Cpu).unwrap();
    assert_close_to(
        &ones.sum_all().unwrap(),
        &[4096.0],
        Tol::EXACT.equal_nan(),
        "ones.sum_all()",
    );
}

#[test]
fn non_contiguous_inputs() {
    let base = x345();
    let p = base.permute(&[2, 0, 1]).unwrap();
    let pc = p.contiguous_copy().unwrap();
    for dims in [vec![0isize], vec![1], vec![2], vec![0, 2], vec![]] {
        assert_close_to(
            &p.sum(&dims, false).unwrap(),
            &pc.sum(&dims, false).unwrap().to_vec_f64().unwrap(),
            Tol::scaled(1e-12).equal_nan(),
            "p.sum(&dims, false)",
        );
        assert_close_to(
            &p.amax(&dims, true).unwrap(),
            &pc.amax(&dims, true).unwrap().to_vec_f64().unwrap(),
            Tol::EXACT.equal_nan(),
            "p.amax(&dims, true)",
        );
        assert_close_to(
            &p.prod(&dims, false).unwrap(),
            &pc.prod(&dims, false).unwrap().to_vec_f64().unwrap(),
            Tol::scaled(1e-12).equal_nan(),
            "p.prod(&dims, false)",
        );
    }
    let s = base.slice(2, Some(1), None, 2).unwrap();
    let sc = s.contiguous_copy().unwrap();
    for d in 0..3isize {
        assert_close_to(
            &s.cumsum(d).unwrap(),
            &sc.cumsum(d).unwrap().to_vec_f64().unwrap(),
            Tol::scaled(1e-12).equal_nan(),
            "s.cumsum(d)",
        );
        assert_close_to(
            &s.cumprod(d).unwrap(),
            &sc.cumprod(d).unwrap().to_vec_f64().unwrap(),
            Tol::scaled(1e-12).equal_nan(),
            "s.cumprod(d)",
        );
        assert_close_to(
            &s.softmax(d).unwrap(),
            &sc.softmax(d).unwrap().to_vec_f64().unwrap(),
            Tol::scaled(1e-12).equal_nan(),
            "s.softmax(d)",
        );
        assert_close_to(
            &s.log_softmax(d).unwrap(),
            &sc.log_softmax(d).unwrap().to_vec_f64().unwrap(),
            Tol::scaled(1e-12).equal_nan(),
            "s.log_softmax(d)",
        );
        assert_eq!(
            s.argmax(Some(d), false).unwrap().to_vec::<i64>().unwrap(),
            sc.argmax(Some(d), false).unwrap().to_vec::<i64>().unwrap()
        );
    }
    // f32 column sums of a transposed matrix (PyTorch values).
    let xf = Tensor::from_vec(
        vec![
            0.1f32, 0.2, 0.3, 0.4, 1.0, 2.0, 3.0, 4.0, -1.0, -2.0, -3.0, -4.0,
        ],
        &[3, 4],
    )
    .unwrap();
    let expected = [
        0.10000002384185791,
        0.20000004768371582,
        0.2999999523162842,
        0.40000009536743164,
    ];
    assert_close_to(
        &xf.t().unwrap().sum(&[1], false).unwrap(),
        &expected,
        Tol::scaled(1e-6).equal_nan(),
        "xf.t().sum(&[1], false)",
    );
    assert_close_to(
        &xf.sum(&[0], false).unwrap(),
        &expected,
        Tol::scaled(1e-6).equal_nan(),
        "xf.sum(&[0], false)",
    );
    // Broadcast (stride 0) input.
    let e = Tensor::from_vec(vec![1.0f32, 2.0], &[2, 1])
        .unwrap()
        .expand(&[2, 1000])
        .unwrap();
    assert_close_to(
        &e.sum(&[1], false).unwrap(),
        &[1000.0, 2000.0],
        Tol::EXACT.equal_nan(),
        "e.sum(&[1], false)",
    );
}

#[test]
fn zero_dim_and_empty() {
    let z = Tensor::scalar(2.5f64);
    assert_close_to(
        &z.sum(&[0], false).unwrap(),
        &[2.5],
        Tol::EXACT.equal_nan(),
        "z.sum(&[0], false)",
    );
    assert_close_to(
        &z.sum(&[-1], true).unwrap(),
        &[2.5],
        Tol::EXACT.equal_nan(),
        "z.sum(&[-1], true)",
    );
    assert_eq!(z.sum(&[0], true).unwrap().shape(), &[] as &[usize]);
    let (v, i) = z.max_dim(0, false).unwrap();
    assert_eq!((v.shape(), i.item::<i64>().unwrap()), (&[] as &[usize], 0));
    assert_eq!(z.argmax(Some(0), false).unwrap().item::<i64>().unwrap(), 0);
    assert_close_to(
        &z.softmax(0).unwrap(),
        &[1.0],
        Tol::EXACT.equal_nan(),
        "z.softmax(0)",
    );
    assert_close_to(
        &z.log_softmax(-1).unwrap(),
        &[0.0],
        Tol::EXACT.equal_nan(),
        "z.log_softmax(-1)",
    );
    assert_close_to(
        &z.cumsum(0).unwrap(),
        &[2.5],
        Tol::EXACT.equal_nan(),
        "z.cumsum(0)",
    );
    assert_close_to(
        &z.norm(2.0, &[], false).unwrap(),
        &[2.5],
        Tol::EXACT.equal_nan(),
        "z.norm(2.0, &[], false)",
    );
    check(|x| x[0].softmax(0), &z);
    check(|x| x[0].cumprod(0), &z);

    let e = Tensor::zeros(&[0, 3], DType::F32, Device::Cpu).unwrap();
    assert_close_to(
        &e.sum(&[0], false).unwrap(),
        &[0.0; 3],
        Tol::EXACT.equal_nan(),
        "e.sum(&[0], false)",
    );
    assert_close_to(
        &e.prod(&[0], false).unwrap(),
        &[1.0; 3],
        Tol::EXACT.equal_nan(),
        "e.prod(&[0], false)",
    );
    assert_close_to(
        &e.sum_all().unwrap(),
        &[0.0],
        Tol::EXACT.equal_nan(),
        "e.sum_all()",
    );
    assert!(e.mean_all().unwrap().item::<f32>().unwrap().is_nan());
    let lse = e.logsumexp(&[0], false).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(lse, vec![f32::NEG_INFINITY; 3]);
    assert_eq!(e.amax(&[1], false).unwrap().shape(), &[0]);
    assert_eq!(e.cumsum(0).unwrap().shape(), &[0, 3]);
    assert_eq!(e.softmax(1).unwrap().shape(), &[0, 3]);
    assert!(e.all().unwrap().item::<bool>().unwrap());
    assert!(!e.any().unwrap().item::<bool>().unwrap());
}

#[test]
fn errors() {
    let x = x23();
    let msg = |r: Result<Tensor>| r.unwrap_err().to_string();
    assert!(msg(x.sum(&[2], false)).contains("sum"));
    assert!(msg(x.sum(&[0, -2], false)).contains("more than once"));
    assert!(x.max_dim(3, false).is_err());
    assert!(x.softmax(-3).is_err());
    assert!(x.cumsum(2).is_err());
    let xi = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
    assert!(msg(xi.mean_all()).contains("mean"));
    assert!(xi.var(&[], 1.0, false).is_err());
    assert!(xi.norm(2.0, &[], false).is_err());
    let e = Tensor::zeros(&[0, 3], DType::F32, Device::Cpu).unwrap();
    assert!(msg(e.max_dim(0, false).map(|p| p.0)).contains("non-zero size"));
    assert!(msg(e.amax(&[0], false)).contains("empty"));
    assert!(msg(e.max_all()).contains("max"));
    assert!(e.argmax(None, false).is_err());
    assert!(e.argmin(Some(0), false).is_err());
}

// ---- gradients ----------------------------------------------------------------------------

#[test]
fn gradcheck_sum_mean_prod() {
    let x = x345();
    for (dims, keep) in [
        (vec![], false),
        (vec![1isize], false),
        (vec![0, 2], true),
        (vec![-1], true),
    ] {
        check(|t| t[0].sum(&dims, keep), &x);
        check(|t| t[0].mean(&dims, keep), &x);
        check(|t| t[0].prod(&dims, keep), &x);
    }
    check(|t| t[0].permute(&[2, 0, 1])?.sum(&[0, 1], false), &x);
}

#[test]
fn prod_gradient_with_zeros() {
    // PyTorch: [[0, 6, 0], [0, 0, 0], [6, 3, 2]].
    let p = t64(&[2.0, 0.0, 3.0, 0.0, 0.0, 1.0, 1.0, 2.0, 3.0], &[3, 3])
        .requires_grad_(true)
        .unwrap();
    backward_sum(p.prod(&[1], false));
    assert_close_to(
        &p.grad().unwrap(),
        &[0.0, 6.0, 0.0, 0.0, 0.0, 0.0, 6.0, 3.0, 2.0],
        Tol::scaled(1e-12).equal_nan(),
        "p.grad()",
    );
    check(
        |t| t[0].prod(&[1], false),
        &t64(&[2.0, 0.0, 3.0, 1.5, 0.5, 1.0], &[2, 3]),
    );
}

#[test]
fn gradcheck_max_min_family() {
    let x = x345();
    for (dims, keep) in [(vec![], false), (vec![1isize], false), (vec![0, 2], true)] {
        check(|t| t[0].amax(&dims, keep), &x);
        check(|t| t[0].amin(&dims, keep), &x);
    }
    check(|t| t[0].max_all(), &x);
    check(|t| t[0].min_all(), &x);
    for (d, keep) in [(0isize, false), (1, true), (-1, false)] {
        check(|t| Ok(t[0].max_dim(d, keep)?.0), &x);
        check(|t| Ok(t[0].min_dim(d, keep)?.0), &x);
    }
}

#[test]
fn max_gradient_ties() {
    // PyTorch: amax and max() split evenly, max(dim) goes to the first index.
    let v = [1.0, 3.0, 3.0, 2.0];
    let t = t64(&v, &[4]).requires_grad_(true).unwrap();
    t.amax(&[], false).unwrap().backward().unwrap();
    assert_close_to(
        &t.grad().unwrap(),
        &[0.0, 0.5, 0.5, 0.0],
        Tol::EXACT.equal_nan(),
        "t.grad()",
    );
    let t = t64(&v, &[4]).requires_grad_(true).unwrap();
    t.max_all().unwrap().backward().unwrap();
    assert_close_to(
        &t.grad().unwrap(),
        &[0.0, 0.5, 0.5, 0.0],
        Tol::EXACT.equal_nan(),
        "t.grad()",
    );
    let t = t64(&v, &[4]).requires_grad_(true).unwrap();
    let (val, idx) = t.max_dim(0, false).unwrap();
    assert_eq!(idx.item::<i64>().unwrap(), 1);
    val.backward().unwrap();
    assert_close_to(
        &t.grad().unwrap(),
        &[0.0, 1.0, 0.0, 0.0],
        Tol::EXACT.equal_nan(),
        "t.grad()",
    );
}

#[test]
fn gradcheck_statistics() {
    let x = x345();
    for (dims, keep) in [(vec![], false), (vec![1isize], false), (vec![0, 2], true)] {
        check(|t| t[0].var(&dims, 1.0, keep), &x);
        check(|t| t[0].std(&dims, 0.0, keep), &x);
        check(|t| t[0].logsumexp(&dims, keep), &x);
        check(|t| t[0].norm(2.0, &dims, keep), &x);
        check(|t| t[0].norm(1.0, &dims, keep), &x);
        check(|t| t[0].norm(f64::INFINITY, &dims, keep), &x);
        check(|t| t[0].norm(3.0, &dims, keep), &x);
    }
}

#[test]
fn norm_gradient_at_zero_is_zero() {
    let n = Tensor::zeros(&[3], DType::F64, Device::Cpu)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    n.norm(2.0, &[], false).unwrap().backward().unwrap();
    assert_close_to(
        &n.grad().unwrap(),
        &[0.0, 0.0, 0.0],
        Tol::EXACT.equal_nan(),
        "n.grad()",
    );
}

#[test]
fn gradcheck_scans() {
    let x = x345();
    for d in [0isize, 1, -1] {
        check(|t| t[0].cumsum(d), &x);
        check(|t| t[0].cumprod(d), &x);
    }
    check(|t| t[0].t()?.cumsum(0), &x23());
    // Zeros in the input: PyTorch gives [1, 22, 0, 0, 0] for this weight.
    let c = t64(&[2.0, 0.0, 3.0, 0.0, 5.0], &[5])
        .requires_grad_(true)
        .unwrap();
    let w = t64(&[1.0, 2.0, 3.0, 4.0, 5.0], &[5]);
    c.cumprod(0)
        .unwrap()
        .backward_with(Some(&w), false)
        .unwrap();
    assert_close_to(
        &c.grad().unwrap(),
        &[1.0, 22.0, 0.0, 0.0, 0.0],
        Tol::scaled(1e-12).equal_nan(),
        "c.grad()",
    );
    check(
        |t| t[0].cumprod(1),
        &t64(
            &[2.0, 0.0, 3.0, 1.5, 0.0, 1.2, 0.0, 2.0, 0.5, 1.5, 2.5, 0.7],
            &[3, 4],
        ),
    );
}

#[test]
fn gradcheck_softmax() {
    let x = x345();
    for d in [0isize, 1, 2, -1] {
        check(|t| t[0].softmax(d), &x);
        check(|t| t[0].log_softmax(d), &x);
    }
    check(|t| t[0].t()?.log_softmax(1), &x23());
    // Twice differentiable: the backward is built from differentiable ops.
    check(|t| t[0].softmax(1)?.mul(&t[0])?.log_softmax(0), &x23());
}

#[test]
fn large_parallel_sum_matches_f64() {
    // 4M + 3 elements: parallel blocked f32 sum against an f64 sum of the same values.
    let n = (1 << 22) + 3;
    let v: Vec<f32> = (0..n)
        .map(|i| ((i * 7919 % 1000) as f32) * 1e-3 - 0.3)
        .collect();
    let exact: f64 = v.iter().map(|&x| x as f64).sum();
    let t = Tensor::from_vec(v, &[n]).unwrap();
    let s = t.sum_all().unwrap().item::<f32>().unwrap() as f64;
    assert!((s - exact).abs() <= 1e-6 * exact.abs(), "{s} vs {exact}");
    // Same data as 2048 rows: parallel over rows, then over columns.
    let m = t
        .narrow(0, 0, 1 << 22)
        .unwrap()
        .reshape(&[2048, 2048])
        .unwrap();
    let rows = m
        .sum(&[1], false)
        .unwrap()
        .sum_all()
        .unwrap()
        .item::<f32>()
        .unwrap() as f64;
    let cols = m
        .sum(&[0], false)
        .unwrap()
        .sum_all()
        .unwrap()
        .item::<f32>()
        .unwrap() as f64;
    let exact2: f64 = m.to_vec::<f32>().unwrap().iter().map(|&x| x as f64).sum();
    assert!(
        (rows - exact2).abs() <= 1e-5 * exact2.abs()
            && (cols - exact2).abs() <= 1e-5 * exact2.abs()
    );
}
