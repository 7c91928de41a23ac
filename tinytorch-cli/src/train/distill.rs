//! `tinytorch distill`: train a small student to imitate a trained teacher (Hinton et al.'s
//! distillation loss) and, from the same initial weights, on the same batches and for the
//! same number of steps, the same student on the labels alone — so the two test accuracies
//! say what the teacher added.

use super::checkpoint::{load_trained_model, save_finished};
use super::config::{OptimizerKind, RunConfig};
use super::data::{load_split, on_device, LoadedSplit, Split};
use super::recipe::Recipe;
use super::session::{build, Session};
use clap::Args;
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;
use tinytorch::autograd::no_grad;
use tinytorch::models::ModelKind;
use tinytorch::nn::functional::distillation_loss;
use tinytorch::nn::Module;
use tinytorch::optim::Optimizer;
use tinytorch::train::{
    cross_entropy_loss, evaluate, train_epoch_with, LossFn, Progress, StepLimit,
};
use tinytorch::{Device, Result, Tensor};

/// Arguments of `tinytorch distill`.
#[derive(Args, Debug)]
pub struct DistillArgs {
    /// The teacher: a `tinytorch train` checkpoint (its data set is the student's).
    #[arg(long, value_name = "CKPT")]
    pub teacher: PathBuf,
    /// The student model: mlp, seed-cnn, lenet5 or resnet20.
    #[arg(long, default_value = "mlp")]
    pub student: ModelKind,
    /// Softmax temperature of the soft targets.
    #[arg(long, default_value_t = 4.0)]
    pub temperature: f64,
    /// Weight of the soft (teacher) term; the hard-label term gets 1 - alpha.
    #[arg(long, default_value_t = 0.9)]
    pub alpha: f64,
    /// Epochs for each of the two students.
    #[arg(long, default_value_t = 5)]
    pub epochs: usize,
    /// Samples per batch.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    pub batch_size: u64,
    /// SGD learning rate.
    #[arg(long, default_value_t = 0.05)]
    pub lr: f64,
    /// SGD momentum.
    #[arg(long, default_value_t = 0.9)]
    pub momentum: f64,
    /// Seed of both students' initialisation and shuffling.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Directory of the data set's files (default: the teacher's).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Stop each student after this many optimizer steps in total.
    #[arg(long, value_name = "N")]
    pub max_steps: Option<u64>,
    /// Save the distilled student here as a `train` checkpoint (for `eval`, `profile`).
    #[arg(long, value_name = "CKPT")]
    pub out: Option<PathBuf>,
    /// Where to train: cpu, cuda or cuda:N.
    #[arg(long, default_value = "cpu")]
    pub device: Device,
    /// Print the results as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// One trained student.
struct Student {
    model: Box<dyn Module>,
    opt: Box<dyn Optimizer>,
    test_acc: f64,
    steps: u64,
    epochs: usize,
}

/// Train a student of `config` with `loss` (see the module docs for what is shared).
fn fit(
    config: &RunConfig,
    args: &DistillArgs,
    test: &LoadedSplit,
    loss: LossFn<'_>,
) -> Result<Student> {
    let Session {
        mut model,
        mut opt,
        mut loader,
        ..
    } = build(config, false, 1, None)?;
    model.to_device(args.device)?;
    let mut limit = StepLimit(args.max_steps);
    let (mut steps, mut epochs) = (0, 0);
    while epochs < args.epochs && !limit.exhausted() {
        let batches = on_device(loader.iter_from(0)?, args.device);
        let done = train_epoch_with(
            model.as_mut(),
            opt.as_mut(),
            batches,
            &mut limit,
            &Progress::hidden(),
            loss,
        )?;
        steps += done.steps;
        epochs += 1;
    }
    let (_, test_acc) = evaluate(model.as_mut(), on_device(test.batches(1000)?, args.device))?;
    Ok(Student {
        model,
        opt,
        test_acc,
        steps,
        epochs,
    })
}

/// Run `tinytorch distill`.
pub fn distill(args: &DistillArgs) -> Result<()> {
    let started = Instant::now();
    let (teacher_config, mut teacher) = load_trained_model(&args.teacher)?;
    teacher.to_device(args.device)?;
    let config = RunConfig {
        model: args.student,
        dataset: teacher_config.dataset,
        data: args.data.clone().or(teacher_config.data.clone()),
        batch_size: args.batch_size as usize,
        optimizer: OptimizerKind::Sgd,
        lr: args.lr,
        momentum: args.momentum,
        weight_decay: None,
        seed: args.seed,
        shuffle: true,
        widths: None,
        // The student sees the inputs the teacher was trained on.
        recipe: Recipe {
            normalize: teacher_config.recipe.normalize.clone(),
            ..Default::default()
        },
    };
    let test = load_split(&config, Split::Test)?;
    let (_, teacher_acc) = evaluate(
        teacher.as_mut(),
        on_device(test.batches(1000)?, args.device),
    )?;

    let alone = fit(&config, args, &test, &cross_entropy_loss)?;
    let teacher = teacher.as_ref();
    let soft = |logits: &Tensor, x: &Tensor, y: &Tensor| -> Result<Tensor> {
        let teacher_logits = {
            let _guard = no_grad();
            teacher.forward(x)?
        };
        distillation_loss(logits, &teacher_logits, y, args.temperature, args.alpha)
    };
    let distilled = fit(&config, args, &test, &soft)?;
    if let Some(out) = &args.out {
        save_finished(
            out,
            &config,
            distilled.model.as_ref(),
            distilled.opt.as_ref(),
            distilled.epochs,
            distilled.steps,
        )?;
    }
    if args.json {
        let out = json!({
            "teacher": teacher_config.model.name(),
            "student": config.model.name(),
            "teacher_test_acc": teacher_acc,
            "student_alone_test_acc": alone.test_acc,
            "distilled_test_acc": distilled.test_acc,
            "steps": distilled.steps,
            "temperature": args.temperature,
            "alpha": args.alpha,
            "wall_s": started.elapsed().as_secs_f64(),
        });
        println!("{out}");
    } else {
        println!(
            "teacher {} test accuracy {:.2}%\n\
             student {} alone:     {:.2}% after {} steps\n\
             student {} distilled: {:.2}% after {} steps (T = {}, alpha = {})",
            teacher_config.model,
            100.0 * teacher_acc,
            config.model,
            100.0 * alone.test_acc,
            alone.steps,
            config.model,
            100.0 * distilled.test_acc,
            distilled.steps,
            args.temperature,
            args.alpha
        );
    }
    Ok(())
}
