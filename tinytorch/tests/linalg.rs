//! `torch.linalg` and the special functions in Rust: the factorisations against their
//! definitions (`A inv(A) = I`, `Q R = A` with `Q` orthogonal, `U S Vh = A`, `V diag(w) V^T =
//! A`, `L L^T = A`) on batched f64 and f32 inputs, the errors, and every backward rule
//! against central differences in f64 (the crate's `gradcheck`). The comparison with
//! PyTorch's values is in tinytorch-py/tests/test_linalg.py and test_special.py.

mod common;
use common::max_diff;

use tinytorch::autograd::gradcheck::gradcheck;
use tinytorch::ops::{MatrixNormOrd, QrMode};
use tinytorch::{DType, Device, Error, Tensor};

/// A fixed `shape` tensor of values `0.5 sin(0.37 i + 0.11 i^2 + phase)` in `dtype` (the
/// quadratic term makes its matrices full rank; `sin(a i + b)` alone gives rank 2).
fn filled(shape: &[usize], phase: f64, dtype: DType) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n)
        .map(|i| {
            let i = i as f64;
            0.5 * (0.37 * i + 0.11 * i * i + phase).sin()
        })
        .collect();
    Tensor::from_vec(v, shape).unwrap().to_dtype(dtype).unwrap()
}

fn eye(n: usize, dtype: DType) -> Tensor {
    Tensor::eye(n, n, dtype, Device::Cpu).unwrap()
}

/// Diagonally dominant, so invertible: `filled + 2 I`.
fn dd(shape: &[usize], phase: f64, dtype: DType) -> Tensor {
    let n = shape[shape.len() - 1];
    filled(shape, phase, dtype)
        .add(&eye(n, dtype).mul_scalar(2.0).unwrap())
        .unwrap()
}

fn mt(t: &Tensor) -> Tensor {
    t.transpose(-2, -1).unwrap()
}

#[test]
fn inverse_solve_and_determinant_meet_their_definitions() {
    for (dtype, tol) in [(DType::F64, 1e-12), (DType::F32, 1e-5)] {
        let a = dd(&[2, 4, 4], 0.3, dtype);
        let inv = a.linalg_inv().unwrap();
        assert!(
            max_diff(
                &a.matmul(&inv).unwrap(),
                &eye(4, dtype).expand(&[2, 4, 4]).unwrap()
            ) < tol
        );
        let b = filled(&[2, 4, 3], 0.9, dtype);
        let x = a.linalg_solve(&b, true).unwrap();
        assert!(max_diff(&a.matmul(&x).unwrap(), &b) < tol);
        // det of a product is the product of dets; slogdet agrees with det.
        let c = dd(&[2, 4, 4], 1.7, dtype);
        let lhs = a.matmul(&c).unwrap().linalg_det().unwrap();
        let rhs = a
            .linalg_det()
            .unwrap()
            .mul(&c.linalg_det().unwrap())
            .unwrap();
        assert!(max_diff(&lhs, &rhs) < tol * 100.0);
        let (sign, log) = a.linalg_slogdet().unwrap();
        assert!(
            max_diff(
                &sign.mul(&log.exp().unwrap()).unwrap(),
                &a.linalg_det().unwrap()
            ) < tol * 100.0
        );
        // A transposed view (non-contiguous) is read through its strides.
        let at = mt(&a);
        assert!(max_diff(&at.linalg_inv().unwrap(), &mt(&inv)) < tol);
    }
}

#[test]
fn factorisations_reconstruct_their_input() {
    let dtype = DType::F64;
    for &(m, n) in &[(5usize, 3usize), (3, 5), (4, 4)] {
        let a = filled(&[2, m, n], 0.1 * (m + n) as f64, dtype);
        let k = m.min(n);
        let (q, r) = a.linalg_qr(QrMode::Reduced).unwrap();
        assert!(max_diff(&q.matmul(&r).unwrap(), &a) < 1e-12);
        assert!(
            max_diff(
                &mt(&q).matmul(&q).unwrap(),
                &eye(k, dtype).expand(&[2, k as isize, k as isize]).unwrap()
            ) < 1e-12
        );
        let (u, s, vh) = a.linalg_svd(false).unwrap();
        let back = u
            .mul(&s.unsqueeze(-2).unwrap())
            .unwrap()
            .matmul(&vh)
            .unwrap();
        assert!(max_diff(&back, &a) < 1e-12);
        let (uf, _, vhf) = a.linalg_svd(true).unwrap();
        assert_eq!((uf.shape(), vhf.shape()), (&[2, m, m][..], &[2, n, n][..]));
        let eye_m = eye(m, dtype).expand(&[2, m as isize, m as isize]).unwrap();
        assert!(max_diff(&mt(&uf).matmul(&uf).unwrap(), &eye_m) < 1e-12);
    }
    let x = filled(&[3, 4, 4], 0.5, dtype);
    let spd = x.matmul(&mt(&x)).unwrap().add(&eye(4, dtype)).unwrap();
    let l = spd.linalg_cholesky(false).unwrap();
    assert!(max_diff(&l.matmul(&mt(&l)).unwrap(), &spd) < 1e-12);
    assert!(max_diff(&l.triu(1).unwrap(), &l.zeros_like().unwrap()) == 0.0);
    let (w, v) = spd.linalg_eigh(false).unwrap();
    let back = v
        .mul(&w.unsqueeze(-2).unwrap())
        .unwrap()
        .matmul(&mt(&v))
        .unwrap();
    assert!(max_diff(&back, &spd) < 1e-12);
}

#[test]
fn errors_name_the_problem() {
    let singular = Tensor::from_vec(vec![1.0f64, 2.0, 2.0, 4.0], &[2, 2]).unwrap();
    let e = singular.linalg_inv().unwrap_err();
    assert!(matches!(e, Error::LinAlg { .. }), "{e}");
    assert!(
        e.to_string().contains("The diagonal element 2 is zero"),
        "{e}"
    );
    let e = singular
        .linalg_solve(&Tensor::ones(&[2], DType::F64, Device::Cpu).unwrap(), true)
        .unwrap_err();
    assert!(
        matches!(e, Error::LinAlg { .. }) && e.to_string().contains("singular"),
        "{e}"
    );
    let e = eye(2, DType::F64)
        .neg()
        .unwrap()
        .linalg_cholesky(false)
        .unwrap_err();
    assert!(e.to_string().contains("leading minor of order 1"), "{e}");
    let e = Tensor::ones(&[2, 3], DType::F32, Device::Cpu)
        .unwrap()
        .linalg_det()
        .unwrap_err();
    assert!(
        matches!(e, Error::Shape { .. }) && e.to_string().contains("2 by 3"),
        "{e}"
    );
    let e = Tensor::ones(&[2, 2], DType::I64, Device::Cpu)
        .unwrap()
        .linalg_inv()
        .unwrap_err();
    assert!(matches!(e, Error::DType { .. }), "{e}");
}

#[test]
fn empty_batches_give_empty_results() {
    let a = Tensor::zeros(&[0, 3, 3], DType::F32, Device::Cpu).unwrap();
    assert_eq!(a.linalg_inv().unwrap().shape(), &[0, 3, 3]);
    assert_eq!(a.linalg_det().unwrap().shape(), &[0]);
    assert_eq!(a.linalg_svd(false).unwrap().1.shape(), &[0, 3]);
}

/// `gradcheck` of `f` at `inputs` (f64) with the tolerances every case here uses.
fn check(f: impl Fn(&[Tensor]) -> tinytorch::Result<Tensor>, inputs: &[Tensor]) {
    gradcheck(f, inputs, 1e-6, 1e-6, 1e-5).unwrap();
}

#[test]
fn backward_rules_match_central_differences() {
    let f64_ = DType::F64;
    let a = dd(&[2, 3, 3], 0.4, f64_);
    let b = filled(&[2, 3, 2], 0.8, f64_);
    check(|x| x[0].linalg_inv(), std::slice::from_ref(&a));
    check(|x| x[0].linalg_solve(&x[1], true), &[a.clone(), b.clone()]);
    check(
        |x| x[0].linalg_solve(&x[1], false),
        &[a.clone(), mt(&b).contiguous().unwrap()],
    );
    check(
        |x| x[0].linalg_solve_triangular(&x[1], true, true, false),
        &[a.clone(), b.clone()],
    );
    check(|x| x[0].linalg_det(), std::slice::from_ref(&a));
    check(
        |x| x[0].linalg_slogdet().map(|r| r.1),
        std::slice::from_ref(&a),
    );
    let singular = Tensor::from_vec(
        vec![1.0f64, 2.0, 3.0, 2.0, 4.0, 6.0, 0.5, 0.1, 0.7],
        &[3, 3],
    )
    .unwrap();
    check(|x| x[0].linalg_det(), &[singular]);
    // Cholesky of X X^T + I, and of a raw SPD leaf (PyTorch's non-symmetric convention).
    let x = filled(&[2, 3, 3], 1.1, f64_);
    check(
        |x| {
            let spd = x[0].matmul(&mt(&x[0]))?.add(&eye(3, DType::F64))?;
            spd.linalg_cholesky(false)
        },
        std::slice::from_ref(&x),
    );
    check(
        |x| {
            let spd = x[0].matmul(&mt(&x[0]))?.add(&eye(3, DType::F64))?;
            spd.linalg_cholesky(true)
        },
        std::slice::from_ref(&x),
    );
    for &(m, n) in &[(4usize, 3usize), (3, 4), (3, 3)] {
        let a = filled(&[m, n], 0.2 + m as f64, f64_);
        check(
            |x| {
                let (q, r) = x[0].linalg_qr(QrMode::Reduced)?;
                q.mul_scalar(0.7)?
                    .sum(&[], false)?
                    .add(&r.sum(&[], false)?)?
                    .add(&q.matmul(&r)?.sum(&[], false)?)
            },
            std::slice::from_ref(&a),
        );
        check(
            |x| {
                let (u, s, vh) = x[0].linalg_svd(false)?;
                // A sign-invariant function of every factor.
                let uu = u.mul(&u)?.sum(&[], false)?;
                let uv = u.matmul(&vh)?.mul(&x[0])?.sum(&[], false)?;
                uu.add(&uv)?.add(&s.sum(&[], false)?)
            },
            std::slice::from_ref(&a),
        );
        check(|x| x[0].linalg_svdvals(), std::slice::from_ref(&a));
        check(
            |x| x[0].linalg_matrix_norm(MatrixNormOrd::Nuc, [-2, -1], false),
            std::slice::from_ref(&a),
        );
        check(
            |x| x[0].linalg_matrix_norm(MatrixNormOrd::P(1.0), [-2, -1], false),
            std::slice::from_ref(&a),
        );
        check(|x| x[0].linalg_pinv(None), std::slice::from_ref(&a));
    }
    let s = filled(&[3, 3], 2.5, f64_);
    check(
        |x| {
            let sym = x[0].add(&mt(&x[0]))?;
            let (w, v) = sym.linalg_eigh(false)?;
            w.sum(&[], false)?
                .add(&v.mul(&v)?.mul_scalar(0.3)?.sum(&[], false)?)
        },
        std::slice::from_ref(&s),
    );
    // eigh reads one triangle but its gradient is for a symmetric input (as PyTorch's), so
    // the check perturbs a symmetric matrix.
    check(|x| x[0].add(&mt(&x[0]))?.linalg_eigvalsh(true), &[s]);
    check(|x| x[0].linalg_matrix_power(-2), &[a]);
}

#[test]
fn special_functions_and_their_gradients() {
    let x = Tensor::from_vec(vec![0.3f64, 1.7, 4.2, 9.5], &[4]).unwrap();
    // lgamma(n) = log((n-1)!), digamma(1) = -gamma, i0(0) = 1.
    let n = Tensor::from_vec(vec![1.0f64, 5.0], &[2]).unwrap();
    let lg = n.lgamma().unwrap().to_vec_f64().unwrap();
    assert!(lg[0].abs() < 1e-15 && (lg[1] - 24f64.ln()).abs() < 1e-14);
    let one = Tensor::from_vec(vec![1.0f64], &[1]).unwrap();
    assert!(
        (one.digamma().unwrap().to_vec_f64().unwrap()[0] + 0.577_215_664_901_532_9).abs() < 1e-14
    );
    assert_eq!(
        one.sub_scalar(1.0)
            .unwrap()
            .i0()
            .unwrap()
            .to_vec_f64()
            .unwrap(),
        vec![1.0]
    );
    let y = Tensor::from_vec(vec![-0.9f64, -0.2, 0.4, 0.95], &[4]).unwrap();
    assert!(max_diff(&y.erfinv().unwrap().erf().unwrap(), &y) < 1e-15);
    check(|t| t[0].erfinv(), std::slice::from_ref(&y));
    check(|t| t[0].erfc(), std::slice::from_ref(&y));
    check(|t| t[0].lgamma(), std::slice::from_ref(&x));
    check(|t| t[0].digamma(), std::slice::from_ref(&x));
    check(|t| t[0].i0(), std::slice::from_ref(&y));
    check(|t| t[0].i0e(), std::slice::from_ref(&y));
    check(|t| t[0].i1(), std::slice::from_ref(&y));
    check(|t| t[0].i1e(), &[y]);
    // f32 computes through f64 and rounds once.
    let x32 = x.to_dtype(DType::F32).unwrap();
    assert!(max_diff(&x32.lgamma().unwrap(), &x.lgamma().unwrap()) < 1e-5);
}
