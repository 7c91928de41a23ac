//! Matrix products: torch.matmul's shape rules, strided and broadcast operands, dtypes,
//! gradients and errors. Expected values were computed with PyTorch 2.x (float64) from the
//! same inputs, built by `seq` (`((arange(n) * 0.37 + shift) % 1.3 - 0.6).reshape(shape)`).

mod common;
use common::{assert_close_to, Tol};

use tinytorch::autograd::gradcheck::gradcheck;
use tinytorch::{DType, Device, Tensor};

fn seq(shape: &[usize], shift: f64) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n)
        .map(|i| (i as f64 * 0.37 + shift).rem_euclid(1.3) - 0.6)
        .collect();
    Tensor::from_vec(v, shape).unwrap()
}

const MM: [f64; 8] = [
    0.07799999999999999,
    -0.1773,
    -0.31559999999999994,
    0.20910000000000015,
    -0.09759999999999994,
    -0.08280000000000003,
    0.5430000000000001,
    -0.10519999999999993,
];

#[test]
fn shape_rules_match_pytorch() {
    let dot = seq(&[3], 0.0).matmul(&seq(&[3], 0.5)).unwrap();
    assert!(dot.shape().is_empty(), "dot is 0-d");
    assert_close_to(&dot, &[0.08750000000000001], Tol::abs(1e-12), "dot");
    let mm = seq(&[2, 3], 0.0).matmul(&seq(&[3, 4], 0.5)).unwrap();
    assert_eq!(mm.shape(), [2, 4]);
    assert_close_to(&mm, &MM, Tol::abs(1e-12), "mm");
    let vm = seq(&[3], 0.0).matmul(&seq(&[3, 4], 0.5)).unwrap();
    assert_eq!(vm.shape(), [4]);
    assert_close_to(&vm, &MM[..4], Tol::abs(1e-12), "vm");
    let mv = seq(&[2, 3], 0.0).matmul(&seq(&[3], 0.5)).unwrap();
    assert_eq!(mv.shape(), [2]);
    assert_close_to(&mv, &[0.0875, -0.19639999999999996], Tol::abs(1e-12), "mv");
    let vb = seq(&[3], 0.0).matmul(&seq(&[2, 3, 4], 0.5)).unwrap();
    let vb_expected = [
        0.07799999999999999,
        -0.1773,
        -0.31559999999999994,
        0.20910000000000015,
        -0.4765999999999996,
        0.34710000000000024,
        0.09180000000000033,
        -0.16349999999999984,
    ];
    assert_eq!(vb.shape(), [2, 4]);
    assert_close_to(&vb, &vb_expected, Tol::abs(1e-12), "vb");
    let bv = seq(&[2, 2, 3], 0.0).matmul(&seq(&[3], 0.5)).unwrap();
    assert_eq!(bv.shape(), [2, 2]);
    assert_close_to(
        &bv,
        &[
            0.0875,
            -0.19639999999999996,
            0.0006999999999999229,
            -0.15319999999999984,
        ],
        Tol::abs(1e-12),
        "bv",
    );
}

const BCAST: [f64; 24] = [
    -0.07600000000000001,
    -0.03229999999999997,
    -0.32380000000000003,
    0.2370000000000001,
    0.18620000000000025,
    -0.06909999999999984,
    -0.33900000000000013,
    -0.3242000000000001,
    -0.14959999999999957,
    0.19310000000000038,
    0.24379999999999988,
    -0.3394000000000001,
    0.3903999999999999,
    -0.22170000000000017,
    0.27260000000000006,
    -0.30340000000000006,
    0.09779999999999994,
    0.3826999999999998,
    0.19659999999999986,
    0.27059999999999995,
    -0.09080000000000063,
    0.09009999999999976,
    -0.2694000000000001,
    0.19459999999999983,
];

#[test]
fn batch_dims_broadcast() {
    // (2, 1, 2, 3) @ (3, 3, 2) -> (2, 3, 2, 2); the left operand's batch dims do not fold into
    // one stride, which exercises the copy path.
    let out = seq(&[2, 1, 2, 3], 0.0)
        .matmul(&seq(&[3, 3, 2], 0.5))
        .unwrap();
    assert_eq!(out.shape(), [2, 3, 2, 2]);
    assert_close_to(&out, &BCAST, Tol::abs(1e-12), "out");
    // Broadcasting an explicitly expanded operand gives the same numbers.
    let b = seq(&[3, 3, 2], 0.5).expand(&[2, 3, 3, 2]).unwrap();
    let out = seq(&[2, 1, 2, 3], 0.0).matmul(&b).unwrap();
    assert_eq!(out.shape(), [2, 3, 2, 2]);
    assert_close_to(&out, &BCAST, Tol::abs(1e-12), "out");
}

const FOLD: [f64; 12] = [
    -0.3208000000000001,
    -0.08840000000000006,
    -0.29560000000000014,
    -0.030800000000000244,
    0.3536,
    0.1698000000000001,
    0.3787999999999999,
    0.2273999999999999,
    0.3,
    -0.30000000000000016,
    0.3251999999999998,
    -0.2423999999999997,
];

#[test]
fn batched_times_matrix_folds_and_strided_inputs_work() {
    let out = seq(&[2, 3, 4], 0.0).matmul(&seq(&[4, 2], 0.5)).unwrap();
    assert_eq!(out.shape(), [2, 3, 2]);
    assert_close_to(&out, &FOLD, Tol::abs(1e-12), "out");
    let transposed = seq(&[3, 2], 0.0)
        .t()
        .unwrap()
        .matmul(&seq(&[4, 3], 0.5).t().unwrap())
        .unwrap();
    let expected = [
        -0.17100000000000004,
        -0.003799999999999998,
        0.1634000000000002,
        -0.4494000000000001,
        0.12870000000000004,
        0.085,
        0.041299999999999996,
        -0.30139999999999995,
    ];
    assert_eq!(transposed.shape(), [2, 4]);
    assert_close_to(&transposed, &expected, Tol::abs(1e-12), "transposed");
    let a = seq(&[4, 6], 0.0)
        .slice(0, Some(1), Some(3), 1)
        .unwrap()
        .slice(1, None, None, 2)
        .unwrap();
    let b = seq(&[5, 4], 0.5)
        .slice(0, None, None, 2)
        .unwrap()
        .slice(1, Some(1), Some(3), 1)
        .unwrap();
    let sliced = a.matmul(&b).unwrap();
    assert_eq!(sliced.shape(), [2, 2]);
    assert_close_to(
        &sliced,
        &[
            -0.21980000000000022,
            0.3067999999999998,
            0.37499999999999967,
            -0.23520000000000024,
        ],
        Tol::abs(1e-12),
        "sliced",
    );
    // (2, 3, 4) viewed from a transposed (2, 4, 3): cannot fold into one matrix.
    let a = seq(&[2, 4, 3], 0.0).transpose(1, 2).unwrap();
    let out = a.matmul(&seq(&[4, 2], 0.5)).unwrap();
    let expected = [
        0.34959999999999986,
        -0.1802000000000002,
        -0.4306000000000003,
        0.3152,
        0.1412000000000001,
        -0.008399999999999998,
        -0.5108,
        -0.21540000000000017,
        0.16499999999999984,
        0.04599999999999996,
        0.2168000000000002,
        0.1644,
    ];
    assert_eq!(out.shape(), [2, 3, 2]);
    assert_close_to(&out, &expected, Tol::abs(1e-12), "out");
}

#[test]
fn gradients_of_broadcast_and_folded_products_match_pytorch() {
    // loss = (a @ b).pow(2).sum(), gradients from PyTorch.
    let a = seq(&[2, 1, 2, 3], 0.0).requires_grad_(true).unwrap();
    let b = seq(&[3, 3, 2], 0.5).requires_grad_(true).unwrap();
    let y = a.matmul(&b).unwrap();
    y.mul(&y).unwrap().sum_all().unwrap().backward().unwrap();
    let ga = [
        -0.4866780000000004,
        0.06366600000000036,
        -0.46784999999999977,
        1.1366600000000007,
        -1.3649080000000002,
        0.832244,
        -0.5440820000000005,
        1.2281979999999997,
        -0.31062200000000073,
        -0.894404,
        1.130044,
        -0.7642279999999998,
    ];
    assert_eq!(a.grad().unwrap().shape(), [2, 1, 2, 3]);
    assert_close_to(&a.grad().unwrap(), &ga, Tol::abs(1e-12), "a.grad()");
    let gb = [
        0.08165599999999984,
        0.059728,
        1.118304,
        -0.7935680000000004,
        -0.41072800000000004,
        0.3345960000000001,
        -0.4555120000000005,
        0.06751999999999947,
        0.5306719999999998,
        1.1028399999999996,
        -0.12998399999999977,
        -0.40333999999999987,
        0.3000399999999989,
        -0.4696480000000007,
        -0.530680000000001,
        0.5152079999999994,
        0.20900000000000046,
        -0.12259599999999961,
    ];
    assert_eq!(b.grad().unwrap().shape(), [3, 3, 2]);
    assert_close_to(&b.grad().unwrap(), &gb, Tol::abs(1e-12), "b.grad()");

    let a = seq(&[2, 3, 4], 0.0).requires_grad_(true).unwrap();
    let b = seq(&[4, 2], 0.5).requires_grad_(true).unwrap();
    let y = a.matmul(&b).unwrap();
    y.mul(&y).unwrap().sum_all().unwrap().backward().unwrap();
    let gb = [
        0.6851999999999996,
        -0.19427999999999984,
        1.233687999999999,
        -0.38993599999999956,
        0.15665600000000002,
        0.8246479999999996,
        -1.1990960000000006,
        -0.40372800000000025,
    ];
    assert_eq!(b.grad().unwrap().shape(), [4, 2]);
    assert_close_to(&b.grad().unwrap(), &gb, Tol::abs(1e-12), "b.grad()");
    assert_eq!(a.grad().unwrap().shape(), &[2, 3, 4]);
    let ga0 = [
        0.016423999999999973,
        -0.35935200000000006,
        -0.13088800000000006,
        0.3274160000000004,
    ];
    assert_eq!(
        &a.grad()
            .unwrap()
            .reshape(&[-1])
            .unwrap()
            .narrow(0, 0, 4)
            .unwrap()
            .shape(),
        &[4]
    );
    assert_close_to(
        &a.grad()
            .unwrap()
            .reshape(&[-1])
            .unwrap()
            .narrow(0, 0, 4)
            .unwrap(),
        &ga0,
        Tol::abs(1e-12),
        "a.grad() .reshape(&[-1]) .narrow(0, 0, 4) ",
    );
}

#[test]
fn only_needed_gradient_is_computed() {
    let a = seq(&[2, 3], 0.0).requires_grad_(true).unwrap();
    let b = seq(&[3, 2], 0.5);
    a.mm(&b).unwrap().sum_all().unwrap().backward().unwrap();
    assert_eq!(a.grad().unwrap().shape(), &[2, 3]);
    assert!(b.grad().is_none());
}

#[test]
fn gradcheck_every_product() {
    let tol = (1e-6, 1e-7, 1e-5);
    let check = |f: fn(&[Tensor]) -> tinytorch::Result<Tensor>, inputs: &[Tensor]| {
        gradcheck(f, inputs, tol.0, tol.1, tol.2).unwrap();
    };
    check(
        |x| x[0].matmul(&x[1]),
        &[seq(&[2, 1, 2, 3], 0.0), seq(&[3, 3, 2], 0.5)],
    );
    check(
        |x| x[0].matmul(&x[1]),
        &[seq(&[2, 3, 4], 0.0), seq(&[4, 2], 0.5)],
    );
    check(
        |x| x[0].matmul(&x[1]),
        &[seq(&[3, 4], 0.0), seq(&[2, 4, 2], 0.5)],
    );
    check(
        |x| x[0].matmul(&x[1]),
        &[seq(&[3], 0.0), seq(&[2, 3, 2], 0.5)],
    );
    check(
        |x| x[0].matmul(&x[1]),
        &[seq(&[2, 2, 3], 0.0), seq(&[3], 0.5)],
    );
    check(|x| x[0].matmul(&x[1]), &[seq(&[3], 0.0), seq(&[3], 0.5)]);
    check(
        |x| x[0].t()?.matmul(&x[1].t()?),
        &[seq(&[3, 2], 0.0), seq(&[4, 3], 0.5)],
    );
    check(
        |x| x[0].transpose(1, 2)?.matmul(&x[1]),
        &[seq(&[2, 4, 3], 0.0), seq(&[4, 2], 0.5)],
    );
    // Column-major operands take the transposed gradient products: linear's `x @ w.t()`
    // with a batched x, a broadcast column-major batch, a column-major left operand.
    check(
        |x| x[0].matmul(&x[1].t()?),
        &[seq(&[2, 3, 4], 0.0), seq(&[5, 4], 0.5)],
    );
    check(
        |x| x[0].matmul(&x[1].transpose(1, 2)?),
        &[seq(&[2, 3, 4], 0.0), seq(&[1, 5, 4], 0.5)],
    );
    check(
        |x| x[0].transpose(1, 2)?.matmul(&x[1]),
        &[seq(&[2, 4, 3], 0.0), seq(&[2, 4, 2], 0.5)],
    );
    check(|x| x[0].mm(&x[1]), &[seq(&[2, 3], 0.0), seq(&[3, 4], 0.5)]);
    check(
        |x| x[0].bmm(&x[1]),
        &[seq(&[2, 2, 3], 0.0), seq(&[2, 3, 4], 0.5)],
    );
    check(|x| x[0].outer(&x[1]), &[seq(&[3], 0.0), seq(&[4], 0.5)]);
    check(|x| x[0].dot(&x[1]), &[seq(&[5], 0.0), seq(&[5], 0.5)]);
    check(
        |x| x[0].slice(0, None, None, 2)?.dot(&x[1]),
        &[seq(&[6], 0.0), seq(&[3], 0.5)],
    );
}

/// `matmul_bias` (linear's `x @ W^T + b` in one pass) gives `matmul` then `add`'s values and
/// gradients: on the fused path (3-D and 2-D inputs, a transposed weight, empty rows) and on
/// the composed one (rows that do not fold, a strided bias, bf16).
#[test]
fn matmul_bias_equals_matmul_then_add() {
    let cases: Vec<(Tensor, Tensor, Tensor)> = vec![
        (
            seq(&[2, 3, 4], 0.0),
            seq(&[5, 4], 0.5).t().unwrap(),
            seq(&[5], 0.2),
        ),
        (seq(&[3, 4], 0.0), seq(&[4, 5], 0.5), seq(&[5], 0.2)),
        (seq(&[0, 4], 0.0), seq(&[4, 5], 0.5), seq(&[5], 0.2)),
        (
            seq(&[3, 2, 4], 0.0).transpose(0, 1).unwrap(),
            seq(&[4, 5], 0.5),
            seq(&[5], 0.2),
        ),
        (
            seq(&[3, 4], 0.0),
            seq(&[4, 5], 0.5),
            seq(&[10], 0.2).slice(0, None, None, 2).unwrap(),
        ),
    ];
    for (x, w, b) in &cases {
        for (dtype, tol) in [
            (DType::F64, 1e-12),
            (DType::F32, 1e-6),
            (DType::F16, 1e-2),
            (DType::BF16, 5e-2),
        ] {
            let [x, w, b] = [x, w, b].map(|t| {
                t.to_dtype(dtype)
                    .unwrap()
                    .detach()
                    .requires_grad_(true)
                    .unwrap()
            });
            let fused = x.matmul_bias(&w, &b).unwrap();
            let composed = x.matmul(&w).unwrap().add(&b).unwrap();
            assert_eq!(fused.dtype(), dtype);
            let want = composed.to_vec_f64().unwrap();
            assert_eq!(fused.shape(), composed.shape());
            assert_close_to(&fused, &want, Tol::abs(tol), "fused");
            // Gradients of the fused node against those of the composed graph.
            let seed = seq(composed.shape(), 0.9).to_dtype(dtype).unwrap();
            let grads = |y: &Tensor| {
                let inputs = [x.clone(), w.clone(), b.clone()];
                let gs = tinytorch::autograd::grad(y, Some(&seed), &inputs, false).unwrap();
                gs.into_iter().map(|g| g.unwrap()).collect::<Vec<_>>()
            };
            for (got, want) in grads(&fused).iter().zip(grads(&composed)) {
                assert_eq!(got.shape(), want.shape());
                assert_close_to(got, &want.to_vec_f64().unwrap(), Tol::abs(tol), "got");
            }
        }
    }
    let tol = (1e-6, 1e-7, 1e-5);
    gradcheck(
        |x| x[0].matmul_bias(&x[1].t()?, &x[2]),
        &[seq(&[2, 3, 4], 0.0), seq(&[5, 4], 0.5), seq(&[5], 0.2)],
        tol.0,
        tol.1,
        tol.2,
    )
    .unwrap();
    // A bias of the wrong length: the broadcast add's error, as for `matmul` then `add`.
    let err = seq(&[3, 4], 0.0)
        .matmul_bias(&seq(&[4, 5], 0.5), &seq(&[4], 0.2))
        .unwrap_err()
        .to_string();
    assert!(err.contains("[3, 5]") && err.contains("[4]"), "{err}");
}

#[test]
fn empty_operands() {
    // k = 0: a sum of nothing, zeros (as torch.zeros(2, 0) @ torch.zeros(0, 3)).
    let out = Tensor::zeros(&[2, 0], DType::F32, Device::Cpu)
        .unwrap()
        .matmul(&Tensor::zeros(&[0, 3], DType::F32, Device::Cpu).unwrap())
        .unwrap();
    assert_eq!(out.shape(), &[2, 3]);
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![0.0; 6]);
    let out = Tensor::zeros(&[0, 4], DType::F64, Device::Cpu)
        .unwrap()
        .matmul(&seq(&[4, 3], 0.0))
        .unwrap();
    assert_eq!(out.shape(), &[0, 3]);
    let out = Tensor::zeros(&[2, 0, 4], DType::F64, Device::Cpu)
        .unwrap()
        .matmul(&seq(&[4, 3], 0.0))
        .unwrap();
    assert_eq!(out.shape(), &[2, 0, 3]);
    let dot = Tensor::zeros(&[0], DType::F32, Device::Cpu)
        .unwrap()
        .dot(&Tensor::zeros(&[0], DType::F32, Device::Cpu).unwrap())
        .unwrap();
    assert_eq!(dot.item::<f32>().unwrap(), 0.0);
}

#[test]
fn dtypes() {
    // f16 and bf16 against PyTorch's results (computed in the same dtype), loose tolerance.
    let f16_expected = [
        0.0418701171875,
        -0.296875,
        -0.402099609375,
        0.156005859375,
        0.18505859375,
        0.642578125,
        -0.35595703125,
        0.02349853515625,
        0.458251953125,
        -0.458984375,
        0.5478515625,
        0.26806640625,
        -0.074951171875,
        0.5322265625,
        -0.316162109375,
        -0.046478271484375,
        0.302001953125,
        0.015960693359375,
        -0.035858154296875,
        0.054931640625,
        0.2369384765625,
        -0.214599609375,
        -0.43212890625,
        0.2086181640625,
    ];
    let exact = seq(&[2, 3, 5], 0.0)
        .matmul(&seq(&[5, 4], 0.5))
        .unwrap()
        .to_vec_f64()
        .unwrap();
    for (dtype, expected, tol) in [
        (DType::F16, &f16_expected[..], 1e-3),
        (DType::BF16, &exact[..], 1.5e-2),
        (DType::F32, &exact[..], 1e-6),
    ] {
        let a = seq(&[2, 3, 5], 0.0).to_dtype(dtype).unwrap();
        let b = seq(&[5, 4], 0.5).to_dtype(dtype).unwrap();
        let out = a.matmul(&b).unwrap();
        assert_eq!(out.dtype(), dtype);
        assert_eq!(out.shape(), [2, 3, 4]);
        assert_close_to(&out, expected, Tol::abs(tol), "out");
        // Transposed operands through the same dtype path.
        let out = b.t().unwrap().matmul(&a.transpose(1, 2).unwrap()).unwrap();
        assert_eq!(out.transpose(1, 2).unwrap().shape(), [2, 3, 4]);
        assert_close_to(
            &out.transpose(1, 2).unwrap(),
            expected,
            Tol::abs(tol),
            "out.transpose(1, 2)",
        );
    }
    let a = Tensor::arange(0.0, 6.0, 1.0, DType::I64, Device::Cpu)
        .unwrap()
        .reshape(&[2, 3])
        .unwrap();
    let b = Tensor::arange(-5.0, 7.0, 1.0, DType::I64, Device::Cpu)
        .unwrap()
        .reshape(&[3, 4])
        .unwrap();
    let out = a.matmul(&b).unwrap();
    assert_eq!(
        out.to_vec::<i64>().unwrap(),
        vec![5, 8, 11, 14, -4, 8, 20, 32]
    );
}

#[test]
fn errors_name_shapes_and_dtypes() {
    let msg = |r: tinytorch::Result<Tensor>| r.unwrap_err().to_string();
    let m = msg(seq(&[2, 3], 0.0).matmul(&seq(&[4, 2], 0.0)));
    assert!(m.contains("2x3") && m.contains("4x2"), "{m}");
    let m = msg(seq(&[2, 2, 3], 0.0).matmul(&seq(&[3, 3, 2], 0.0)));
    assert!(m.contains("[2, 2, 3]") && m.contains("[3, 3, 2]"), "{m}");
    let m = msg(seq(&[2, 3], 0.0).matmul(&seq(&[3, 2], 0.0).to_dtype(DType::F32).unwrap()));
    assert!(m.contains("float64") && m.contains("float32"), "{m}");
    let m = msg(seq(&[3], 0.0).matmul(&Tensor::scalar(1.0f64)));
    assert!(m.contains("at least 1D"), "{m}");
    assert!(msg(seq(&[2, 2, 3], 0.0).mm(&seq(&[3, 2], 0.0))).contains("[2, 2, 3]"));
    assert!(msg(seq(&[2, 2, 3], 0.0).bmm(&seq(&[3, 3, 2], 0.0))).contains("batch"));
    assert!(msg(seq(&[2, 3], 0.0).bmm(&seq(&[2, 3, 2], 0.0))).contains("3-D"));
    assert!(msg(seq(&[3], 0.0).dot(&seq(&[4], 0.0))).contains("same length"));
    assert!(msg(seq(&[3, 1], 0.0).dot(&seq(&[3], 0.0))).contains("1D"));
    assert!(msg(seq(&[3, 1], 0.0).outer(&seq(&[3], 0.0))).contains("1-D"));
    let b = Tensor::from_vec(vec![true; 4], &[2, 2]).unwrap();
    assert!(msg(b.matmul(&b)).contains("bool"));
}
