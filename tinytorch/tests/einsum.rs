//! `Tensor::einsum` beyond the op table's PyTorch fixtures: the plans against a naive sum
//! over every index (larger and odder shapes than the fixtures), gradients by gradcheck, and
//! every documented error naming the op and the values at fault.

mod common;

use common::max_diff;
use tinytorch::autograd::gradcheck::gradcheck;
use tinytorch::{manual_seed, DType, Device, Error, Tensor};

fn randn(shape: &[usize]) -> Tensor {
    Tensor::randn(shape, DType::F64, Device::Cpu).unwrap()
}

/// `sum_{b,i,j,k,l} a[b,i,j,k] c[b,k,l,j]` for each (b, i, l): "bijk,bklj->bil" by loops.
fn naive_bijk_bklj(a: &Tensor, c: &Tensor) -> Tensor {
    let [nb, ni, nj, nk] = [a.shape()[0], a.shape()[1], a.shape()[2], a.shape()[3]];
    let nl = c.shape()[2];
    let (av, cv) = (a.to_vec_f64().unwrap(), c.to_vec_f64().unwrap());
    let mut out = vec![0.0; nb * ni * nl];
    for b in 0..nb {
        for i in 0..ni {
            for l in 0..nl {
                let mut s = 0.0;
                for j in 0..nj {
                    for k in 0..nk {
                        s += av[((b * ni + i) * nj + j) * nk + k]
                            * cv[((b * nk + k) * nl + l) * nj + j];
                    }
                }
                out[(b * ni + i) * nl + l] = s;
            }
        }
    }
    Tensor::from_vec(out, &[nb, ni, nl]).unwrap()
}

#[test]
fn two_contracted_indices_match_the_definition() {
    manual_seed(1);
    let (a, c) = (randn(&[3, 4, 5, 6]), randn(&[3, 6, 7, 5]));
    let got = Tensor::einsum("bijk,bklj->bil", &[&a, &c]).unwrap();
    assert!(max_diff(&got, &naive_bijk_bklj(&a, &c)) < 1e-12);
    // The same on transposed views.
    let at = a
        .transpose(1, 3)
        .unwrap()
        .contiguous()
        .unwrap()
        .transpose(1, 3)
        .unwrap();
    let got_t = Tensor::einsum("bijk,bklj->bil", &[&at, &c]).unwrap();
    assert!(max_diff(&got_t, &got) < 1e-12);
}

#[test]
fn common_patterns_equal_the_dedicated_ops() {
    manual_seed(2);
    let (a, b) = (randn(&[2, 3, 4]), randn(&[2, 4, 5]));
    let bmm = Tensor::einsum("bij,bjk->bik", &[&a, &b]).unwrap();
    assert!(max_diff(&bmm, &a.bmm(&b).unwrap()) < 1e-12);
    let m = randn(&[4, 4]);
    let trace = Tensor::einsum("ii", &[&m]).unwrap();
    let diag_sum = m.diagonal(0, 0, 1).unwrap().sum_all().unwrap();
    assert!(max_diff(&trace, &diag_sum) < 1e-12);
    let t = Tensor::einsum("...ij->...ji", &[&a]).unwrap();
    assert!(max_diff(&t, &a.transpose(-1, -2).unwrap()) < 0.0 + f64::MIN_POSITIVE);
    // Implicit output: capitals before small letters.
    let (x, y) = (randn(&[2, 3]), randn(&[3, 4]));
    let out = Tensor::einsum("bA,aB", &[&x, &randn(&[4, 2])]).unwrap();
    assert_eq!(out.shape(), &[3, 2, 4, 2]);
    let xy = Tensor::einsum("ij,jk", &[&x, &y]).unwrap();
    assert!(max_diff(&xy, &x.matmul(&y).unwrap()) < 1e-12);
}

#[test]
fn gradients_pass_gradcheck() {
    manual_seed(3);
    let xs = [randn(&[2, 3, 3]), randn(&[3, 4]), randn(&[2, 1, 4])];
    gradcheck(
        |t| Tensor::einsum("bii,ij,b...j->bj", &[&t[0], &t[1], &t[2]]),
        &xs,
        1e-6,
        1e-7,
        1e-5,
    )
    .unwrap();
}

fn message(r: tinytorch::Result<Tensor>) -> String {
    match r {
        Err(e) => e.to_string(),
        Ok(t) => panic!("expected an error, got a tensor of shape {:?}", t.shape()),
    }
}

#[test]
fn bad_equations_are_errors_naming_the_values() {
    let (a, b) = (randn(&[3]), randn(&[4]));
    let m = message(Tensor::einsum("i,i->", &[&a, &b]));
    assert!(
        m.starts_with("einsum") && m.contains("size 4") && m.contains("size 3"),
        "{m}"
    );
    let m = message(Tensor::einsum("i,i", &[&a]));
    assert!(
        m.contains("fewer operands") && m.contains("(1)") && m.contains("(2)"),
        "{m}"
    );
    let m = message(Tensor::einsum("ij", &[&a]));
    assert!(
        m.contains("(2)") && m.contains("(1)") && m.contains("no ellipsis"),
        "{m}"
    );
    let m = message(Tensor::einsum("i->j", &[&a]));
    assert!(m.contains("output subscript j"), "{m}");
    let m = message(Tensor::einsum("i->ii", &[&a]));
    assert!(m.contains("more than once"), "{m}");
    let m = message(Tensor::einsum("i.", &[&a]));
    assert!(m.contains("'.'"), "{m}");
    let m = message(Tensor::einsum("i$", &[&randn(&[2, 2])]));
    assert!(m.contains("'$'") && m.contains("index 1"), "{m}");
    let m = message(Tensor::einsum("ii->i", &[&randn(&[2, 3])]));
    assert!(m.contains("repeated") && m.contains("3 != 2"), "{m}");
    assert!(matches!(
        Tensor::einsum("i,i", &[&a, &a.to_dtype(DType::F32).unwrap()]),
        Err(Error::DType { .. })
    ));
    assert!(Tensor::einsum("", &[]).is_err());
    let m = message(randn(&[3]).diagonal(0, 0, 1));
    assert!(m.starts_with("diagonal") && m.contains("[3]"), "{m}");
}
