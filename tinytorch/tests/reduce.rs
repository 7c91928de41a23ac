//! Reductions, scans and softmax against values computed with PyTorch 2.x (hard-coded below),
//! f64 gradient checks, non-contiguous / 0-d / empty inputs and error cases.

mod common;
use common::{assert_close_to, assert_values, backward_sum, gradcheck64, t64, vals64, Tol};

use tinytorch::{DType, Device, Result, Tensor};

/// The tolerances of the value checks (NaN matching NaN): f64 results, `1e-12 * (1 + |want|)`;
/// f32 results, `1e-6 * (1 + |want|)`; half-precision ones, `1e-3 * (1 + |want|)`; and
/// exact ones (maxima, integers, sums of small integers).
const F64_TOL: Tol = Tol::scaled(1e-12).equal_nan();
const F32_TOL: Tol = Tol::scaled(1e-6).equal_nan();
const HALF_TOL: Tol = Tol::scaled(1e-3).equal_nan();
const EXACT: Tol = Tol::EXACT.equal_nan();

/// The 2x3 matrix used by most value tests.
fn x23() -> Tensor {
    t64(&[1.5, -2.0, 3.0, 0.5, 4.0, -1.0], &[2, 3])
}

/// f64 gradcheck of a one-input function.
fn check(f: impl Fn(&[Tensor]) -> Result<Tensor>, input: &Tensor) {
    gradcheck64(f, std::slice::from_ref(input));
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
    let s = x.sum(&[1], true).unwrap();
    assert_eq!(s.shape(), &[2, 1]);
    assert_close_to(&s, &[2.5, 3.5], F64_TOL, "s");
    assert_values!(F64_TOL;
        x.sum(&[0], false) => [2.0, 2.0, 2.0],
        x.mean_all() => [1.0],
        x.mean(&[1], false) => [0.8333333333333334, 1.1666666666666667],
        x.prod(&[1], false) => [-9.0, -2.0],
    );
    let x3 = Tensor::arange(0., 24., 1., DType::F64, Device::Cpu)
        .unwrap()
        .reshape(&[2, 3, 4])
        .unwrap();
    assert_values!(F64_TOL; x3.sum(&[0, 2], false) => [60.0, 92.0, 124.0]);
    let a = x3.amax(&[0, -1], true).unwrap();
    assert_eq!(a.shape(), &[1, 3, 1]);
    assert_close_to(&a, &[15.0, 19.0, 23.0], EXACT, "a");
}

#[test]
fn statistics_values() {
    let x = x23();
    assert_values!(F64_TOL;
        x.var(&[1], 1.0, false) => [6.583333333333334, 6.583333333333334],
        x.var(&[0], 0.0, false) => [0.25, 9.0, 4.0],
        x.var(&[], 1.0, false) => [5.3],
        x.std(&[1], 1.0, false) => [2.565800719723442, 2.565800719723442],
        x.logsumexp(&[1], false) => [3.2069069336734133, 4.036269565124779],
        x.logsumexp(&[0, 1], false) => [4.398358933882533],
        x.norm(2.0, &[1], false) => [3.905124837953327, 4.153311931459037],
        x.norm(1.0, &[], false) => [12.0],
    );
    assert_values!(EXACT; x.norm(f64::INFINITY, &[0], false) => [1.5, 4.0, 3.0]);
    let f = Tensor::from_vec(vec![1.0f32, 2., 3.], &[3]).unwrap();
    assert_values!(F32_TOL; f.std(&[0], 0.0, false) => [0.8164966106414795]);
}

#[test]
fn max_min_arg_values() {
    let x = x23();
    let (v, i) = x.max_dim(1, false).unwrap();
    assert_close_to(&v, &[3.0, 4.0], EXACT, "v");
    assert_eq!(i.to_vec::<i64>().unwrap(), vec![2, 1]);
    let (v, i) = x.min_dim(0, false).unwrap();
    assert_close_to(&v, &[0.5, -2.0, -1.0], EXACT, "v");
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
    assert_values!(EXACT;
        x.max_all() => [4.0],
        x.min_all() => [-2.0],
    );
    // NaN is the max, and argmax points at it (PyTorch).
    let n = Tensor::from_vec(vec![1.0f32, f32::NAN, 3.0], &[3]).unwrap();
    assert!(n.max_all().unwrap().item::<f32>().unwrap().is_nan());
    assert_eq!(n.argmax(None, false).unwrap().item::<i64>().unwrap(), 1);
}

#[test]
fn scan_and_softmax_values() {
    let x = x23();
    #[rustfmt::skip]
    let sm = [
        0.18142608857948594, 0.005478593159646257, 0.8130953182608678,
        0.0291217615374784, 0.9643802951468596, 0.00649794331566194,
    ];
    #[rustfmt::skip]
    let lsm = [
        -0.31326168751822286, -6.00247568513773, -0.01814992791780978,
        -1.3132616875182228, -0.002475685137730357, -4.0181499279178094,
    ];
    assert_values!(F64_TOL;
        x.cumsum(1) => [1.5, -0.5, 2.5, 0.5, 4.5, 3.5],
        x.cumprod(0) => [1.5, -2.0, 3.0, 0.75, -8.0, -3.0],
        x.softmax(1) => sm,
        x.log_softmax(0) => lsm,
    );
    // Non-last dim through a transposed input, f32.
    let xf = x.to_dtype(DType::F32).unwrap();
    let y = xf.t().unwrap().softmax(0).unwrap();
    assert_eq!(y.dtype(), DType::F32);
    assert_close_to(&y.t().unwrap(), &sm, F32_TOL, "y.t()");
}

#[test]
fn softmax_of_extreme_inputs_is_finite() {
    let s = Tensor::from_vec(vec![1000.0f32, -1000.0, 0.0, 999.0], &[4]).unwrap();
    assert_values!(F32_TOL;
        s.softmax(0) => [0.7310585975646973, 0.0, 0.0, 0.2689414322376251],
        s.log_softmax(0) =>
            [-0.31326165795326233, -2000.313232421875, -1000.313232421875, -1.31326162815094],
        s.logsumexp(&[0], false) => [1000.313232421875],
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
    assert_close_to(&s, &[10.5], EXACT, "s");
    assert_values!(EXACT; h.mean_all() => [2.625]);
    assert_values!(HALF_TOL;
        h.softmax(0) => [0.022613525390625, 0.06146240234375, 0.1671142578125, 0.7490234375],
    );
    // 4096 ones: an f16 accumulator would stop at 2048.
    let ones = Tensor::ones(&[4096], DType::BF16, Device::Cpu).unwrap();
    assert_values!(EXACT; ones.sum_all() => [4096.0]);
}

/// Checks that `op` gives the same values (within `tol`) on the non-contiguous `view` as on
/// `copy`, its contiguous copy; `what` names the op.
#[track_caller]
fn assert_same_on_copy(
    op: impl Fn(&Tensor) -> Result<Tensor>,
    view: &Tensor,
    copy: &Tensor,
    tol: Tol,
    what: &str,
) {
    let want = vals64(&op(copy).unwrap());
    assert_close_to(&op(view).unwrap(), &want, tol, what);
}

#[test]
fn non_contiguous_inputs() {
    let base = x345();
    let p = base.permute(&[2, 0, 1]).unwrap();
    let pc = p.contiguous_copy().unwrap();
    for dims in [vec![0isize], vec![1], vec![2], vec![0, 2], vec![]] {
        assert_same_on_copy(|t| t.sum(&dims, false), &p, &pc, F64_TOL, "sum");
        assert_same_on_copy(|t| t.amax(&dims, true), &p, &pc, EXACT, "amax");
        assert_same_on_copy(|t| t.prod(&dims, false), &p, &pc, F64_TOL, "prod");
    }
    let s = base.slice(2, Some(1), None, 2).unwrap();
    let sc = s.contiguous_copy().unwrap();
    for d in 0..3isize {
        assert_same_on_copy(|t| t.cumsum(d), &s, &sc, F64_TOL, "cumsum");
        assert_same_on_copy(|t| t.cumprod(d), &s, &sc, F64_TOL, "cumprod");
        assert_same_on_copy(|t| t.softmax(d), &s, &sc, F64_TOL, "softmax");
        assert_same_on_copy(|t| t.log_softmax(d), &s, &sc, F64_TOL, "log_softmax");
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
    assert_values!(F32_TOL;
        xf.t().unwrap().sum(&[1], false) => expected,
        xf.sum(&[0], false) => expected,
    );
    // Broadcast (stride 0) input.
    let e = Tensor::from_vec(vec![1.0f32, 2.0], &[2, 1])
        .unwrap()
        .expand(&[2, 1000])
        .unwrap();
    assert_values!(EXACT; e.sum(&[1], false) => [1000.0, 2000.0]);
}

#[test]
fn zero_dim_and_empty() {
    let z = Tensor::scalar(2.5f64);
    assert_values!(EXACT;
        z.sum(&[0], false) => [2.5],
        z.sum(&[-1], true) => [2.5],
    );
    assert_eq!(z.sum(&[0], true).unwrap().shape(), &[] as &[usize]);
    let (v, i) = z.max_dim(0, false).unwrap();
    assert_eq!((v.shape(), i.item::<i64>().unwrap()), (&[] as &[usize], 0));
    assert_eq!(z.argmax(Some(0), false).unwrap().item::<i64>().unwrap(), 0);
    assert_values!(EXACT;
        z.softmax(0) => [1.0],
        z.log_softmax(-1) => [0.0],
        z.cumsum(0) => [2.5],
        z.norm(2.0, &[], false) => [2.5],
    );
    check(|x| x[0].softmax(0), &z);
    check(|x| x[0].cumprod(0), &z);

    let e = Tensor::zeros(&[0, 3], DType::F32, Device::Cpu).unwrap();
    assert_values!(EXACT;
        e.sum(&[0], false) => [0.0; 3],
        e.prod(&[0], false) => [1.0; 3],
        e.sum_all() => [0.0],
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
    assert_values!(F64_TOL;
        p.grad() => [0.0, 6.0, 0.0, 0.0, 0.0, 0.0, 6.0, 3.0, 2.0],
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
    // The gradient at v of the reduction `f` gives.
    let grad = |f: &dyn Fn(&Tensor) -> Tensor| {
        let t = t64(&v, &[4]).requires_grad_(true).unwrap();
        f(&t).backward().unwrap();
        t.grad()
    };
    let max_dim = |t: &Tensor| {
        let (val, idx) = t.max_dim(0, false).unwrap();
        assert_eq!(idx.item::<i64>().unwrap(), 1);
        val
    };
    assert_values!(EXACT;
        grad(&|t| t.amax(&[], false).unwrap()) => [0.0, 0.5, 0.5, 0.0],
        grad(&|t| t.max_all().unwrap()) => [0.0, 0.5, 0.5, 0.0],
        grad(&max_dim) => [0.0, 1.0, 0.0, 0.0],
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
    assert_values!(EXACT;
        n.grad() => [0.0, 0.0, 0.0],
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
    assert_values!(F64_TOL;
        c.grad() => [1.0, 22.0, 0.0, 0.0, 0.0],
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
    // The total of the sums along `dim`, in f64.
    let total_along = |dim: isize| {
        let sums = m.sum(&[dim], false).unwrap();
        sums.sum_all().unwrap().item::<f32>().unwrap() as f64
    };
    let (rows, cols) = (total_along(1), total_along(0));
    let exact2: f64 = m.to_vec::<f32>().unwrap().iter().map(|&x| x as f64).sum();
    assert!(
        (rows - exact2).abs() <= 1e-5 * exact2.abs()
            && (cols - exact2).abs() <= 1e-5 * exact2.abs()
    );
}
