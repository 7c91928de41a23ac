//! `tinytorch prune`: prune a trained model by weight magnitude, in one round or several with
//! fine-tuning between them, report the sparsity and the test accuracy after each round, and
//! save the result. Structured pruning (`--method ln-structured`) then removes the pruned
//! channels, so the saved model and its file are smaller, its outputs those of the masked
//! model (the largest difference is printed).

use super::checkpoint::{load_trained_model, save_finished};
use super::config::RunConfig;
use super::data::{load_split, on_device, LoadedSplit, Split};
use super::session::{build, Session};
use clap::{Args, ValueEnum};
use serde_json::{json, Value};
use std::path::PathBuf;
use tinytorch::data::DataLoader;
use tinytorch::nn::Module;
use tinytorch::prune::{
    global_unstructured, l1_unstructured, ln_structured, shrink, Amount, MaskedOptimizer,
    PruneMasks, SparsityReport,
};
use tinytorch::train::{evaluate, train_epoch, Progress, StepLimit};
use tinytorch::{Device, Error, Result, Tensor};

/// How `tinytorch prune` picks what to remove.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PruneMethod {
    /// The smallest |w| of each weight tensor (`prune.l1_unstructured`).
    L1,
    /// The smallest |w| of all weight tensors together (`prune.global_unstructured`).
    Global,
    /// Whole output channels of smallest L2 norm (`prune.ln_structured(n=2, dim=0)`), then
    /// removed from the model.
    LnStructured,
}

/// Arguments of `tinytorch prune`.
#[derive(Args, Debug)]
pub struct PruneArgs {
    /// The model to prune: a `tinytorch train` checkpoint.
    #[arg(long, value_name = "CKPT")]
    pub checkpoint: PathBuf,
    /// What to prune.
    #[arg(long, value_enum, default_value = "l1")]
    pub method: PruneMethod,
    /// The fraction pruned in the end (of the weights, or of the channels).
    #[arg(long, default_value_t = 0.5)]
    pub amount: f64,
    /// Prune in this many rounds, each taking the same fraction of what is left.
    #[arg(long, default_value_t = 1)]
    pub rounds: usize,
    /// Epochs of fine-tuning after each round (pruned weights stay zero).
    #[arg(long, default_value_t = 0)]
    pub finetune_epochs: usize,
    /// Learning rate of the fine-tuning (default: the checkpoint's).
    #[arg(long)]
    pub lr: Option<f64>,
    /// Stop each round's fine-tuning after this many steps.
    #[arg(long, value_name = "N")]
    pub max_steps: Option<u64>,
    /// Directory of the data set's files (default: the checkpoint's).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Save the pruned model here as a `train` checkpoint.
    #[arg(long, value_name = "CKPT")]
    pub out: Option<PathBuf>,
    /// Print the results as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// The weights this method prunes: every weight of two or more dims (convolutions, linear
/// layers) for the unstructured methods; for structured pruning, the layers whose channels
/// can go (not the classifier).
fn targets(
    config: &RunConfig,
    model: &dyn Module,
    method: PruneMethod,
) -> Result<Vec<(String, Tensor)>> {
    let params = model.named_parameters();
    if method != PruneMethod::LnStructured {
        return Ok(params.into_iter().filter(|(_, p)| p.ndim() >= 2).collect());
    }
    let links = config
        .model
        .channel_links(config.dataset.image_shape())
        .ok_or_else(|| {
            Error::invalid(
                "prune",
                format!(
                    "structured pruning needs a model whose widths can change, not {}",
                    config.model
                ),
            )
        })?;
    Ok(links
        .iter()
        .flat_map(|l| [format!("{}.weight", l.layer), format!("{}.bias", l.layer)])
        .filter_map(|name| params.iter().find(|(n, _)| *n == name).cloned())
        .collect())
}

/// One round: prune `fraction` of what `masks` still keeps, and apply.
fn prune_round(
    method: PruneMethod,
    weights: &[(String, Tensor)],
    masks: &mut PruneMasks,
    fraction: f64,
) -> Result<()> {
    let amount = Amount::Fraction(fraction);
    match method {
        PruneMethod::L1 => {
            for (name, w) in weights {
                let m = l1_unstructured(w, amount, masks.get(name))?;
                masks.set(name, w, m)?;
            }
        }
        PruneMethod::Global => {
            let ws: Vec<&Tensor> = weights.iter().map(|(_, w)| w).collect();
            let old: Vec<Option<&Tensor>> = weights.iter().map(|(n, _)| masks.get(n)).collect();
            let found = global_unstructured(&ws, amount, &old)?;
            for ((name, w), m) in weights.iter().zip(found) {
                masks.set(name, w, m)?;
            }
        }
        PruneMethod::LnStructured => {
            for (name, w) in weights.iter().filter(|(n, _)| n.ends_with(".weight")) {
                let m = ln_structured(w, amount, 2.0, 0, masks.get(name))?;
                let layer = name.trim_end_matches(".weight");
                let bias_name = format!("{layer}.bias");
                let bias = weights
                    .iter()
                    .find(|(n, _)| *n == bias_name)
                    .map(|(_, b)| b);
                masks.set_channels(layer, w, bias, m)?;
            }
        }
    }
    masks.apply()
}

/// The fine-tuning between rounds: the training batches, and the steps taken so far.
struct Finetune {
    loader: DataLoader,
    steps: u64,
}

/// Prune `weights` of `model` in `args.rounds` rounds, fine-tuning after each with the
/// pruned weights held at zero, and print each round's sparsity and test accuracy (unless
/// `--json`). Returns each round's figures as JSON.
fn prune_rounds(
    args: &PruneArgs,
    config: &RunConfig,
    model: &mut dyn Module,
    weights: &[(String, Tensor)],
    masks: &mut PruneMasks,
    test: &LoadedSplit,
    finetune: &mut Finetune,
) -> Result<Vec<Value>> {
    // Each round keeps the same share of what is left: (1 - f)^rounds = 1 - amount.
    let fraction = 1.0 - (1.0 - args.amount).powf(1.0 / args.rounds as f64);
    let mut rounds = Vec::new();
    for round in 1..=args.rounds {
        prune_round(args.method, weights, masks, fraction)?;
        let mut opt =
            MaskedOptimizer::new(config.build_optimizer(model.parameters())?, masks.clone());
        let mut limit = StepLimit(args.max_steps);
        for _ in 0..args.finetune_epochs {
            let batches = finetune.loader.iter_from(0)?;
            finetune.steps +=
                train_epoch(model, &mut opt, batches, &mut limit, &Progress::hidden())?.steps;
        }
        let acc = test_accuracy(model, test)?;
        let sparsity = masks.sparsity()?.global();
        if !args.json {
            println!(
                "round {round}: sparsity {:.1}% of the pruned tensors, test accuracy {:.2}%",
                100.0 * sparsity,
                100.0 * acc
            );
        }
        rounds.push(json!({"round": round, "sparsity": sparsity, "test_acc": acc}));
    }
    Ok(rounds)
}

/// The test accuracy of `model`.
fn test_accuracy(model: &mut dyn Module, test: &LoadedSplit) -> Result<f64> {
    let (_, acc) = evaluate(model, on_device(test.batches(1000)?, Device::Cpu))?;
    Ok(acc)
}

/// Structured pruning's last step: the smaller model without the masked channels (its
/// widths written into `config`), and the largest difference between its outputs and the
/// masked model's on the first test batch (zero up to rounding, as the removed channels
/// only ever contributed zeros).
fn remove_channels(
    config: &mut RunConfig,
    mut model: Box<dyn Module>,
    masks: &PruneMasks,
    test: &LoadedSplit,
) -> Result<(Box<dyn Module>, f64)> {
    let (x, _) = test
        .batches(256)?
        .next()
        .ok_or_else(|| Error::invalid("prune", "empty test set"))??;
    model.eval();
    let masked = model.forward(&x)?;
    let shape = config.dataset.image_shape();
    let (widths, mut small) = shrink(config.model, shape, 10, model.as_ref(), masks)?;
    small.eval();
    let diff = small
        .forward(&x)?
        .sub(&masked)?
        .abs()?
        .amax(&[0, 1], false)?
        .item_f64()?;
    config.widths = Some(widths);
    Ok((small, diff))
}

/// The figures `tinytorch prune` reports.
struct Outcome {
    rounds: Vec<Value>,
    report: SparsityReport,
    acc_before: f64,
    acc_after: f64,
    params_before: usize,
    params_after: usize,
    max_diff: Option<f64>,
    file_bytes: Option<u64>,
}

/// Print `o`: as one JSON object with `--json`, as lines otherwise.
fn print_outcome(args: &PruneArgs, config: &RunConfig, o: &Outcome) {
    if args.json {
        let out = json!({
            "model": config.model.name(),
            "method": format!("{:?}", args.method),
            "amount": args.amount,
            "rounds": o.rounds,
            "global_sparsity": o.report.global(),
            "test_acc_before": o.acc_before,
            "test_acc_after": o.acc_after,
            "parameters_before": o.params_before,
            "parameters_after": o.params_after,
            "widths": config.widths,
            "max_output_diff": o.max_diff,
            "file_bytes": o.file_bytes,
        });
        println!("{out}");
    } else {
        println!("{}", o.report);
        println!(
            "test accuracy {:.2}% -> {:.2}%; parameters {} -> {}",
            100.0 * o.acc_before,
            100.0 * o.acc_after,
            o.params_before,
            o.params_after
        );
        if let (Some(w), Some(d)) = (&config.widths, o.max_diff) {
            println!(
                "channels removed: widths now {w:?}; outputs within {d:.2e} of the masked model's"
            );
        }
    }
}

/// Run `tinytorch prune`.
pub fn prune(args: &PruneArgs) -> Result<()> {
    if !(0.0..1.0).contains(&args.amount) || args.rounds == 0 {
        return Err(Error::invalid(
            "prune",
            format!(
                "--amount must be in [0, 1) and --rounds at least 1, got {} and {}",
                args.amount, args.rounds
            ),
        ));
    }
    let (mut config, mut model) = load_trained_model(&args.checkpoint)?;
    if args.data.is_some() {
        config.data = args.data.clone();
    }
    if let Some(lr) = args.lr {
        config.lr = lr;
    }
    let test = load_split(&config, Split::Test)?;
    let params_before = model.num_parameters();
    let acc_before = test_accuracy(model.as_mut(), &test)?;

    let Session { loader, .. } = build(&config, false, 1, None)?;
    let mut finetune = Finetune { loader, steps: 0 };
    let weights = targets(&config, model.as_ref(), args.method)?;
    let mut masks = PruneMasks::default();
    let rounds = prune_rounds(
        args,
        &config,
        model.as_mut(),
        &weights,
        &mut masks,
        &test,
        &mut finetune,
    )?;
    let report = masks.sparsity()?;
    let mut max_diff = None;
    if args.method == PruneMethod::LnStructured {
        let (small, diff) = remove_channels(&mut config, model, &masks, &test)?;
        model = small;
        max_diff = Some(diff);
    }
    let acc_after = test_accuracy(model.as_mut(), &test)?;
    let file_bytes = match &args.out {
        Some(out) => {
            let opt = config.build_optimizer(model.parameters())?;
            save_finished(
                out,
                &config,
                model.as_ref(),
                opt.as_ref(),
                0,
                finetune.steps,
            )?;
            Some(std::fs::metadata(out)?.len())
        }
        None => None,
    };
    let outcome = Outcome {
        rounds,
        report,
        acc_before,
        acc_after,
        params_before,
        params_after: model.num_parameters(),
        max_diff,
        file_bytes,
    };
    print_outcome(args, &config, &outcome);
    Ok(())
}
