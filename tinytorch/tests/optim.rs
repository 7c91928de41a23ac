//! torch.optim: optimizer trajectories, schedulers, clipping, state-dict round trip and
//! argument errors. Every expected number comes from PyTorch (torch 2.15, float64) running
//! the same problem: loss = sum((w*x - y)^2) + sum((v*x2 - y2)^2), w in group 0 and v in
//! group 1 with its own hyperparameters.

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

fn assert_close(w: &Tensor, v: &Tensor, expected: &[f64]) {
    let got = values(w, v);
    assert_eq!(got.len(), expected.len());
    for (g, e) in got.iter().zip(expected) {
        assert!((g - e).abs() < 1e-9, "got {got:?}, expected {expected:?}");
    }
}

fn assert_lrs(got: &[Vec<f64>], expected: &[[f64; 2]]) {
    assert_eq!(got.len(), expected.len());
    for (g, e) in got.iter().zip(expected) {
        for (a, b) in g.iter().zip(e) {
            assert!((a - b).abs() < 1e-12, "got {got:?}, expected {expected:?}");
        }
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
    // From PyTorch: torch.optim.SGD, same groups, 5 steps.
    assert_close(
        &w,
        &v,
        &[
            0.5298162187500001,
            -1.410176,
            -0.499744,
            0.25591631054687497,
            -0.6951234453124999,
        ],
    );
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
    // From PyTorch: torch.optim.SGD, same groups, 5 steps.
    assert_close(
        &w,
        &v,
        &[
            0.649110948280196,
            -1.9554686830247576,
            -1.1173715213389954,
            0.289439331031377,
            -0.6574313988600398,
        ],
    );
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
    // From PyTorch: torch.optim.SGD, same groups, 5 steps.
    assert_close(
        &w,
        &v,
        &[
            -0.6447165703409375,
            3.530920531840001,
            18.075664988160003,
            0.5522097864465202,
            -0.5419171606758009,
        ],
    );
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
    // From PyTorch: torch.optim.Adam, same groups, 5 steps.
    assert_close(
        &w,
        &v,
        &[
            0.5968385462630593,
            -0.6966032897461611,
            -0.18849571780882118,
            0.17230539913829251,
            -0.8480075970737471,
        ],
    );
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
    // From PyTorch: torch.optim.Adam, same groups, 5 steps.
    assert_close(
        &w,
        &v,
        &[
            0.5955383994329453,
            -0.6960238564382933,
            -0.18730831029284883,
            0.20166469208978643,
            -0.8366735179523119,
        ],
    );
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
    // From PyTorch: torch.optim.AdamW, same groups, 5 steps.
    assert_close(
        &w,
        &v,
        &[
            0.5953517824115093,
            -0.6946230107222899,
            -0.1889640679822762,
            0.14602252172685318,
            -0.7652890883125267,
        ],
    );
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
    // From PyTorch: torch.optim.AdamW, same groups, 5 steps.
    assert_close(
        &w,
        &v,
        &[
            -0.3953039223926407,
            0.30524537359566495,
            0.7612036353276825,
            0.6325386780912549,
            -0.32219497108451345,
        ],
    );
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
    // From PyTorch: torch.optim.RMSprop, same groups, 5 steps.
    assert_close(
        &w,
        &v,
        &[
            0.4139666027108547,
            -0.5133501100132414,
            0.002355905083687465,
            0.19860040137965465,
            -1.281231986833557,
        ],
    );
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
    // From PyTorch: torch.optim.RMSprop, same groups, 5 steps.
    assert_close(
        &w,
        &v,
        &[
            0.3573664598591681,
            -0.457793678959858,
            0.04803560831473338,
            0.11914043320628384,
            -1.0149697992499207,
        ],
    );
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
    // From PyTorch: torch.optim.Adagrad, same groups, 5 steps.
    assert_close(
        &w,
        &v,
        &[
            0.41268776320016903,
            -0.5120725974305446,
            0.0035817621833735686,
            0.19999999999999998,
            -1.1268839125477699,
        ],
    );
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
    // From PyTorch: torch.optim.Adagrad, same groups, 5 steps.
    assert_close(
        &w,
        &v,
        &[
            0.33968075350393445,
            -0.47138951431431886,
            0.03774407915183499,
            0.19777588900680318,
            -1.0383476643055174,
        ],
    );
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
    // From PyTorch: torch.optim.Adadelta, same groups, 5 steps.
    assert_close(
        &w,
        &v,
        &[
            0.1163990786921849,
            -0.2163972870085878,
            0.28364741901230944,
            0.3918641997855337,
            -0.6081961501503149,
        ],
    );
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
    // From PyTorch: torch.optim.Adadelta, same groups, 5 steps.
    assert_close(
        &w,
        &v,
        &[
            0.3337518374531394,
            -0.43452335054681385,
            0.07490267073630091,
            0.19841335352284684,
            -0.9555414579464167,
        ],
    );
}

#[test]
fn step_lr_matches_pytorch() {
    let mut opt = sched_opt();
    let mut s = StepLR::new(&mut opt, 3, 0.5).unwrap();
    // From PyTorch: StepLR(opt, 3, gamma=0.5).
    assert_lrs(
        &lr_sequence(&mut opt, &mut s, 12),
        &[
            [0.1, 0.05],
            [0.1, 0.05],
            [0.1, 0.05],
            [0.05, 0.025],
            [0.05, 0.025],
            [0.05, 0.025],
            [0.025, 0.0125],
            [0.025, 0.0125],
            [0.025, 0.0125],
            [0.0125, 0.00625],
            [0.0125, 0.00625],
            [0.0125, 0.00625],
            [0.00625, 0.003125],
        ],
    );
    assert_eq!(opt.lrs(), s.get_last_lr());
}

#[test]
fn multistep_lr_matches_pytorch() {
    let mut opt = sched_opt();
    let mut s = MultiStepLR::new(&mut opt, &[2, 5, 5, 9], 0.3).unwrap();
    // From PyTorch: MultiStepLR(opt, [2, 5, 5, 9], gamma=0.3).
    assert_lrs(
        &lr_sequence(&mut opt, &mut s, 12),
        &[
            [0.1, 0.05],
            [0.1, 0.05],
            [0.03, 0.015],
            [0.03, 0.015],
            [0.03, 0.015],
            [0.0026999999999999997, 0.0013499999999999999],
            [0.0026999999999999997, 0.0013499999999999999],
            [0.0026999999999999997, 0.0013499999999999999],
            [0.0026999999999999997, 0.0013499999999999999],
            [0.0008099999999999998, 0.0004049999999999999],
            [0.0008099999999999998, 0.0004049999999999999],
            [0.0008099999999999998, 0.0004049999999999999],
            [0.0008099999999999998, 0.0004049999999999999],
        ],
    );
}

#[test]
fn exponential_lr_matches_pytorch() {
    let mut opt = sched_opt();
    let mut s = ExponentialLR::new(&mut opt, 0.8).unwrap();
    // From PyTorch: ExponentialLR(opt, 0.8).
    assert_lrs(
        &lr_sequence(&mut opt, &mut s, 12),
        &[
            [0.1, 0.05],
            [0.08000000000000002, 0.04000000000000001],
            [0.06400000000000002, 0.03200000000000001],
            [0.051200000000000016, 0.025600000000000008],
            [0.04096000000000002, 0.02048000000000001],
            [0.03276800000000001, 0.016384000000000006],
            [0.026214400000000013, 0.013107200000000006],
            [0.02097152000000001, 0.010485760000000005],
            [0.016777216000000008, 0.008388608000000004],
            [0.013421772800000007, 0.006710886400000004],
            [0.010737418240000006, 0.005368709120000003],
            [0.008589934592000005, 0.0042949672960000025],
            [0.0068719476736000045, 0.0034359738368000023],
        ],
    );
}

#[test]
fn cosine_annealing_lr_matches_pytorch() {
    let mut opt = sched_opt();
    let mut s = CosineAnnealingLR::new(&mut opt, 5, 0.01).unwrap();
    // From PyTorch: CosineAnnealingLR(opt, 5, eta_min=0.01), past T_max and back up.
    assert_lrs(
        &lr_sequence(&mut opt, &mut s, 12),
        &[
            [0.1, 0.05],
            [0.09140576474687263, 0.04618033988749895],
            [0.06890576474687263, 0.03618033988749895],
            [0.04109423525312736, 0.02381966011250105],
            [0.018594235253127367, 0.013819660112501053],
            [0.01, 0.01],
            [0.018594235253127367, 0.013819660112501051],
            [0.04109423525312739, 0.023819660112501057],
            [0.06890576474687267, 0.03618033988749896],
            [0.09140576474687269, 0.04618033988749897],
            [0.10000000000000006, 0.050000000000000024],
            [0.09140576474687272, 0.046180339887498985],
            [0.06890576474687268, 0.03618033988749897],
        ],
    );
}

#[test]
fn linear_lr_matches_pytorch() {
    let mut opt = sched_opt();
    let mut s = LinearLR::new(&mut opt, 0.25, 1.0, 4).unwrap();
    // From PyTorch: LinearLR(opt, start_factor=0.25, end_factor=1.0, total_iters=4).
    assert_lrs(
        &lr_sequence(&mut opt, &mut s, 12),
        &[
            [0.025, 0.0125],
            [0.043750000000000004, 0.021875000000000002],
            [0.06250000000000001, 0.03125000000000001],
            [0.08125000000000002, 0.04062500000000001],
            [0.10000000000000002, 0.05000000000000001],
            [0.10000000000000002, 0.05000000000000001],
            [0.10000000000000002, 0.05000000000000001],
            [0.10000000000000002, 0.05000000000000001],
            [0.10000000000000002, 0.05000000000000001],
            [0.10000000000000002, 0.05000000000000001],
            [0.10000000000000002, 0.05000000000000001],
            [0.10000000000000002, 0.05000000000000001],
            [0.10000000000000002, 0.05000000000000001],
        ],
    );
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
    // From PyTorch: OneCycleLR(opt, max_lr=[1.0, 0.5], total_steps=12), lrs and momenta.
    assert_lrs(
        &lrs,
        &[
            [0.040000000000000036, 0.020000000000000018],
            [0.3497896542195831, 0.17489482710979154],
            [0.8792851591221287, 0.43964257956106434],
            [0.9944154354509117, 0.49720771772545586],
            [0.9330129698414117, 0.46650648492070584],
            [0.811745653949763, 0.4058728269748815],
            [0.6473789976951033, 0.32368949884755166],
            [0.46263710266697505, 0.23131855133348753],
            [0.28306099820869923, 0.14153049910434962],
            [0.1334775301888306, 0.0667387650944153],
            [0.03456698742539522, 0.01728349371269761],
            [4e-06, 2e-06],
        ],
    );
    assert_lrs(
        &moms,
        &[
            [0.95, 0.95],
            [0.9177302443521267, 0.9177302443521267],
            [0.8625744625914449, 0.8625744625914449],
            [0.8505584586887436, 0.8505584586887436],
            [0.856698729810778, 0.856698729810778],
            [0.8688255099070633, 0.8688255099070633],
            [0.8852622412794547, 0.8852622412794547],
            [0.9037365046793212, 0.9037365046793212],
            [0.9216941869558779, 0.9216941869558779],
            [0.9366525935914912, 0.9366525935914912],
            [0.9465436874322102, 0.9465436874322102],
            [0.95, 0.95],
        ],
    );
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
    // From PyTorch: ReduceLROnPlateau(opt, 'min', factor=0.5, patience=2, threshold=0.01,
    // cooldown=1, min_lr=[0.02, 0.0]).
    assert_lrs(
        &got,
        &[
            [0.1, 0.05],
            [0.1, 0.05],
            [0.1, 0.05],
            [0.1, 0.05],
            [0.05, 0.025],
            [0.05, 0.025],
            [0.05, 0.025],
            [0.05, 0.025],
            [0.025, 0.0125],
            [0.025, 0.0125],
            [0.025, 0.0125],
            [0.025, 0.0125],
            [0.025, 0.0125],
            [0.025, 0.0125],
            [0.02, 0.00625],
            [0.02, 0.00625],
        ],
    );

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
    // From PyTorch: ReduceLROnPlateau(opt, 'max', factor=0.1, patience=1, threshold=0.1,
    // threshold_mode='abs').
    assert_lrs(
        &got,
        &[
            [0.1, 0.05],
            [0.1, 0.05],
            [0.1, 0.05],
            [0.1, 0.05],
            [0.010000000000000002, 0.005000000000000001],
            [0.010000000000000002, 0.005000000000000001],
            [0.010000000000000002, 0.005000000000000001],
            [0.0010000000000000002, 0.0005000000000000001],
        ],
    );
}

#[test]
fn clip_grad_norm_matches_pytorch() {
    // From PyTorch: torch.nn.utils.clip_grad_norm_ on grads [[3,-4],[1,2]] and [0.5,-12,2].
    let cases: [(f64, f64, f64, [f64; 7]); 4] = [
        (
            2.0,
            5.0,
            13.35102992281869,
            [
                1.123508745258241,
                -1.4980116603443214,
                0.37450291508608036,
                0.7490058301721607,
                0.18725145754304018,
                -4.494034981032964,
                0.7490058301721607,
            ],
        ),
        (
            f64::INFINITY,
            3.0,
            12.0,
            [
                0.7499999375000053,
                -0.9999999166666738,
                0.24999997916666844,
                0.4999999583333369,
                0.12499998958333422,
                -2.999999750000021,
                0.4999999583333369,
            ],
        ),
        (1.0, 100.0, 24.5, [3.0, -4.0, 1.0, 2.0, 0.5, -12.0, 2.0]),
        (
            2.0,
            100.0,
            13.35102992281869,
            [3.0, -4.0, 1.0, 2.0, 0.5, -12.0, 2.0],
        ),
    ];
    for (norm_type, max_norm, total, grads) in cases {
        let a = Tensor::zeros(&[2, 2], DType::F64, Device::Cpu).unwrap();
        let b = Tensor::zeros(&[3], DType::F64, Device::Cpu).unwrap();
        let c = Tensor::zeros(&[1], DType::F64, Device::Cpu).unwrap(); // no grad: skipped
        a.set_grad(Some(
            Tensor::from_vec(vec![3.0, -4.0, 1.0, 2.0], &[2, 2]).unwrap(),
        ));
        b.set_grad(Some(Tensor::from_slice(&[0.5, -12.0, 2.0])));
        let t = clip_grad_norm_(&[a.clone(), b.clone(), c], max_norm, norm_type).unwrap();
        assert!((t.item_f64().unwrap() - total).abs() < 1e-12);
        let mut got = a.grad().unwrap().to_vec_f64().unwrap();
        got.extend(b.grad().unwrap().to_vec_f64().unwrap());
        for (g, e) in got.iter().zip(grads) {
            assert!(
                (g - e).abs() < 1e-12,
                "{norm_type}: got {got:?}, expected {grads:?}"
            );
        }
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
    for (x, y) in a.iter().zip(&b) {
        assert!((x - y).abs() < 1e-12, "{a:?} vs {b:?}");
    }
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
    // From PyTorch (adam_default above, group 0).
    let expected = [
        0.5968385462630593,
        -0.6966032897461611,
        -0.18849571780882118,
    ];
    for (g, e) in w.to_vec_f64().unwrap().iter().zip(expected) {
        assert!((g - e).abs() < 1e-6);
    }
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
