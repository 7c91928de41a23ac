//! torch.optim: optimizer trajectories, schedulers, clipping, state-dict round trip and
//! argument errors. Every expected number comes from PyTorch (torch 2.15, float64) running
//! the same problem: loss = sum((w*x - y)^2) + sum((v*x2 - y2)^2), w in group 0 and v in
//! group 1 with its own hyperparameters. The numbers are in `tests/fixtures/optim.json`,
//! written by `scripts/fixtures/gen_optim.py`, which repeats each run below in PyTorch.

mod common;
use common::{assert_close_slices, load_json_fixture, Tol};
use serde_json::Value;

use tinytorch::optim::lr_scheduler::{
    CosineAnnealingLR, ExponentialLR, LinearLR, LrScheduler, MultiStepLR, OneCycleLR,
    OneCycleOptions, PlateauOptions, ReduceLROnPlateau, StepLR,
};
use tinytorch::optim::{
    clip_grad_norm_, clip_grad_value_, Adadelta, AdadeltaOptions, Adagrad, AdagradOptions, Adam,
    AdamOptions, AdamW, Optimizer, ParamGroup, RMSprop, RMSpropOptions, SgdOptions, SGD,
};
use tinytorch::{DType, Device, Tensor};

const X: [f64; 3] = [0.5, -1.0, 2.0];
const Y: [f64; 3] = [1.0, 2.0, -1.0];
const X2: [f64; 2] = [1.5, -0.5];
const Y2: [f64; 2] = [0.3, 0.7];

fn leaf(v: &[f64]) -> Tensor {
    Tensor::from_slice(v).requires_grad_(true).unwrap()
}

fn params() -> (Tensor, Tensor) {
    (leaf(&[0.1, -0.2, 0.3]), leaf(&[0.4, -0.6]))
}

fn loss(w: &Tensor, v: &Tensor) -> Tensor {
    let a = w
        .mul(&Tensor::from_slice(&X))
        .unwrap()
        .sub(&Tensor::from_slice(&Y))
        .unwrap()
        .square()
        .unwrap()
        .sum_all()
        .unwrap();
    let b = v
        .mul(&Tensor::from_slice(&X2))
        .unwrap()
        .sub(&Tensor::from_slice(&Y2))
        .unwrap()
        .square()
        .unwrap()
        .sum_all()
        .unwrap();
    a.add(&b).unwrap()
}

fn run(opt: &mut dyn Optimizer, w: &Tensor, v: &Tensor, steps: usize) {
    for _ in 0..steps {
        opt.zero_grad();
        loss(w, v).backward().unwrap();
        opt.step().unwrap();
    }
}

fn values(w: &Tensor, v: &Tensor) -> Vec<f64> {
    let mut out = w.to_vec_f64().unwrap();
    out.extend(v.to_vec_f64().unwrap());
    out
}

/// PyTorch's numbers for these tests: `optim.json`'s `section` (`optimizers`, `schedulers`,
/// `clip_grad_norm`), entry `name`.
fn expected(section: &str, name: &str) -> Value {
    let all = load_json_fixture("optim.json");
    let v = all[section][name].clone();
    assert!(!v.is_null(), "optim.json has no {section}.{name}");
    v
}

/// A JSON array of numbers as f64s.
fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|x| x.as_f64().unwrap_or_else(|| panic!("not a number: {x}")))
        .collect()
}

/// `w` then `v` after an optimizer's run, within 1e-9 of PyTorch's run `name`.
#[track_caller]
fn assert_trajectory(w: &Tensor, v: &Tensor, name: &str) {
    let want = floats(&expected("optimizers", name));
    assert_close_slices(&values(w, v), &want, Tol::abs(1e-9), name);
}

/// Each step's learning rates (or momenta) of both groups, within 1e-12 of PyTorch's
/// sequence `name`.
#[track_caller]
fn assert_lrs(name: &str, got: &[Vec<f64>]) {
    let want = expected("schedulers", name);
    let want = want.as_array().expect("a list of steps");
    assert_eq!(got.len(), want.len(), "{name}: steps");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_close_slices(g, &floats(w), Tol::abs(1e-12), &format!("{name} step {i}"));
    }
}

/// SGD(lr=0.1, momentum=0.9) over two groups (the second with lr 0.05), as the scheduler
/// tests' optimizer.
fn sched_opt() -> SGD {
    let w = Tensor::zeros(&[2], DType::F64, Device::Cpu).unwrap();
    let v = Tensor::zeros(&[2], DType::F64, Device::Cpu).unwrap();
    SGD::new(
        vec![ParamGroup::new(vec![w]), ParamGroup::new(vec![v]).lr(0.05)],
        SgdOptions {
            lr: 0.1,
            momentum: 0.9,
            ..Default::default()
        },
    )
    .unwrap()
}

fn lr_sequence(opt: &mut SGD, s: &mut dyn LrScheduler, steps: usize) -> Vec<Vec<f64>> {
    let mut out = vec![s.get_last_lr()];
    for _ in 0..steps {
        opt.step().unwrap();
        s.step(opt).unwrap();
        out.push(s.get_last_lr());
    }
    out
}

#[test]
fn sgd_plain_matches_pytorch() {
    let (w, v) = params();
    let mut opt = SGD::new(
        vec![
            ParamGroup::new(vec![w.clone()]),
            ParamGroup::new(vec![v.clone()]).lr(0.05),
        ],
        SgdOptions {
            lr: 0.1,
            ..Default::default()
        },
    )
    .unwrap();
    run(&mut opt, &w, &v, 5);
    // PyTorch's values (optim.json): torch.optim.SGD, same groups, 5 steps.
    assert_trajectory(&w, &v, "sgd_plain");
}

#[test]
fn sgd_momentum_wd_matches_pytorch() {
    let (w, v) = params();
    let mut opt = SGD::new(
        vec![
            ParamGroup::new(vec![w.clone()]),
            ParamGroup::new(vec![v.clone()])
                .lr(0.02)
                .with("momentum", 0.5),
        ],
        SgdOptions {
            lr: 0.05,
            momentum: 0.9,
            dampening: 0.1,
            weight_decay: 0.01,
            ..Default::default()
        },
    )
    .unwrap();
    run(&mut opt, &w, &v, 5);
    // PyTorch's values (optim.json): torch.optim.SGD, same groups, 5 steps.
    assert_trajectory(&w, &v, "sgd_momentum_wd");
}

#[test]
fn sgd_nesterov_max_matches_pytorch() {
    let (w, v) = params();
    let mut opt = SGD::new(
        vec![
            ParamGroup::new(vec![w.clone()]),
            ParamGroup::new(vec![v.clone()]).lr(0.01),
        ],
        SgdOptions {
            lr: 0.05,
            momentum: 0.8,
            nesterov: true,
            maximize: true,
            ..Default::default()
        },
    )
    .unwrap();
    run(&mut opt, &w, &v, 5);
    // PyTorch's values (optim.json): torch.optim.SGD, same groups, 5 steps.
    assert_trajectory(&w, &v, "sgd_nesterov_max");
}

#[test]
fn adam_default_matches_pytorch() {
    let (w, v) = params();
    let mut opt = Adam::new(
        vec![
            ParamGroup::new(vec![w.clone()]),
            ParamGroup::new(vec![v.clone()]).lr(0.05),
        ],
        AdamOptions {
            lr: 0.1,
            ..Default::default()
        },
    )
    .unwrap();
    run(&mut opt, &w, &v, 5);
    // PyTorch's values (optim.json): torch.optim.Adam, same groups, 5 steps.
    assert_trajectory(&w, &v, "adam_default");
}

#[test]
fn adam_wd_amsgrad_matches_pytorch() {
    let (w, v) = params();
    let mut opt = Adam::new(
        vec![
            ParamGroup::new(vec![w.clone()]),
            ParamGroup::new(vec![v.clone()])
                .lr(0.05)
                .with("beta1", 0.5)
                .with("beta2", 0.99),
        ],
        AdamOptions {
            lr: 0.1,
            betas: (0.8, 0.9),
            eps: 1e-6,
            weight_decay: 0.1,
            amsgrad: true,
            ..Default::default()
        },
    )
    .unwrap();
    run(&mut opt, &w, &v, 5);
    // PyTorch's values (optim.json): torch.optim.Adam, same groups, 5 steps.
    assert_trajectory(&w, &v, "adam_wd_amsgrad");
}

#[test]
fn adamw_default_matches_pytorch() {
    let (w, v) = params();
    let mut opt = AdamW::new(
        vec![
            ParamGroup::new(vec![w.clone()]),
            ParamGroup::new(vec![v.clone()])
                .lr(0.05)
                .with("weight_decay", 0.5),
        ],
        AdamOptions {
            lr: 0.1,
            ..AdamOptions::adamw()
        },
    )
    .unwrap();
    run(&mut opt, &w, &v, 5);
    // PyTorch's values (optim.json): torch.optim.AdamW, same groups, 5 steps.
    assert_trajectory(&w, &v, "adamw_default");
}

#[test]
fn adamw_amsgrad_matches_pytorch() {
    let (w, v) = params();
    let mut opt = AdamW::new(
        vec![
            ParamGroup::new(vec![w.clone()]),
            ParamGroup::new(vec![v.clone()]).lr(0.05),
        ],
        AdamOptions {
            lr: 0.1,
            betas: (0.7, 0.95),
            weight_decay: 0.2,
            amsgrad: true,
            maximize: true,
            ..AdamOptions::adamw()
        },
    )
    .unwrap();
    run(&mut opt, &w, &v, 5);
    // PyTorch's values (optim.json): torch.optim.AdamW, same groups, 5 steps.
    assert_trajectory(&w, &v, "adamw_amsgrad");
}

#[test]
fn rmsprop_default_matches_pytorch() {
    let (w, v) = params();
    let mut opt = RMSprop::new(
        vec![
            ParamGroup::new(vec![w.clone()]),
            ParamGroup::new(vec![v.clone()]).lr(0.03),
        ],
        RMSpropOptions::default(),
    )
    .unwrap();
    run(&mut opt, &w, &v, 5);
    // PyTorch's values (optim.json): torch.optim.RMSprop, same groups, 5 steps.
    assert_trajectory(&w, &v, "rmsprop_default");
}

#[test]
fn rmsprop_centered_momentum_matches_pytorch() {
    let (w, v) = params();
    let mut opt = RMSprop::new(
        vec![
            ParamGroup::new(vec![w.clone()]),
            ParamGroup::new(vec![v.clone()])
                .lr(0.02)
                .with("centered", 0.0),
        ],
        RMSpropOptions {
            lr: 0.01,
            alpha: 0.9,
            eps: 1e-6,
            weight_decay: 0.1,
            momentum: 0.7,
            centered: true,
            ..Default::default()
        },
    )
    .unwrap();
    run(&mut opt, &w, &v, 5);
    // PyTorch's values (optim.json): torch.optim.RMSprop, same groups, 5 steps.
    assert_trajectory(&w, &v, "rmsprop_centered_momentum");
}

#[test]
fn adagrad_default_matches_pytorch() {
    let (w, v) = params();
    let mut opt = Adagrad::new(
        vec![
            ParamGroup::new(vec![w.clone()]),
            ParamGroup::new(vec![v.clone()]).lr(0.2),
        ],
        AdagradOptions {
            lr: 0.1,
            ..Default::default()
        },
    )
    .unwrap();
    run(&mut opt, &w, &v, 5);
    // PyTorch's values (optim.json): torch.optim.Adagrad, same groups, 5 steps.
    assert_trajectory(&w, &v, "adagrad_default");
}

#[test]
fn adagrad_decay_matches_pytorch() {
    let (w, v) = params();
    let mut opt = Adagrad::new(
        vec![
            ParamGroup::new(vec![w.clone()]),
            ParamGroup::new(vec![v.clone()])
                .lr(0.3)
                .with("lr_decay", 0.0),
        ],
        AdagradOptions {
            lr: 0.1,
            lr_decay: 0.1,
            weight_decay: 0.05,
            initial_accumulator_value: 0.5,
            eps: 1e-8,
            ..Default::default()
        },
    )
    .unwrap();
    run(&mut opt, &w, &v, 5);
    // PyTorch's values (optim.json): torch.optim.Adagrad, same groups, 5 steps.
    assert_trajectory(&w, &v, "adagrad_decay");
}

#[test]
fn adadelta_default_matches_pytorch() {
    let (w, v) = params();
    let mut opt = Adadelta::new(
        vec![
            ParamGroup::new(vec![w.clone()]),
            ParamGroup::new(vec![v.clone()]).lr(0.5),
        ],
        AdadeltaOptions::default(),
    )
    .unwrap();
    run(&mut opt, &w, &v, 5);
    // PyTorch's values (optim.json): torch.optim.Adadelta, same groups, 5 steps.
    assert_trajectory(&w, &v, "adadelta_default");
}

#[test]
fn adadelta_wd_matches_pytorch() {
    let (w, v) = params();
    let mut opt = Adadelta::new(
        vec![
            ParamGroup::new(vec![w.clone()]),
            ParamGroup::new(vec![v.clone()]).with("rho", 0.95),
        ],
        AdadeltaOptions {
            lr: 2.0,
            rho: 0.8,
            eps: 1e-4,
            weight_decay: 0.1,
            ..Default::default()
        },
    )
    .unwrap();
    run(&mut opt, &w, &v, 5);
    // PyTorch's values (optim.json): torch.optim.Adadelta, same groups, 5 steps.
    assert_trajectory(&w, &v, "adadelta_wd");
}

#[test]
fn step_lr_matches_pytorch() {
    let mut opt = sched_opt();
    let mut s = StepLR::new(&mut opt, 3, 0.5).unwrap();
    // PyTorch's values (optim.json): StepLR(opt, 3, gamma=0.5).
    assert_lrs("step_lr", &lr_sequence(&mut opt, &mut s, 12));
    assert_eq!(opt.lrs(), s.get_last_lr());
}

#[test]
fn multistep_lr_matches_pytorch() {
    let mut opt = sched_opt();
    let mut s = MultiStepLR::new(&mut opt, &[2, 5, 5, 9], 0.3).unwrap();
    // PyTorch's values (optim.json): MultiStepLR(opt, [2, 5, 5, 9], gamma=0.3).
    assert_lrs("multistep_lr", &lr_sequence(&mut opt, &mut s, 12));
}

#[test]
fn exponential_lr_matches_pytorch() {
    let mut opt = sched_opt();
    let mut s = ExponentialLR::new(&mut opt, 0.8).unwrap();
    // PyTorch's values (optim.json): ExponentialLR(opt, 0.8).
    assert_lrs("exponential_lr", &lr_sequence(&mut opt, &mut s, 12));
}

#[test]
fn cosine_annealing_lr_matches_pytorch() {
    let mut opt = sched_opt();
    let mut s = CosineAnnealingLR::new(&mut opt, 5, 0.01).unwrap();
    // PyTorch's values (optim.json): CosineAnnealingLR(opt, 5, eta_min=0.01), past T_max and back up.
    assert_lrs("cosine_annealing_lr", &lr_sequence(&mut opt, &mut s, 12));
}

#[test]
fn linear_lr_matches_pytorch() {
    let mut opt = sched_opt();
    let mut s = LinearLR::new(&mut opt, 0.25, 1.0, 4).unwrap();
    // PyTorch's values (optim.json): LinearLR(opt, start_factor=0.25, end_factor=1.0, total_iters=4).
    assert_lrs("linear_lr", &lr_sequence(&mut opt, &mut s, 12));
}

#[test]
fn one_cycle_lr_matches_pytorch() {
    let mut opt = sched_opt();
    let mut s = OneCycleLR::new(&mut opt, &[1.0, 0.5], 12, OneCycleOptions::default()).unwrap();
    let mut moms = vec![vec![
        opt.param_groups()[0].option("SGD", "momentum").unwrap(),
        opt.param_groups()[1].option("SGD", "momentum").unwrap(),
    ]];
    let mut lrs = vec![s.get_last_lr()];
    for _ in 0..11 {
        opt.step().unwrap();
        s.step(&mut opt).unwrap();
        lrs.push(s.get_last_lr());
        moms.push(
            opt.param_groups()
                .iter()
                .map(|g| g.option("SGD", "momentum").unwrap())
                .collect(),
        );
    }
    // PyTorch's values (optim.json): OneCycleLR(opt, max_lr=[1.0, 0.5], total_steps=12), lrs and momenta.
    assert_lrs("one_cycle_lr", &lrs);
    assert_lrs("one_cycle_momentum", &moms);
    // Step total_steps is still allowed (as PyTorch); one more is an error.
    s.step(&mut opt).unwrap();
    assert!(
        s.step(&mut opt).is_err(),
        "stepping past total_steps is an error"
    );
}

#[test]
fn reduce_lr_on_plateau_matches_pytorch() {
    let mut opt = sched_opt();
    let mut s = ReduceLROnPlateau::new(
        &opt,
        PlateauOptions {
            factor: 0.5,
            patience: 2,
            threshold: 0.01,
            cooldown: 1,
            min_lr: vec![0.02, 0.0],
            ..Default::default()
        },
    )
    .unwrap();
    let metrics = [
        1.0, 0.9, 0.895, 0.9, 0.91, 0.8, 0.85, 0.85, 0.85, 0.85, 0.85, 0.7, 0.75, 0.75, 0.75, 0.75,
    ];
    let mut got = Vec::new();
    for m in metrics {
        s.step(&mut opt, m).unwrap();
        got.push(s.get_last_lr());
    }
    // PyTorch's values (optim.json): ReduceLROnPlateau(opt, 'min', factor=0.5, patience=2, threshold=0.01,
    // cooldown=1, min_lr=[0.02, 0.0]).
    assert_lrs("reduce_lr_on_plateau_min", &got);

    let mut opt = sched_opt();
    let mut s = ReduceLROnPlateau::new(
        &opt,
        PlateauOptions {
            mode: "max",
            patience: 1,
            threshold: 0.1,
            threshold_mode: "abs",
            ..Default::default()
        },
    )
    .unwrap();
    let mut got = Vec::new();
    for m in [1.0, 1.05, 1.2, 1.25, 1.3, 2.0, 1.0, 1.0] {
        s.step(&mut opt, m).unwrap();
        got.push(s.get_last_lr());
    }
    // PyTorch's values (optim.json): ReduceLROnPlateau(opt, 'max', factor=0.1, patience=1, threshold=0.1,
    // threshold_mode='abs').
    assert_lrs("reduce_lr_on_plateau_max", &got);
}

#[test]
fn clip_grad_norm_matches_pytorch() {
    // PyTorch's values (optim.json): torch.nn.utils.clip_grad_norm_ on grads [[3,-4],[1,2]] and [0.5,-12,2].
    let cases = [(2.0, 5.0), (f64::INFINITY, 3.0), (1.0, 100.0), (2.0, 100.0)];
    let want = load_json_fixture("optim.json")["clip_grad_norm"].clone();
    let want = want.as_array().expect("one entry per case");
    assert_eq!(want.len(), cases.len());
    for ((norm_type, max_norm), want) in cases.into_iter().zip(want) {
        let (total, grads) = (want["total"].as_f64().unwrap(), floats(&want["grads"]));
        let a = Tensor::zeros(&[2, 2], DType::F64, Device::Cpu).unwrap();
        let b = Tensor::zeros(&[3], DType::F64, Device::Cpu).unwrap();
        let c = Tensor::zeros(&[1], DType::F64, Device::Cpu).unwrap(); // no grad: skipped
        a.set_grad(Some(
            Tensor::from_vec(vec![3.0, -4.0, 1.0, 2.0], &[2, 2]).unwrap(),
        ));
        b.set_grad(Some(Tensor::from_slice(&[0.5, -12.0, 2.0])));
        let t = clip_grad_norm_(&[a.clone(), b.clone(), c], max_norm, norm_type).unwrap();
        let what = format!("norm_type {norm_type}, max_norm {max_norm}");
        let t = t.item_f64().unwrap();
        assert_close_slices(&[t], &[total], Tol::abs(1e-12), &format!("{what}: total"));
        let mut got = a.grad().unwrap().to_vec_f64().unwrap();
        got.extend(b.grad().unwrap().to_vec_f64().unwrap());
        assert_close_slices(&got, &grads, Tol::abs(1e-12), &format!("{what}: gradients"));
    }
}

#[test]
fn clip_grad_value_clamps_and_rejects_negative() {
    let a = Tensor::zeros(&[3], DType::F32, Device::Cpu).unwrap();
    a.set_grad(Some(Tensor::from_slice(&[-3.0f32, 0.5, 2.0])));
    clip_grad_value_(std::slice::from_ref(&a), 1.0).unwrap();
    assert_eq!(
        a.grad().unwrap().to_vec::<f32>().unwrap(),
        vec![-1.0, 0.5, 1.0]
    );
    assert!(clip_grad_value_(std::slice::from_ref(&a), -1.0).is_err());
    assert!(clip_grad_norm_(&[a], 1.0, 0.0).is_err());
}

/// Build an Adam with amsgrad over (w, v) in two groups.
fn adam_for(w: &Tensor, v: &Tensor) -> Adam {
    Adam::new(
        vec![
            ParamGroup::new(vec![w.clone()]),
            ParamGroup::new(vec![v.clone()]).lr(0.05),
        ],
        AdamOptions {
            lr: 0.1,
            amsgrad: true,
            weight_decay: 0.1,
            ..Default::default()
        },
    )
    .unwrap()
}

#[test]
fn state_dict_round_trip_continues_identically() {
    let (w, v) = params();
    let mut opt = adam_for(&w, &v);
    run(&mut opt, &w, &v, 6);
    let uninterrupted = values(&w, &v);

    let (w, v) = params();
    let mut opt = adam_for(&w, &v);
    run(&mut opt, &w, &v, 3);
    let saved = opt.state_dict();
    let saved_values = values(&w, &v);
    run(&mut opt, &w, &v, 1); // later steps must not change the snapshot
    assert_eq!(saved.state.len(), 2);
    assert_eq!(saved.param_groups[1].params, vec![1]);

    let (w2, v2) = (leaf(&saved_values[..3]), leaf(&saved_values[3..]));
    let mut fresh = adam_for(&w2, &v2);
    fresh.load_state_dict(&saved).unwrap();
    run(&mut fresh, &w2, &v2, 3);
    assert_eq!(values(&w2, &v2), uninterrupted);

    // Group-size and shape mismatches are errors.
    let mut other = Adam::new(vec![w2.clone()], AdamOptions::default()).unwrap();
    assert!(other.load_state_dict(&saved).is_err());
    let (a, b) = (leaf(&[0.0]), leaf(&[0.0, 0.0]));
    let mut wrong = adam_for(&a, &b);
    assert!(wrong.load_state_dict(&saved).is_err());
}

#[test]
fn sgd_state_dict_restores_momentum_and_lr() {
    let mk = |w: &Tensor, v: &Tensor| {
        SGD::new(
            vec![w.clone(), v.clone()],
            SgdOptions {
                lr: 0.05,
                momentum: 0.9,
                ..Default::default()
            },
        )
        .unwrap()
    };
    let (w, v) = params();
    let mut opt = mk(&w, &v);
    run(&mut opt, &w, &v, 3);
    opt.set_lr(0, 0.02).unwrap();
    let saved = opt.state_dict();
    let snapshot = values(&w, &v);
    run(&mut opt, &w, &v, 2);
    let (w2, v2) = (leaf(&snapshot[..3]), leaf(&snapshot[3..]));
    let mut fresh = mk(&w2, &v2);
    fresh.load_state_dict(&saved).unwrap();
    assert_eq!(fresh.lrs(), vec![0.02]);
    run(&mut fresh, &w2, &v2, 2);
    assert_eq!(values(&w2, &v2), values(&w, &v));
}

/// sum((w * x - y)^2) / 4 over a batch of rows of x and y ([n, 3]): the mean over a batch of
/// 4 samples, so two micro-batches of 2 add up to the full batch.
fn batch_loss(w: &Tensor, x: &[f64], y: &[f64]) -> Tensor {
    let n = x.len() / 3;
    let x = Tensor::from_vec(x.to_vec(), &[n, 3]).unwrap();
    let y = Tensor::from_vec(y.to_vec(), &[n, 3]).unwrap();
    w.mul(&x)
        .unwrap()
        .sub(&y)
        .unwrap()
        .square()
        .unwrap()
        .sum_all()
        .unwrap()
        .mul_scalar(0.25)
        .unwrap()
}

#[test]
fn gradient_accumulation_equals_one_big_batch() {
    let xs: Vec<f64> = (0..12).map(|i| (i as f64 * 0.7).sin()).collect();
    let ys: Vec<f64> = (0..12).map(|i| (i as f64 * 0.3).cos()).collect();
    let opts = SgdOptions {
        lr: 0.1,
        momentum: 0.5,
        ..Default::default()
    };
    let w = leaf(&[0.1, -0.2, 0.3]);
    let w2 = leaf(&[0.1, -0.2, 0.3]);
    let mut micro = SGD::new(vec![w.clone()], opts).unwrap();
    let mut big = SGD::new(vec![w2.clone()], opts).unwrap();
    for _ in 0..3 {
        micro.zero_grad();
        batch_loss(&w, &xs[..6], &ys[..6]).backward().unwrap();
        batch_loss(&w, &xs[6..], &ys[6..]).backward().unwrap();
        micro.step().unwrap();
        big.zero_grad();
        batch_loss(&w2, &xs, &ys).backward().unwrap();
        big.step().unwrap();
    }
    let (a, b) = (w.to_vec_f64().unwrap(), w2.to_vec_f64().unwrap());
    assert_close_slices(&a, &b, Tol::abs(1e-12), "accumulated vs one batch");
}

#[test]
fn step_updates_in_place_and_skips_params_without_grad() {
    let w = leaf(&[1.0, 2.0]);
    let frozen = leaf(&[5.0]);
    let handle = w.clone();
    let mut opt = SGD::new(
        vec![w.clone(), frozen.clone()],
        SgdOptions {
            lr: 0.5,
            ..Default::default()
        },
    )
    .unwrap();
    w.sum_all().unwrap().backward().unwrap();
    opt.step().unwrap();
    assert_eq!(handle.to_vec_f64().unwrap(), vec![0.5, 1.5]);
    assert_eq!(frozen.to_vec_f64().unwrap(), vec![5.0]);
    assert!(
        opt.state_dict().state.is_empty(),
        "plain SGD keeps no state"
    );
    assert!(!w.grad().unwrap().requires_grad());
    opt.zero_grad();
    assert!(w.grad().is_none());
}

#[test]
fn f32_parameters_follow_the_f64_trajectory() {
    let w = Tensor::from_slice(&[0.1f32, -0.2, 0.3])
        .requires_grad_(true)
        .unwrap();
    let x = Tensor::from_slice(&[0.5f32, -1.0, 2.0]);
    let y = Tensor::from_slice(&[1.0f32, 2.0, -1.0]);
    let mut opt = Adam::new(
        vec![w.clone()],
        AdamOptions {
            lr: 0.1,
            ..Default::default()
        },
    )
    .unwrap();
    for _ in 0..5 {
        opt.zero_grad();
        w.mul(&x)
            .unwrap()
            .sub(&y)
            .unwrap()
            .square()
            .unwrap()
            .sum_all()
            .unwrap()
            .backward()
            .unwrap();
        opt.step().unwrap();
    }
    assert_eq!(w.dtype(), DType::F32);
    // PyTorch's adam_default run (optim.json), group 0.
    let want = floats(&expected("optimizers", "adam_default"));
    assert_close_slices(&w.to_vec_f64().unwrap(), &want[..3], Tol::abs(1e-6), "w");
}

#[test]
fn invalid_hyperparameters_are_errors() {
    let p = || vec![leaf(&[1.0])];
    let msg = |r: Result<(), tinytorch::Error>| r.unwrap_err().to_string();
    let e = msg(SGD::new(
        p(),
        SgdOptions {
            lr: -0.1,
            ..Default::default()
        },
    )
    .map(|_| ()));
    assert!(e.contains("learning rate"), "{e}");
    assert!(SGD::new(
        p(),
        SgdOptions {
            momentum: -1.0,
            ..Default::default()
        }
    )
    .is_err());
    assert!(SGD::new(
        p(),
        SgdOptions {
            nesterov: true,
            ..Default::default()
        }
    )
    .is_err());
    let e = msg(Adam::new(
        p(),
        AdamOptions {
            betas: (1.0, 0.999),
            ..Default::default()
        },
    )
    .map(|_| ()));
    assert!(e.contains("beta parameter at index 0"), "{e}");
    assert!(AdamW::new(
        p(),
        AdamOptions {
            betas: (0.9, -0.1),
            ..AdamOptions::adamw()
        }
    )
    .is_err());
    assert!(Adam::new(
        p(),
        AdamOptions {
            eps: -1e-8,
            ..Default::default()
        }
    )
    .is_err());
    assert!(RMSprop::new(
        p(),
        RMSpropOptions {
            alpha: -0.5,
            ..Default::default()
        }
    )
    .is_err());
    assert!(Adagrad::new(
        p(),
        AdagradOptions {
            lr_decay: -1.0,
            ..Default::default()
        }
    )
    .is_err());
    assert!(Adadelta::new(
        p(),
        AdadeltaOptions {
            rho: 1.5,
            ..Default::default()
        }
    )
    .is_err());
    assert!(SGD::new(Vec::<Tensor>::new(), SgdOptions::default()).is_err());
    let ints = Tensor::from_slice(&[1i64, 2]);
    assert!(SGD::new(vec![ints], SgdOptions::default()).is_err());
    let e = msg(SGD::new(
        vec![ParamGroup::new(p()).with("betas", 0.5)],
        SgdOptions::default(),
    )
    .map(|_| ()));
    assert!(e.contains("unknown"), "{e}");
    let mut opt = SGD::new(p(), SgdOptions::default()).unwrap();
    assert!(opt.set_lr(0, -1.0).is_err());
    assert!(opt.set_lr(3, 0.1).is_err());
    assert!(LinearLR::new(&mut opt, 0.0, 1.0, 4).is_err());
    assert!(StepLR::new(&mut opt, 0, 0.1).is_err());
    // OneCycleLR cycles momentum: Adagrad has none.
    let mut ada = Adagrad::new(p(), AdagradOptions::default()).unwrap();
    assert!(OneCycleLR::new(&mut ada, &[0.1], 10, OneCycleOptions::default()).is_err());
    assert!(ReduceLROnPlateau::new(
        &opt,
        PlateauOptions {
            factor: 1.0,
            ..Default::default()
        }
    )
    .is_err());
    assert!(ReduceLROnPlateau::new(
        &opt,
        PlateauOptions {
            mode: "up",
            ..Default::default()
        }
    )
    .is_err());
}

/// Options are read back typed at every step: a group whose option was renamed or removed
/// after construction (as Python code can do to `param_groups`) fails the step with the
/// missing name, instead of training with 0.0.
#[test]
fn a_missing_option_fails_the_step_by_name() {
    let w = leaf(&[1.0, 2.0]);
    let mut opt = SGD::new(
        vec![w.clone()],
        SgdOptions {
            lr: 0.1,
            momentum: 0.9,
            ..Default::default()
        },
    )
    .unwrap();
    let m = opt.param_groups_mut()[0]
        .options
        .remove("momentum")
        .unwrap();
    opt.param_groups_mut()[0]
        .options
        .insert("momentun".into(), m);
    w.sum_all().unwrap().backward().unwrap();
    let e = opt.step().unwrap_err().to_string();
    assert!(e.contains("SGD") && e.contains("'momentum'"), "{e}");
    assert_eq!(w.to_vec_f64().unwrap(), [1.0, 2.0], "nothing updated");
    let g = &opt.param_groups()[0];
    assert_eq!(g.option("SGD", "momentun").unwrap(), 0.9);
    assert!(g.flag("SGD", "nesterov").is_ok_and(|f| !f));
}
