//! The elementwise unary family: values against PyTorch, gradients (gradcheck and PyTorch's
//! conventions at kinks), layouts, 0-d and empty tensors, dtypes and errors.
//!
//! Every hard-coded expected value was computed with PyTorch 2.15 (CPU) by a script; the
//! comments name the call.

// The tables hold PyTorch's outputs verbatim, some of which are well-known constants.
#![allow(clippy::approx_constant)]

mod common;
use common::{assert_close_slices, Tol};

use tinytorch::autograd::gradcheck::gradcheck;
use tinytorch::{DType, Device, Result, Tensor};

/// Generic inputs (with the kinks 0, -1 and 1.5 that the table checks).
const X: &[f64] = &[-2.5, -1.0, -0.3, 0.0, 0.4, 1.5, 3.0];
/// Positive inputs for log, sqrt and friends.
const P: &[f64] = &[0.1, 0.5, 1.0, 2.5, 7.0];
/// Inputs inside tan's central branch.
const T: &[f64] = &[-1.2, -0.5, 0.0, 0.3, 1.4];
/// Halves, for round-half-to-even.
const R: &[f64] = &[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.6];

/// (op, input, PyTorch float64 output). softplus is (beta=2, threshold=5), leaky_relu slope
/// 0.1, elu alpha 1.3, clamp (-1, 1.5), clamp_min/clamp_max 0.2.
#[rustfmt::skip]
const TABLE: &[(&str, &[f64], &[f64])] = &[
    ("neg", X, &[2.5, 1.0, 0.3, -0.0, -0.4, -1.5, -3.0]),
    ("abs", X, &[2.5, 1.0, 0.3, 0.0, 0.4, 1.5, 3.0]),
    ("sign", X, &[-1.0, -1.0, -1.0, 0.0, 1.0, 1.0, 1.0]),
    ("exp", X, &[0.0820849986238988, 0.36787944117144233, 0.7408182206817179, 1.0, 1.4918246976412703, 4.4816890703380645, 20.085536923187668]),
    ("log", P, &[-2.3025850929940455, -0.6931471805599453, 0.0, 0.9162907318741551, 1.9459101490553132]),
    ("log2", P, &[-3.321928094887362, -1.0, 0.0, 1.3219280948873624, 2.807354922057604]),
    ("log1p", P, &[0.09531017980432487, 0.4054651081081644, 0.6931471805599453, 1.252762968495368, 2.0794415416798357]),
    ("expm1", X, &[-0.9179150013761012, -0.6321205588285577, -0.2591817793182821, 0.0, 0.49182469764127035, 3.481689070338065, 19.085536923187668]),
    ("sqrt", P, &[0.31622776601683794, 0.7071067811865476, 1.0, 1.5811388300841898, 2.6457513110645907]),
    ("rsqrt", P, &[3.162277660168379, 1.414213562373095, 1.0, 0.6324555320336759, 0.3779644730092272]),
    ("square", X, &[6.25, 1.0, 0.09, 0.0, 0.16000000000000003, 2.25, 9.0]),
    ("reciprocal", P, &[10.0, 2.0, 1.0, 0.4, 0.14285714285714285]),
    ("sin", X, &[-0.5984721441039565, -0.8414709848078965, -0.29552020666133955, 0.0, 0.3894183423086505, 0.9974949866040544, 0.1411200080598672]),
    ("cos", X, &[-0.8011436155469337, 0.5403023058681398, 0.955336489125606, 1.0, 0.9210609940028851, 0.0707372016677029, -0.9899924966004454]),
    ("tan", T, &[-2.5721516221263188, -0.5463024898437905, 0.0, 0.30933624960962325, 5.797883715482887]),
    ("tanh", X, &[-0.9866142981514303, -0.7615941559557649, -0.2913126124515909, 0.0, 0.3799489622552249, 0.9051482536448664, 0.9950547536867305]),
    ("sigmoid", X, &[0.07585818002124355, 0.2689414213699951, 0.425557483188341, 0.5, 0.598687660112452, 0.8175744761936437, 0.9525741268224334]),
    ("relu", X, &[0.0, 0.0, 0.0, 0.0, 0.4, 1.5, 3.0]),
    ("leaky_relu", X, &[-0.25, -0.1, -0.03, 0.0, 0.4, 1.5, 3.0]),
    ("elu", X, &[-1.1932895017889318, -0.8217567264771249, -0.33693631311376676, 0.0, 0.4, 1.5, 3.0]),
    ("gelu", X, &[-0.015524163314440398, -0.15865525393145702, -0.1146265733433142, 0.0, 0.2621686966441297, 1.399789198096713, 2.99595030590511]),
    ("gelu_tanh", X, &[-0.015084266089998577, -0.15880800939172324, -0.11462907645724074, 0.0, 0.2621611694273562, 1.3995715769802328, 2.996362607918227]),
    ("silu", X, &[-0.18964545005310887, -0.2689414213699951, -0.1276672449565023, 0.0, 0.2394750640449808, 1.2263617142904655, 2.8577223804672998]),
    ("softplus", X, &[0.003357674244559034, 0.06346400552148625, 0.2187439752429428, 0.34657359027997264, 0.5855503329738889, 1.524293675786871, 3.0]),
    ("erf", X, &[-0.999593047982555, -0.8427007929497149, -0.3286267594591274, 0.0, 0.42839235504666845, 0.9661051464753108, 0.9999779095030014]),
    ("floor", X, &[-3.0, -1.0, -1.0, 0.0, 0.0, 1.0, 3.0]),
    ("ceil", X, &[-2.0, -1.0, -0.0, 0.0, 1.0, 2.0, 3.0]),
    ("round", R, &[-2.0, -2.0, -0.0, 0.0, 2.0, 2.0, 3.0]),
    ("clamp", X, &[-1.0, -1.0, -0.3, 0.0, 0.4, 1.5, 1.5]),
    ("clamp_min", X, &[0.2, 0.2, 0.2, 0.2, 0.4, 1.5, 3.0]),
    ("clamp_max", X, &[-2.5, -1.0, -0.3, 0.0, 0.2, 0.2, 0.2]),
];

/// Every op of the family, by name, with the parameters the table uses.
fn apply(name: &str, t: &Tensor) -> Result<Tensor> {
    match name {
        "neg" => t.neg(),
        "abs" => t.abs(),
        "sign" => t.sign(),
        "exp" => t.exp(),
        "log" => t.log(),
        "log2" => t.log2(),
        "log1p" => t.log1p(),
        "expm1" => t.expm1(),
        "sqrt" => t.sqrt(),
        "rsqrt" => t.rsqrt(),
        "square" => t.square(),
        "reciprocal" => t.reciprocal(),
        "sin" => t.sin(),
        "cos" => t.cos(),
        "tan" => t.tan(),
        "tanh" => t.tanh(),
        "sigmoid" => t.sigmoid(),
        "relu" => t.relu(),
        "leaky_relu" => t.leaky_relu(0.1),
        "elu" => t.elu(1.3),
        "gelu" => t.gelu(),
        "gelu_tanh" => t.gelu_tanh(),
        "silu" => t.silu(),
        "softplus" => t.softplus(2.0, 5.0),
        "erf" => t.erf(),
        "floor" => t.floor(),
        "ceil" => t.ceil(),
        "round" => t.round(),
        "clamp" => t.clamp(Some(-1.0), Some(1.5)),
        "clamp_min" => t.clamp_min(0.2),
        "clamp_max" => t.clamp_max(0.2),
        _ => panic!("unknown op {name}"),
    }
}

fn t64(v: &[f64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap()
}

#[test]
fn f64_values_match_pytorch() {
    for &(name, input, want) in TABLE {
        let out = apply(name, &t64(input)).unwrap();
        assert_eq!(out.dtype(), DType::F64, "{name}");
        assert_eq!(out.shape(), &[input.len()], "{name}");
        assert_close_slices(
            &out.to_vec::<f64>().unwrap(),
            want,
            Tol::new(1e-15, 1e-13).equal_nan(),
            name,
        );
    }
}

#[test]
fn f32_values_match_pytorch() {
    for &(name, input, want) in TABLE {
        let x = t64(input).to_dtype(DType::F32).unwrap();
        let out = apply(name, &x).unwrap();
        assert_eq!(out.dtype(), DType::F32, "{name}");
        assert_close_slices(
            &out.to_vec_f64().unwrap(),
            want,
            Tol::new(1e-7, 2e-6).equal_nan(),
            name,
        );
    }
}

#[test]
fn every_op_on_a_transposed_view_matches_the_contiguous_copy() {
    let data: Vec<f64> = (0..12).map(|i| 0.15 + 0.37 * i as f64).collect();
    let base = Tensor::from_vec(data.clone(), &[3, 4]).unwrap();
    let views = [base.t().unwrap(), base.slice(1, Some(0), None, 2).unwrap()];
    for &(name, _, _) in TABLE {
        for v in &views {
            assert!(!v.is_contiguous());
            let got = apply(name, v).unwrap();
            let want = apply(name, &v.contiguous().unwrap()).unwrap();
            assert_eq!(got.shape(), v.shape(), "{name}");
            assert_eq!(
                got.to_vec::<f64>().unwrap(),
                want.to_vec::<f64>().unwrap(),
                "{name}"
            );
        }
    }
    // And against PyTorch: torch.exp(torch.tensor([[0., 1.], [2., 3.]]).t())
    let m = Tensor::from_vec(vec![0.0f32, 1., 2., 3.], &[2, 2]).unwrap();
    let e = m.t().unwrap().exp().unwrap().to_vec::<f32>().unwrap();
    assert_close_slices(
        &e.iter().map(|&v| v as f64).collect::<Vec<_>>(),
        &[1.0, 7.389056, 2.7182817, 20.085537],
        Tol::new(0.0, 1e-6).equal_nan(),
        "exp(t)",
    );
}

#[test]
fn zero_dim_and_empty_tensors() {
    for &(name, input, _) in TABLE {
        let s = Tensor::scalar(input[input.len() - 1]);
        let out = apply(name, &s).unwrap();
        assert_eq!(out.shape(), &[] as &[usize], "{name}");
        let full = apply(name, &t64(input)).unwrap().to_vec::<f64>().unwrap();
        assert_eq!(
            out.item::<f64>().unwrap().to_bits(),
            full[full.len() - 1].to_bits(),
            "{name}"
        );

        let e = Tensor::zeros(&[2, 0, 3], DType::F32, Device::Cpu).unwrap();
        let out = apply(name, &e).unwrap();
        assert_eq!(out.shape(), &[2, 0, 3], "{name}");
        assert_eq!(out.numel(), 0);
    }
}

/// Inputs for gradcheck, away from every kink (0, the clamp bounds, integers and halves).
const G: &[f64] = &[-2.3, -0.7, -0.2, 0.35, 1.1, 2.2];

#[test]
fn gradcheck_every_op() {
    for &(name, _, _) in TABLE {
        let domain: Vec<f64> = match name {
            "log" | "log2" | "log1p" | "sqrt" | "rsqrt" | "reciprocal" => {
                vec![0.15, 0.6, 1.3, 2.2, 3.1, 4.7]
            }
            "tan" => vec![-1.1, -0.6, -0.2, 0.3, 0.9, 1.3],
            _ => G.to_vec(),
        };
        // A 2x3 input used through its transpose, so the backward also meets a strided view.
        let x = Tensor::from_vec(domain, &[2, 3]).unwrap();
        gradcheck(|xs| apply(name, &xs[0].t()?), &[x], 1e-6, 1e-7, 1e-5)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    // softplus on both sides of the threshold, and with other betas.
    let x = [t64(&[-3.0, -0.4, 0.7, 2.4, 2.6, 6.0])];
    gradcheck(|xs| xs[0].softplus(2.0, 5.0), &x, 1e-6, 1e-7, 1e-5).unwrap();
    gradcheck(|xs| xs[0].softplus(0.5, 1.0), &x, 1e-6, 1e-7, 1e-5).unwrap();
    gradcheck(|xs| xs[0].leaky_relu(-0.3), &x, 1e-6, 1e-7, 1e-5).unwrap();
    gradcheck(|xs| xs[0].elu(0.5), &x, 1e-6, 1e-7, 1e-5).unwrap();
}

fn grad_of(x: &[f64], f: impl Fn(&Tensor) -> Result<Tensor>) -> Vec<f64> {
    let x = t64(x).requires_grad_(true).unwrap();
    f(&x).unwrap().sum_all().unwrap().backward().unwrap();
    x.grad().unwrap().to_vec::<f64>().unwrap()
}

#[test]
fn gradients_at_kinks_follow_pytorch() {
    // z = [-1, 0, 1]; torch.<op>(z).sum().backward() in PyTorch 2.15.
    let z = [-1.0, 0.0, 1.0];
    assert_eq!(grad_of(&z, Tensor::relu), vec![0.0, 0.0, 1.0]);
    assert_eq!(grad_of(&z, Tensor::abs), vec![-1.0, 0.0, 1.0]);
    assert_eq!(grad_of(&z, |t| t.leaky_relu(0.1)), vec![0.1, 0.1, 1.0]);
    assert_close_slices(
        &grad_of(&z, |t| t.elu(1.3)),
        &[0.47824327352287505, 1.3, 1.0],
        Tol::new(0.0, 1e-14).equal_nan(),
        "elu'",
    );
    assert_eq!(grad_of(&z, Tensor::sign), vec![0.0, 0.0, 0.0]);
    assert_eq!(
        grad_of(&[-1.5, 0.5, 2.5], Tensor::round),
        vec![0.0, 0.0, 0.0]
    );
    assert_eq!(grad_of(&z, Tensor::floor), vec![0.0, 0.0, 0.0]);
    assert_eq!(grad_of(&z, Tensor::ceil), vec![0.0, 0.0, 0.0]);
    let g = grad_of(&z, Tensor::sqrt); // [nan, inf, 0.5]
    assert!(
        g[0].is_nan() && g[1] == f64::INFINITY && g[2] == 0.5,
        "{g:?}"
    );
    // Clamp passes the gradient strictly inside the bounds:
    // torch.clamp(z, 0., 1.) for z = [nan, -1, 0, 0.5, 1, 2] gives [0, 0, 0, 1, 0, 0].
    let c = [f64::NAN, -1.0, 0.0, 0.5, 1.0, 2.0];
    assert_eq!(
        grad_of(&c, |t| t.clamp(Some(0.0), Some(1.0))),
        vec![0.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    );
    assert_eq!(
        grad_of(&c, |t| t.clamp_min(0.0)),
        vec![0.0, 0.0, 0.0, 1.0, 1.0, 1.0]
    );
    assert_eq!(
        grad_of(&c, |t| t.clamp_max(1.0)),
        vec![0.0, 1.0, 1.0, 1.0, 0.0, 0.0]
    );
    // min > max: every output is max and no gradient passes.
    assert_eq!(grad_of(&c, |t| t.clamp(Some(2.0), Some(1.0))), vec![0.0; 6]);
}

#[test]
fn saved_output_rules_give_the_right_gradient() {
    // d/dx at x = 0.7 of exp, sigmoid, tanh, sqrt (saved outputs), from PyTorch.
    type Op = fn(&Tensor) -> Result<Tensor>;
    let cases: [(&str, Op, f64); 4] = [
        ("exp'", Tensor::exp, 2.0137527074704766),
        ("sigmoid'", Tensor::sigmoid, 0.22171287329310904),
        ("tanh'", Tensor::tanh, 0.6347395899824586),
        ("sqrt'", Tensor::sqrt, 0.5976143046671968),
    ];
    for (what, f, want) in cases {
        assert_close_slices(
            &grad_of(&[0.7], f),
            &[want],
            Tol::new(0.0, 1e-14).equal_nan(),
            what,
        );
    }
}

#[test]
fn extreme_inputs_are_stable() {
    let e = t64(&[-1000., -100., -30., 30., 100., 1000.]);
    // torch.sigmoid / softplus / silu / elu / gelu on float64
    let cases: [(&str, Tensor, &[f64]); 6] = [
        (
            "sigmoid",
            e.sigmoid().unwrap(),
            &[
                0.0,
                3.7200759760208356e-44,
                9.357622968839299e-14,
                0.9999999999999065,
                1.0,
                1.0,
            ],
        ),
        (
            "softplus",
            e.softplus(1.0, 20.0).unwrap(),
            &[
                0.0,
                3.720075976020836e-44,
                9.357622968839737e-14,
                30.0,
                100.0,
                1000.0,
            ],
        ),
        (
            "silu",
            e.silu().unwrap(),
            &[
                -0.0,
                -3.720075976020836e-42,
                -2.8072868906517896e-12,
                29.999999999997197,
                100.0,
                1000.0,
            ],
        ),
        (
            "elu",
            e.elu(1.0).unwrap(),
            &[-1.0, -1.0, -0.9999999999999064, 30.0, 100.0, 1000.0],
        ),
        (
            "gelu",
            e.gelu().unwrap(),
            &[-0.0, -0.0, -0.0, 30.0, 100.0, 1000.0],
        ),
        (
            "gelu_tanh",
            e.gelu_tanh().unwrap(),
            &[-0.0, -0.0, -0.0, 30.0, 100.0, 1000.0],
        ),
    ];
    for (name, out, want) in cases {
        assert_close_slices(
            &out.to_vec::<f64>().unwrap(),
            want,
            Tol::new(1e-300, 1e-12).equal_nan(),
            name,
        );
    }
    // float32: torch.sigmoid, torch.nn.functional.softplus, torch.tanh
    let e32 = e.to_dtype(DType::F32).unwrap();
    #[rustfmt::skip]
    let f32_cases: [(&str, Result<Tensor>, &[f64], Tol); 3] = [
        ("sigmoid f32", e32.sigmoid(), &[0.0, 0.0, 9.357623589846195e-14, 1.0, 1.0, 1.0],
            Tol::new(1e-40, 1e-6)),
        ("softplus f32", e32.softplus(1.0, 20.0),
            &[0.0, 3.783505853677006e-44, 9.357622912219837e-14, 30.0, 100.0, 1000.0],
            Tol::new(1e-40, 1e-6)),
        ("tanh f32", e32.tanh(), &[-1.0, -1.0, -1.0, 1.0, 1.0, 1.0], Tol::new(0.0, 0.0)),
    ];
    for (what, out, want, tol) in f32_cases {
        let got = out.unwrap().to_vec_f64().unwrap();
        assert_close_slices(&got, want, tol.equal_nan(), what);
    }
    // torch.log1p / torch.expm1 of 1e-10 keep full precision.
    let tiny = t64(&[1e-10]);
    for (what, out, want) in [
        ("log1p", tiny.log1p(), 9.999999999500001e-11),
        ("expm1", tiny.expm1(), 1.00000000005e-10),
    ] {
        let got = out.unwrap().to_vec::<f64>().unwrap();
        assert_close_slices(&got, &[want], Tol::new(0.0, 1e-15).equal_nan(), what);
    }
}

/// (op, `torch.<op>(torch.tensor(X, dtype=dt))` for dt float16 and bfloat16); softplus and elu
/// with PyTorch's defaults.
#[rustfmt::skip]
const HALF_WANT: &[(&str, [&[f64]; 2])] = &[
    ("exp", [&[0.08209228515625, 0.367919921875, 0.74072265625, 1.0, 1.4912109375, 4.48046875, 20.078125], &[0.08203125, 0.3671875, 0.7421875, 1.0, 1.4921875, 4.46875, 20.125]]),
    ("sigmoid", [&[0.07586669921875, 0.26904296875, 0.425537109375, 0.5, 0.5986328125, 0.8173828125, 0.95263671875], &[0.07568359375, 0.26953125, 0.42578125, 0.5, 0.59765625, 0.81640625, 0.953125]]),
    ("gelu", [&[-0.01552581787109375, -0.15869140625, -0.1146240234375, 0.0, 0.26220703125, 1.3994140625, 2.99609375], &[-0.0155029296875, -0.158203125, -0.11474609375, 0.0, 0.26171875, 1.3984375, 3.0]]),
    ("gelu_tanh", [&[-0.01508331298828125, -0.1588134765625, -0.1146240234375, 0.0, 0.261962890625, 1.3994140625, 2.99609375], &[-0.01507568359375, -0.1591796875, -0.11474609375, 0.0, 0.26171875, 1.3984375, 3.0]]),
    ("erf", [&[-0.99951171875, -0.8427734375, -0.32861328125, 0.0, 0.42822265625, 0.96630859375, 1.0], &[-1.0, -0.84375, -0.330078125, 0.0, 0.4296875, 0.96484375, 1.0]]),
    ("tanh", [&[-0.98681640625, -0.76171875, -0.291259765625, 0.0, 0.3798828125, 0.9052734375, 0.9951171875], &[-0.98828125, -0.76171875, -0.29296875, 0.0, 0.380859375, 0.90625, 0.99609375]]),
    ("silu", [&[-0.189697265625, -0.26904296875, -0.127685546875, 0.0, 0.2393798828125, 1.2265625, 2.857421875], &[-0.189453125, -0.26953125, -0.1279296875, 0.0, 0.240234375, 1.2265625, 2.859375]]),
    ("softplus1", [&[0.07891845703125, 0.313232421875, 0.55419921875, 0.693359375, 0.9130859375, 1.701171875, 3.048828125], &[0.0791015625, 0.3125, 0.5546875, 0.69140625, 0.9140625, 1.703125, 3.046875]]),
    ("elu1", [&[-0.91796875, -0.63232421875, -0.25927734375, 0.0, 0.39990234375, 1.5, 3.0], &[-0.91796875, -0.6328125, -0.259765625, 0.0, 0.400390625, 1.5, 3.0]]),
];

/// Forward values in reduced precision: PyTorch computes f16/bf16 in f32 and rounds once.
#[test]
fn half_precision_values_match_pytorch() {
    // torch.<op>(torch.tensor(X, dtype=...)); softplus and elu with PyTorch's defaults.
    let run = |name: &str, t: &Tensor| match name {
        "softplus1" => t.softplus(1.0, 20.0),
        "elu1" => t.elu(1.0),
        _ => apply(name, t),
    };
    // Allow one unit in the last place, for a transcendental that rounds the other way.
    for (i, (dtype, ulp)) in [(DType::F16, 1.0 / 1024.0), (DType::BF16, 1.0 / 128.0)]
        .into_iter()
        .enumerate()
    {
        let x = t64(X).to_dtype(dtype).unwrap();
        for &(name, want) in HALF_WANT {
            let w = want[i];
            let out = run(name, &x).unwrap();
            assert_eq!(out.dtype(), dtype, "{name}");
            assert_close_slices(
                &out.to_vec_f64().unwrap(),
                w,
                Tol::new(1e-4, ulp).equal_nan(),
                name,
            );
        }
    }
}

#[test]
fn integer_dtypes_follow_pytorch() {
    let i = Tensor::from_vec(vec![-3i64, 0, 5], &[3]).unwrap();
    let keep = |t: Result<Tensor>, want: &[i64]| {
        let t = t.unwrap();
        assert_eq!(t.dtype(), DType::I64);
        assert_eq!(t.to_vec::<i64>().unwrap(), want);
    };
    keep(i.neg(), &[3, 0, -5]);
    keep(-&i, &[3, 0, -5]);
    keep(i.abs(), &[3, 0, 5]);
    keep(i.sign(), &[-1, 0, 1]);
    keep(i.square(), &[9, 0, 25]);
    keep(i.floor(), &[-3, 0, 5]);
    keep(i.ceil(), &[-3, 0, 5]);
    keep(i.round(), &[-3, 0, 5]);
    keep(i.relu(), &[0, 0, 5]);
    keep(i.clamp(Some(-1), Some(2)), &[-1, 0, 2]);
    keep(i.clamp_max(1), &[-3, 0, 1]);
    // torch.clamp(int64, max=1.0): a float bound gives float32, whole or not.
    assert_eq!(i.clamp_max(1.0).unwrap().dtype(), DType::F32);
    // torch.clamp(int64, min=0.5) promotes to float32.
    let c = i.clamp(Some(0.5), None).unwrap();
    assert_eq!(c.dtype(), DType::F32);
    assert_eq!(c.to_vec::<f32>().unwrap(), vec![0.5, 0.5, 5.0]);
    // Float functions compute integers in float32: torch.exp / sqrt / sigmoid of [-3, 0, 5].
    let e = i.exp().unwrap();
    assert_eq!(e.dtype(), DType::F32);
    for (what, out, want) in [
        (
            "exp(i64)",
            e,
            [0.049787066876888275, 1.0, 148.4131622314453],
        ),
        (
            "sqrt(i64)",
            i.sqrt().unwrap(),
            [f64::NAN, 0.0, 2.2360680103302],
        ),
        (
            "sigmoid(i64)",
            i.sigmoid().unwrap(),
            [0.04742587357759476, 0.5, 0.9933071732521057],
        ),
    ] {
        let got = out.to_vec_f64().unwrap();
        assert_close_slices(&got, &want, Tol::new(0.0, 1e-7).equal_nan(), what);
    }
    // PyTorch's float-only activations reject integers.
    for r in [
        i.leaky_relu(0.1),
        i.elu(1.0),
        i.gelu(),
        i.gelu_tanh(),
        i.silu(),
        i.softplus(1.0, 20.0),
    ] {
        let msg = r.unwrap_err().to_string();
        assert!(msg.contains("int64"), "{msg}");
    }

    // uint8 wraps: torch.neg(torch.tensor([0, 1, 2], dtype=torch.uint8)) = [0, 255, 254].
    let u = Tensor::from_vec(vec![0u8, 1, 2, 200], &[4]).unwrap();
    assert_eq!(
        u.neg().unwrap().to_vec::<u8>().unwrap(),
        vec![0, 255, 254, 56]
    );
    assert_eq!(
        u.square().unwrap().to_vec::<u8>().unwrap(),
        vec![0, 1, 4, 64]
    );
    assert_eq!(
        u.clamp(Some(1), Some(300)).unwrap().to_vec::<u8>().unwrap(),
        vec![1, 1, 2, 200]
    );
    assert_eq!(u.relu().unwrap().dtype(), DType::U8);

    // bool: sign keeps bool, square and integer-bound clamp give int64, neg/abs/relu/floor fail.
    let b = Tensor::from_vec(vec![true, false], &[2]).unwrap();
    assert_eq!(
        b.sign().unwrap().to_vec::<bool>().unwrap(),
        vec![true, false]
    );
    keep(b.square(), &[1, 0]);
    keep(b.clamp(Some(1), None), &[1, 1]);
    assert_eq!(b.exp().unwrap().dtype(), DType::F32);
    for r in [b.neg(), b.abs(), b.relu(), b.floor(), b.ceil(), b.round()] {
        assert!(r.unwrap_err().to_string().contains("bool"));
    }
}

#[test]
fn f64_is_computed_in_f64() {
    // exp(1e-9) - 1 is lost in f32 but kept in f64.
    let y = t64(&[1e-9]).exp().unwrap().to_vec::<f64>().unwrap()[0];
    assert!((y - 1.0 - 1e-9).abs() < 1e-15, "{y}");
}

#[test]
fn clamp_arguments_and_edge_values() {
    let x = t64(&[f64::NAN, -2.0, 0.5, 3.0]);
    let err = x.clamp(None::<f64>, None).unwrap_err().to_string();
    assert!(
        err.contains("clamp") && err.contains("min") && err.contains("max"),
        "{err}"
    );
    // torch.clamp(x, 2, 1): every element becomes max, NaN stays NaN.
    let v = x
        .clamp(Some(2.0), Some(1.0))
        .unwrap()
        .to_vec::<f64>()
        .unwrap();
    assert!(v[0].is_nan());
    assert_eq!(&v[1..], &[1.0, 1.0, 1.0]);
    // torch.clamp(x, nan, 1): all NaN.
    assert!(x
        .clamp(Some(f64::NAN), Some(1.0))
        .unwrap()
        .to_vec::<f64>()
        .unwrap()
        .iter()
        .all(|v| v.is_nan()));
    // torch.relu keeps NaN; torch.sign(nan) = 0.
    let r = x.relu().unwrap().to_vec::<f64>().unwrap();
    assert!(r[0].is_nan());
    assert_eq!(x.sign().unwrap().to_vec::<f64>().unwrap()[0], 0.0);
    assert!(x.softplus(0.0, 20.0).is_err());
}

#[test]
fn grad_fn_names_and_no_grad_for_non_requiring_inputs() {
    let x = t64(&[0.5, 1.5]).requires_grad_(true).unwrap();
    assert_eq!(x.sigmoid().unwrap().grad_fn_name(), Some("sigmoid"));
    assert_eq!(x.clamp_min(0.0).unwrap().grad_fn_name(), Some("clamp"));
    assert!(x.floor().unwrap().requires_grad());
    assert!(!t64(&[0.5]).exp().unwrap().requires_grad());
    // Neg through the operator records neg.
    assert_eq!((-&x).unwrap().grad_fn_name(), Some("neg"));
}

#[test]
fn fused_relu_backward_matches_the_composite_rule() {
    // The CPU backward is one fused pass; the composite rule (used off the CPU) is
    // `g.masked_fill(y <= 0, 0)`. Large enough for the parallel chunks, with NaN, +-0 and a
    // transposed upstream gradient, in every float dtype.
    let n = 3 * 70_001;
    let vals: Vec<f64> = (0..n)
        .map(|i| match i % 997 {
            0 => f64::NAN,
            1 => -0.0,
            2 => 0.0,
            _ => ((i as f64) * 0.61).sin(),
        })
        .collect();
    for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
        let x = Tensor::from_vec(vals.clone(), &[3, n / 3])
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
        let g = Tensor::randn(&[n / 3, 3], dtype, Device::Cpu)
            .unwrap()
            .t()
            .unwrap();
        let leaf = x.requires_grad_(true).unwrap();
        let y = leaf.relu().unwrap();
        y.backward_with(Some(&g), false).unwrap();
        let want = g
            .masked_fill(&y.detach().le_scalar(0.0).unwrap(), 0.0)
            .unwrap();
        let got = leaf.grad().unwrap();
        assert_eq!(
            got.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap(),
            want.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap(),
            "{dtype}"
        );
    }
}

/// `torch.isnan`, `torch.isinf`, `torch.isfinite` (bool results; integers are all finite).
#[test]
fn nan_and_infinity_tests() {
    let bools = |t: Tensor| t.to_vec::<bool>().unwrap();
    for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
        let x = Tensor::from_slice(&[1.0f64, f64::NEG_INFINITY, f64::INFINITY, f64::NAN, -0.0])
            .to_dtype(dtype)
            .unwrap();
        assert_eq!(
            bools(x.isnan().unwrap()),
            [false, false, false, true, false]
        );
        assert_eq!(bools(x.isinf().unwrap()), [false, true, true, false, false]);
        assert_eq!(
            bools(x.isfinite().unwrap()),
            [true, false, false, false, true]
        );
    }
    let i = Tensor::from_slice(&[i64::MIN, 0, i64::MAX]);
    assert_eq!(bools(i.isnan().unwrap()), [false; 3]);
    assert_eq!(bools(i.isinf().unwrap()), [false; 3]);
    assert_eq!(bools(i.isfinite().unwrap()), [true; 3]);
    // Non-contiguous and empty inputs.
    let m = Tensor::from_vec(vec![f32::NAN, 1.0, f32::INFINITY, 2.0], &[2, 2]).unwrap();
    assert_eq!(
        bools(m.t().unwrap().isfinite().unwrap()),
        [false, false, true, true]
    );
    assert_eq!(
        Tensor::from_slice::<f32>(&[]).isnan().unwrap().shape(),
        &[0]
    );
}

/// GELU's and ReLU's fused backward write the input's gradient over an upstream gradient
/// that nothing else holds (`w * 1` from `(y * w).sum()`): the same values as the
/// out-of-place kernel, which a gradient the caller still holds gets (`y.backward(w)`), and
/// that gradient intact.
#[test]
fn activation_backward_in_place_gives_the_out_of_place_gradients() {
    for dtype in [DType::F32, DType::F64] {
        for name in ["gelu", "relu"] {
            let x = Tensor::randn(&[300, 70], dtype, Device::Cpu).unwrap();
            let w = Tensor::randn(&[300, 70], dtype, Device::Cpu).unwrap();
            let w_before = w.to_vec_f64().unwrap();
            let grad = |in_place: bool| {
                let x = x.detach().requires_grad_(true).unwrap();
                let y = apply(name, &x).unwrap();
                if in_place {
                    y.mul(&w).unwrap().sum_all().unwrap().backward().unwrap();
                } else {
                    y.backward_with(Some(&w), false).unwrap();
                }
                x.grad().unwrap().to_vec_f64().unwrap()
            };
            let (in_place, out_of_place) = (grad(true), grad(false));
            assert_eq!(in_place, out_of_place, "{name} {dtype}");
            assert_eq!(
                w.to_vec_f64().unwrap(),
                w_before,
                "{name} {dtype}: the given gradient"
            );
        }
    }
}
