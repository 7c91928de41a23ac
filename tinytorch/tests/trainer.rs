//! `train::Trainer` against PyTorch: eight steps with every option on at once (schedule with
//! warm-up, gradient accumulation, clipping, weight decay, momentum, a moving average of the
//! weights) end on PyTorch's weights, average, learning rates and losses
//! (scripts/fixtures/gen_trainer_fixtures.py). Also its errors, mixed precision and the epoch loop's
//! step limit.

mod common;
use common::{load_fixture, max_diff};

use std::collections::BTreeMap;
use tinytorch::nn::{Linear, Module, Sequential, Tanh};
use tinytorch::optim::{Optimizer, SgdOptions, SGD};
use tinytorch::train::{
    cross_entropy_loss, Ema, LrSchedule, Progress, ScheduleKind, StepLimit, StepOptions, Trainer,
};
use tinytorch::{DType, Tensor};

/// The fixture's MLP in f64 with its initial weights.
fn mlp(f: &BTreeMap<String, Tensor>) -> Sequential {
    let param = |k: &str| {
        f[&format!("init.{k}")]
            .contiguous_copy()
            .unwrap()
            .requires_grad_(true)
            .unwrap()
    };
    let layer = |i: usize| {
        Linear::from_parameters(
            param(&format!("{i}.weight")),
            Some(param(&format!("{i}.bias"))),
        )
        .unwrap()
    };
    Sequential::new(vec![
        Box::new(layer(0)),
        Box::new(Tanh::new()),
        Box::new(layer(2)),
    ])
}

#[test]
fn every_option_at_once_matches_pytorch() {
    let f = load_fixture("trainer.safetensors");
    let model = mlp(&f);
    let mut opt = SGD::new(
        model.parameters(),
        SgdOptions {
            lr: 0.2,
            momentum: 0.9,
            weight_decay: 1e-3,
            ..Default::default()
        },
    )
    .unwrap();
    let mut trainer = Trainer::new(&opt);
    trainer.options = StepOptions {
        accumulate: 2,
        clip_grad_norm: Some(0.5),
        ..Default::default()
    };
    let kind = ScheduleKind::Cosine { min_lr: 0.01 };
    trainer.schedule = Some(LrSchedule::new(kind, 3, 0.1, 8).unwrap());
    trainer.ema = Some(Ema::new(0.8).unwrap());
    let (xs, ys) = (&f["xs"], &f["ys"]);
    let (want_lrs, want_losses) = (
        f["lrs"].to_vec_f64().unwrap(),
        f["losses"].to_vec_f64().unwrap(),
    );
    for s in 0..8 {
        let (x, y) = (xs.select(0, s).unwrap(), ys.select(0, s).unwrap());
        let (loss, _) = trainer
            .step(&model, &mut opt, &x, &y, &cross_entropy_loss)
            .unwrap();
        let lr = opt.lrs()[0];
        assert!(
            (lr - want_lrs[s as usize]).abs() < 1e-12,
            "step {s}: lr {lr}"
        );
        assert!(
            (loss - want_losses[s as usize]).abs() < 1e-12,
            "step {s}: loss {loss}"
        );
    }
    assert_eq!(trainer.step, 8);
    let ema = trainer.ema.as_ref().unwrap().state_dict(&model).unwrap();
    for (k, w) in model.state_dict() {
        assert!(
            max_diff(&w, &f[&format!("final.{k}")]) < 1e-12,
            "weights {k}"
        );
        assert!(
            max_diff(&ema[&k], &f[&format!("ema.{k}")]) < 1e-12,
            "average {k}"
        );
    }
}

#[test]
fn ema_swaps_in_and_back_and_reloads() {
    let f = load_fixture("trainer.safetensors");
    let model = mlp(&f);
    let mut ema = Ema::new(0.5).unwrap();
    assert!(ema.swap(&model).is_err(), "no average before an update");
    ema.update(&model).unwrap();
    let before = model.state_dict()["0.weight"].contiguous_copy().unwrap();
    model.named_parameters()[0]
        .1
        .detach()
        .mul_scalar_(3.0)
        .unwrap();
    ema.update(&model).unwrap(); // average = 2 * before
    ema.swap(&model).unwrap();
    let swapped = model.state_dict()["0.weight"].contiguous_copy().unwrap();
    assert!(max_diff(&swapped, &before.mul_scalar(2.0).unwrap()) < 1e-12);
    ema.swap(&model).unwrap();
    let back = model.state_dict()["0.weight"].contiguous_copy().unwrap();
    assert!(max_diff(&back, &before.mul_scalar(3.0).unwrap()) < 1e-12);

    let saved = ema.state_dict(&model).unwrap();
    let mut again = Ema::new(0.5).unwrap();
    again
        .load_state_dict(&model, &saved, ema.updates())
        .unwrap();
    assert_eq!(again.updates(), 2);
    let mut partial = saved.clone();
    partial.remove("2.bias");
    let e = Ema::new(0.5)
        .unwrap()
        .load_state_dict(&model, &partial, 2)
        .unwrap_err();
    assert!(e.to_string().contains("2.bias"), "{e}");
    assert!(Ema::new(1.5).is_err());
}

#[test]
fn bf16_autocast_steps_train_and_bad_accumulation_is_an_error() {
    let f = load_fixture("trainer.safetensors");
    let model = mlp(&f);
    // The weights in f32, as mixed precision expects.
    let model32 = Sequential::new(vec![
        Box::new(Linear::new(4, 8, true).unwrap()),
        Box::new(Tanh::new()),
        Box::new(Linear::new(8, 3, true).unwrap()),
    ]);
    let mut opt = SGD::new(
        model32.parameters(),
        SgdOptions {
            lr: 0.1,
            ..Default::default()
        },
    )
    .unwrap();
    let mut trainer = Trainer::new(&opt);
    trainer.options.amp = Some(DType::BF16);
    let x = f["xs"].select(0, 0).unwrap().to_dtype(DType::F32).unwrap();
    let y = f["ys"].select(0, 0).unwrap();
    let mut losses = Vec::new();
    for _ in 0..30 {
        losses.push(
            trainer
                .step(&model32, &mut opt, &x, &y, &cross_entropy_loss)
                .unwrap()
                .0,
        );
    }
    assert!(
        losses[29] < losses[0] * 0.5,
        "bf16 steps should fit one batch: {losses:?}"
    );
    for p in model32.parameters() {
        assert_eq!(p.dtype(), DType::F32, "the weights stay f32");
    }

    let mut opt = SGD::new(model.parameters(), SgdOptions::default()).unwrap();
    let mut trainer = Trainer::new(&opt);
    trainer.options.accumulate = 7;
    let x = f["xs"].select(0, 0).unwrap();
    let e = trainer
        .step(&model, &mut opt, &x, &y, &cross_entropy_loss)
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("batch of 6 samples into 7 micro-batches"),
        "{e}"
    );
}

#[test]
fn the_epoch_loop_stops_at_the_step_limit_and_counts_steps() {
    let f = load_fixture("trainer.safetensors");
    let mut model = mlp(&f);
    let mut opt = SGD::new(model.parameters(), SgdOptions::default()).unwrap();
    let mut trainer = Trainer::new(&opt);
    trainer.limit = StepLimit(Some(5));
    let batches: Vec<_> = (0..8)
        .map(|s| Ok((f["xs"].select(0, s).unwrap(), f["ys"].select(0, s).unwrap())))
        .collect();
    let mut seen = Vec::new();
    let totals = trainer
        .train_epoch(
            &mut model,
            &mut opt,
            batches,
            &Progress::hidden(),
            &cross_entropy_loss,
            &mut |d| {
                seen.push(d.samples);
                Ok(())
            },
        )
        .unwrap();
    assert_eq!((totals.steps, totals.samples, trainer.step), (5, 30, 5));
    assert_eq!(seen, [6; 5]);
    assert!(trainer.limit.exhausted());
}

#[test]
fn a_nonfinite_loss_stops_before_the_weights_change() {
    let f = load_fixture("trainer.safetensors");
    let model = mlp(&f);
    let mut opt = SGD::new(model.parameters(), SgdOptions::default()).unwrap();
    let before = model.state_dict()["0.weight"].contiguous_copy().unwrap();
    let mut trainer = Trainer::new(&opt);
    let x = f["xs"].select(0, 0).unwrap().mul_scalar(f64::NAN).unwrap();
    let y = f["ys"].select(0, 0).unwrap();
    let e = trainer
        .step(&model, &mut opt, &x, &y, &cross_entropy_loss)
        .unwrap_err();
    assert!(e.to_string().contains("the loss is NaN at step 0"), "{e}");
    assert_eq!(max_diff(&model.state_dict()["0.weight"], &before), 0.0);
    assert_eq!(trainer.step, 0);
    trainer.options.allow_nonfinite_loss = true;
    let (loss, _) = trainer
        .step(&model, &mut opt, &x, &y, &cross_entropy_loss)
        .unwrap();
    assert!(loss.is_nan());
}
