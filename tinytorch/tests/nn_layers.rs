//! Basic nn layers and initialisation. Expected numbers come from PyTorch 2.x (CPU) unless
//! they are statistics checked against the formulas in torch/nn/init.py.

mod common;
use common::{assert_close_slices, Tol};

use std::collections::HashMap;
use tinytorch::autograd::gradcheck::gradcheck;
use tinytorch::nn::functional::{dropout, linear};
use tinytorch::nn::init::{self, FanMode};
use tinytorch::nn::{
    Dropout, Embedding, Flatten, Identity, LeakyReLU, Linear, LogSoftmax, Module, ModuleList, ReLU,
    Sequential, SiLU, Sigmoid, Softmax, Softplus, Tanh, ELU, GELU,
};
use tinytorch::{DType, Device, Generator, Tensor};

fn t64(data: Vec<f64>, shape: &[usize]) -> Tensor {
    Tensor::from_vec(data, shape).unwrap()
}

fn stats(t: &Tensor) -> (f64, f64, f64, f64) {
    let v = t.to_vec_f64().unwrap();
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    let lo = v.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    (mean, var.sqrt(), lo, hi)
}

#[test]
fn fans_and_gains() {
    let w2 = Tensor::zeros(&[5, 7], DType::F32, Device::Cpu).unwrap();
    assert_eq!(init::calculate_fan_in_and_fan_out(&w2).unwrap(), (7, 5));
    // PyTorch: _calculate_fan_in_and_fan_out(torch.empty(16, 8, 3, 5)) == (120, 240)
    let w4 = Tensor::zeros(&[16, 8, 3, 5], DType::F32, Device::Cpu).unwrap();
    assert_eq!(init::calculate_fan_in_and_fan_out(&w4).unwrap(), (120, 240));
    let w1 = Tensor::zeros(&[5], DType::F32, Device::Cpu).unwrap();
    assert!(init::calculate_fan_in_and_fan_out(&w1).is_err());
    // PyTorch: calculate_gain('leaky_relu', sqrt(5)) == 0.5773502691896257
    let g = init::calculate_gain("leaky_relu", Some(5f64.sqrt())).unwrap();
    assert!((g - 0.5773502691896257).abs() < 1e-15);
    assert!((init::calculate_gain("relu", None).unwrap() - 2f64.sqrt()).abs() < 1e-15);
    assert!((init::calculate_gain("tanh", None).unwrap() - 5.0 / 3.0).abs() < 1e-15);
    assert_eq!(init::calculate_gain("selu", None).unwrap(), 0.75);
    assert_eq!(init::calculate_gain("conv2d", None).unwrap(), 1.0);
    assert!(init::calculate_gain("bogus", None).is_err());
}

#[test]
fn uniform_normal_constant_statistics() {
    let t = Tensor::zeros(&[200_000], DType::F32, Device::Cpu).unwrap();
    init::uniform_(&t, -2.0, 3.0).unwrap();
    let (mean, std, lo, hi) = stats(&t);
    assert!((mean - 0.5).abs() < 0.02 && lo >= -2.0 && hi < 3.0);
    assert!((std - 5.0 / 12f64.sqrt()).abs() < 0.02);
    init::normal_(&t, 1.0, 2.0).unwrap();
    let (mean, std, _, _) = stats(&t);
    assert!((mean - 1.0).abs() < 0.02 && (std - 2.0).abs() < 0.02);
    init::constant_(&t, 0.25).unwrap();
    assert_eq!(stats(&t).0, 0.25);
    init::ones_(&t).unwrap();
    assert_eq!(stats(&t).2, 1.0);
    init::zeros_(&t).unwrap();
    assert_eq!(stats(&t).3, 0.0);
    assert!(init::uniform_(&t, 1.0, 0.0).is_err());
    assert!(init::normal_(&t, 0.0, -1.0).is_err());
    let ints = Tensor::zeros(&[3], DType::I64, Device::Cpu).unwrap();
    assert!(init::uniform_(&ints, 0.0, 1.0).is_err());
}

#[test]
fn xavier_and_kaiming_statistics() {
    let w = Tensor::zeros(&[400, 300], DType::F32, Device::Cpu).unwrap();
    init::xavier_uniform_(&w, 2.0).unwrap();
    let a = 2.0 * (6.0 / 700.0f64).sqrt();
    let (mean, std, lo, hi) = stats(&w);
    assert!(lo >= -a && hi <= a && mean.abs() < 0.01);
    assert!((std - a / 3f64.sqrt()).abs() < 0.01 * a);
    init::xavier_normal_(&w, 1.0).unwrap();
    let (_, std, _, _) = stats(&w);
    assert!((std - (2.0 / 700.0f64).sqrt()).abs() < 0.01 * std);

    init::kaiming_uniform_(&w, 0.0, FanMode::FanIn, "relu").unwrap();
    let bound = 2f64.sqrt() * (3.0 / 300.0f64).sqrt();
    let (_, std, lo, hi) = stats(&w);
    assert!(lo >= -bound && hi <= bound && (std - bound / 3f64.sqrt()).abs() < 0.01 * bound);
    init::kaiming_normal_(&w, 0.0, FanMode::FanOut, "relu").unwrap();
    let (_, std, _, _) = stats(&w);
    let want = 2f64.sqrt() / 400f64.sqrt();
    assert!((std - want).abs() < 0.01 * want);

    // The `_with` forms are reproducible from a seed.
    let w2 = Tensor::zeros(&[4, 3], DType::F64, Device::Cpu).unwrap();
    let w3 = Tensor::zeros(&[4, 3], DType::F64, Device::Cpu).unwrap();
    init::kaiming_uniform_with(
        &w2,
        1.0,
        FanMode::FanIn,
        "leaky_relu",
        &mut Generator::new(7),
    )
    .unwrap();
    init::kaiming_uniform_with(
        &w3,
        1.0,
        FanMode::FanIn,
        "leaky_relu",
        &mut Generator::new(7),
    )
    .unwrap();
    assert_eq!(w2.to_vec_f64().unwrap(), w3.to_vec_f64().unwrap());
    init::xavier_normal_with(&w3, 1.0, &mut Generator::new(8)).unwrap();
    assert_ne!(w2.to_vec_f64().unwrap(), w3.to_vec_f64().unwrap());
}

#[test]
fn init_on_parameter_does_not_record_graph() {
    let w = Tensor::zeros(&[3, 2], DType::F32, Device::Cpu)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    init::xavier_uniform_(&w, 1.0).unwrap();
    assert!(w.is_leaf());
}

#[test]
fn linear_default_init_bounds_and_names() {
    let l = Linear::new(64, 10, true).unwrap();
    assert_eq!(l.weight.shape(), &[10, 64]);
    let bound = 1.0 / 8.0;
    let (_, _, lo, hi) = stats(&l.weight);
    assert!(lo >= -bound && hi <= bound);
    let (_, _, lo, hi) = stats(l.bias.as_ref().unwrap());
    assert!(lo >= -bound && hi <= bound);
    let names: Vec<String> = l.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["weight", "bias"]);
    assert_eq!(l.num_parameters(), 650);
    let nb = Linear::new(4, 3, false).unwrap();
    assert_eq!(nb.num_parameters(), 12);
    assert_eq!(nb.state_dict().len(), 1);
}

#[test]
fn linear_forward_backward_matches_pytorch() {
    let l = Linear::new_with(3, 2, true, DType::F64, Device::Cpu).unwrap();
    let mut sd = HashMap::new();
    sd.insert(
        "weight".to_string(),
        t64(vec![0.1, -0.2, 0.3, 0.4, 0.5, -0.6], &[2, 3]),
    );
    sd.insert("bias".to_string(), t64(vec![0.05, -0.1], &[2]));
    l.load_state_dict(&sd, true).unwrap();
    let x = t64(vec![0.5, -1.0, 2.0, 1.5, 0.25, -0.75], &[2, 3])
        .requires_grad_(true)
        .unwrap();
    let y = l.forward(&x).unwrap();
    // PyTorch: nn.Linear with these weights
    assert_close_slices(
        &y.to_vec_f64().unwrap(),
        &[0.9, -1.6, -0.075, 1.075],
        Tol::abs(1e-12),
        "y.to_vec_f64()",
    );
    let g = t64(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    y.mul(&g).unwrap().sum_all().unwrap().backward().unwrap();
    assert_close_slices(
        &x.grad().unwrap().to_vec_f64().unwrap(),
        &[0.9, 0.8, -0.9, 1.9, 1.4, -1.5],
        Tol::abs(1e-12),
        "x.grad().to_vec_f64()",
    );
    assert_close_slices(
        &l.weight.grad().unwrap().to_vec_f64().unwrap(),
        &[5.0, -0.25, -0.25, 7.0, -1.0, 1.0],
        Tol::abs(1e-12),
        "l.weight.grad().to_vec_f64()",
    );
    assert_close_slices(
        &l.bias
            .as_ref()
            .unwrap()
            .grad()
            .unwrap()
            .to_vec_f64()
            .unwrap(),
        &[4.0, 6.0],
        Tol::abs(1e-12),
        "l.bias .as_ref() .grad() .to_vec_f64() ",
    );
}

#[test]
fn linear_leading_dims_and_gradcheck() {
    let l = Linear::new_with(3, 2, true, DType::F64, Device::Cpu).unwrap();
    let x = Tensor::randn(&[2, 4, 3], DType::F64, Device::Cpu).unwrap();
    assert_eq!(l.forward(&x).unwrap().shape(), &[2, 4, 2]);
    let w = Tensor::randn(&[2, 3], DType::F64, Device::Cpu).unwrap();
    let b = Tensor::randn(&[2], DType::F64, Device::Cpu).unwrap();
    gradcheck(
        |xs| linear(&xs[0], &xs[1], Some(&xs[2])),
        &[x.clone(), w.clone(), b],
        1e-6,
        1e-7,
        1e-5,
    )
    .unwrap();
    // Non-contiguous input.
    let xt = Tensor::randn(&[3, 5], DType::F64, Device::Cpu).unwrap();
    gradcheck(
        |xs| linear(&xs[0].t()?, &xs[1], None),
        &[xt, w],
        1e-6,
        1e-7,
        1e-5,
    )
    .unwrap();
}

#[test]
fn linear_wrong_feature_size_names_shapes() {
    let l = Linear::new(3, 2, true).unwrap();
    let x = Tensor::zeros(&[4, 5], DType::F32, Device::Cpu).unwrap();
    let msg = l.forward(&x).unwrap_err().to_string();
    assert!(msg.contains("[4, 5]") && msg.contains("[2, 3]"), "{msg}");
}

#[test]
fn sequential_names_counts_and_training() {
    let mut s = Sequential::new(vec![
        Box::new(Linear::new(3, 4, true).unwrap()),
        Box::new(ReLU::new()),
        Box::new(Linear::new(4, 2, true).unwrap()),
    ]);
    // PyTorch: list(nn.Sequential(Linear(3,4), ReLU(), Linear(4,2)).state_dict()) and 26 params
    let names: Vec<String> = s.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["0.weight", "0.bias", "2.weight", "2.bias"]);
    assert_eq!(s.num_parameters(), 26);
    let keys: Vec<String> = s.state_dict().into_keys().collect();
    assert_eq!(keys.len(), 4);
    let x = Tensor::randn(&[5, 3], DType::F32, Device::Cpu).unwrap();
    assert_eq!(s.forward(&x).unwrap().shape(), &[5, 2]);
    s.eval();
    assert!(!s.is_training() && !s.get(1).unwrap().is_training());
    s.train();
    assert!(s.get(2).unwrap().is_training());

    let mut nested = Sequential::new(vec![
        Box::new(Sequential::new(vec![Box::new(
            Linear::new(2, 2, false).unwrap(),
        )])),
        Box::new(Dropout::new(0.5).unwrap()),
    ]);
    let names: Vec<String> = nested
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["0.0.weight"]);
    nested.eval();
    let y = Tensor::ones(&[3, 2], DType::F32, Device::Cpu).unwrap();
    let lin_only = nested.get(0).unwrap().forward(&y).unwrap();
    assert_eq!(
        nested.forward(&y).unwrap().to_vec_f64().unwrap(),
        lin_only.to_vec_f64().unwrap()
    );
}

#[test]
fn module_list_indexing_and_names() {
    let mut ml = ModuleList::new(vec![
        Box::new(Linear::new(2, 3, true).unwrap()),
        Box::new(Linear::new(3, 1, true).unwrap()),
    ]);
    let names: Vec<String> = ml.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["0.weight", "0.bias", "1.weight", "1.bias"]);
    assert_eq!(ml.len(), 2);
    let x = Tensor::ones(&[4, 2], DType::F32, Device::Cpu).unwrap();
    let y = ml[1].forward(&ml[0].forward(&x).unwrap()).unwrap();
    assert_eq!(y.shape(), &[4, 1]);
    ml.eval();
    assert!(ml.iter().all(|m| !m.is_training()));
    assert!(ml.forward(&x).is_err());
}

#[test]
fn activation_modules_match_pytorch() {
    let x = t64(vec![-2.0, -0.5, 0.0, 1.5], &[4]);
    let cases: Vec<(Box<dyn Module>, Vec<f64>)> = vec![
        // PyTorch values for x = [-2, -0.5, 0, 1.5]
        (Box::new(ReLU::new()), vec![0.0, 0.0, 0.0, 1.5]),
        (Box::new(LeakyReLU::new(0.1)), vec![-0.2, -0.05, 0.0, 1.5]),
        (
            Box::new(ELU::new(1.0)),
            vec![-0.8646647167633873, -0.3934693402873666, 0.0, 1.5],
        ),
        (
            Box::new(GELU::new(false)),
            vec![
                -0.04550026389635842,
                -0.15426876936299344,
                0.0,
                1.399789198096713,
            ],
        ),
        (
            Box::new(GELU::new(true)),
            vec![
                -0.04540230591222494,
                -0.15428599017485606,
                0.0,
                1.3995715769802328,
            ],
        ),
        (
            Box::new(SiLU::new()),
            vec![
                -0.2384058440442351,
                -0.1887703343990727,
                0.0,
                1.2263617142904655,
            ],
        ),
        (
            Box::new(Sigmoid::new()),
            vec![
                0.11920292202211755,
                0.3775406687981454,
                0.5,
                0.8175744761936437,
            ],
        ),
        (
            Box::new(Tanh::new()),
            vec![
                -0.9640275800758169,
                -0.46211715726000974,
                0.0,
                0.9051482536448664,
            ],
        ),
        (
            Box::new(Softplus::new(2.0, 20.0)),
            vec![
                0.009074963958904869,
                0.15663084375911143,
                0.34657359027997264,
                1.524293675786871,
            ],
        ),
        (
            Box::new(Softmax::new(0)),
            vec![
                0.021745655489133042,
                0.0974572665329845,
                0.16067986831722328,
                0.7201172096606591,
            ],
        ),
        (
            Box::new(LogSoftmax::new(-1)),
            vec![
                -3.828341289025725,
                -2.328341289025725,
                -1.828341289025725,
                -0.32834128902572496,
            ],
        ),
        (Box::new(Identity::new()), vec![-2.0, -0.5, 0.0, 1.5]),
    ];
    for (m, want) in cases {
        assert_eq!(m.num_parameters(), 0);
        assert_close_slices(
            &m.forward(&x).unwrap().to_vec_f64().unwrap(),
            &want,
            Tol::abs(1e-9),
            "m.forward(&x).to_vec_f64()",
        );
    }
}

#[test]
fn flatten_module() {
    let x = Tensor::zeros(&[2, 3, 4, 5], DType::F32, Device::Cpu).unwrap();
    assert_eq!(Flatten::default().forward(&x).unwrap().shape(), &[2, 60]);
    assert_eq!(Flatten::new(1, 2).forward(&x).unwrap().shape(), &[2, 12, 5]);
    assert!(Flatten::new(0, 7).forward(&x).is_err());
}

#[test]
fn dropout_statistics_and_eval_identity() {
    let x = Tensor::ones(&[100_000], DType::F32, Device::Cpu).unwrap();
    let mut d = Dropout::new(0.3).unwrap();
    let y = d.forward(&x).unwrap().to_vec_f64().unwrap();
    let kept = y.iter().filter(|v| **v != 0.0).count() as f64 / y.len() as f64;
    assert!((kept - 0.7).abs() < 0.01, "kept fraction {kept}");
    assert!(y.iter().all(|v| *v == 0.0 || (v - 1.0 / 0.7).abs() < 1e-6));
    let mean = y.iter().sum::<f64>() / y.len() as f64;
    assert!((mean - 1.0).abs() < 0.02);
    d.eval();
    let x2 = Tensor::randn(&[7, 3], DType::F32, Device::Cpu).unwrap();
    assert_eq!(
        d.forward(&x2).unwrap().to_vec_f64().unwrap(),
        x2.to_vec_f64().unwrap()
    );
    // p = 0 and p = 1 edge cases; functional form in eval.
    assert_eq!(
        dropout(&x2, 0.0, true).unwrap().to_vec_f64().unwrap(),
        x2.to_vec_f64().unwrap()
    );
    assert!(dropout(&x2, 1.0, true)
        .unwrap()
        .to_vec_f64()
        .unwrap()
        .iter()
        .all(|v| *v == 0.0));
    assert_eq!(
        dropout(&x2, 0.9, false).unwrap().to_vec_f64().unwrap(),
        x2.to_vec_f64().unwrap()
    );
}

#[test]
fn dropout_gradient_uses_the_same_mask() {
    let x = Tensor::ones(&[1000], DType::F64, Device::Cpu)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let y = dropout(&x, 0.5, true).unwrap();
    y.sum_all().unwrap().backward().unwrap();
    assert_eq!(
        x.grad().unwrap().to_vec_f64().unwrap(),
        y.to_vec_f64().unwrap()
    );
}

#[test]
fn dropout_rejects_bad_p() {
    assert!(Dropout::new(1.5).is_err());
    let msg = Dropout::new(-0.1).unwrap_err().to_string();
    assert!(msg.contains("-0.1"), "{msg}");
    let x = Tensor::ones(&[3], DType::F32, Device::Cpu).unwrap();
    assert!(dropout(&x, 2.0, false).is_err());
}

#[test]
fn embedding_values_and_padding_grad() {
    let e = Embedding::new(4, 3, Some(1)).unwrap();
    assert_eq!(e.weight.to_vec_f64().unwrap()[3..6], [0.0, 0.0, 0.0]);
    let w: Vec<f64> = (0..12).map(|i| i as f64 / 10.0).collect();
    let mut sd = HashMap::new();
    sd.insert(
        "weight".to_string(),
        t64(w, &[4, 3]).to_dtype(DType::F32).unwrap(),
    );
    e.load_state_dict(&sd, true).unwrap();
    let idx = Tensor::from_vec(vec![0i64, 1, 3, 1], &[2, 2]).unwrap();
    let out = e.forward(&idx).unwrap();
    assert_eq!(out.shape(), &[2, 2, 3]);
    // PyTorch: rows 0, 1, 3, 1 of arange(12)/10 (the padding row keeps its loaded value)
    assert_close_slices(
        &out.to_vec_f64().unwrap(),
        &[0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.9, 1.0, 1.1, 0.3, 0.4, 0.5],
        Tol::abs(1e-6),
        "out.to_vec_f64()",
    );
    let g = Tensor::arange(0.0, 12.0, 1.0, DType::F32, Device::Cpu)
        .unwrap()
        .reshape(&[2, 2, 3])
        .unwrap();
    out.mul(&g).unwrap().sum_all().unwrap().backward().unwrap();
    // PyTorch: weight.grad with padding_idx=1
    assert_eq!(
        e.weight.grad().unwrap().to_vec_f64().unwrap(),
        [0.0, 1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 6.0, 7.0, 8.0]
    );
}

#[test]
fn embedding_gradcheck_and_errors() {
    // The padding row (1) is not looked up: its gradient is deliberately cut, as in PyTorch.
    let w = Tensor::randn(&[5, 2], DType::F64, Device::Cpu).unwrap();
    let idx = Tensor::from_vec(vec![4i64, 0, 4, 2], &[4]).unwrap();
    gradcheck(
        |xs| tinytorch::nn::functional::embedding(&idx, &xs[0], Some(1)),
        &[w],
        1e-6,
        1e-7,
        1e-5,
    )
    .unwrap();
    let e = Embedding::new(3, 2, None).unwrap();
    let bad = Tensor::from_vec(vec![0i64, 3], &[2]).unwrap();
    let msg = e.forward(&bad).unwrap_err().to_string();
    assert!(msg.contains('3'), "{msg}");
    let neg = Tensor::from_vec(vec![-1i64], &[1]).unwrap();
    assert!(e.forward(&neg).is_err());
    let float_idx = Tensor::zeros(&[2], DType::F32, Device::Cpu).unwrap();
    assert!(e.forward(&float_idx).is_err());
    assert!(Embedding::new(3, 2, Some(3)).is_err());
    let empty = Tensor::from_vec(Vec::<i64>::new(), &[0]).unwrap();
    assert_eq!(e.forward(&empty).unwrap().shape(), &[0, 2]);
}
