//! `tinytorch profile`: one training step of a model, layer by layer — parameters, FLOPs,
//! forward and backward time, activation memory, roofline bound — and the peak memory of
//! the forward pass, the backward pass and the optimizer step (`tinytorch::profile`).

use crate::train::{load_trained_model, DatasetKind, OptimizerKind, RunConfig};
use clap::Args;
use std::path::PathBuf;
use tinytorch::models::ModelKind;
use tinytorch::{profile, DType, Device, Result, Tensor};

/// Arguments of `tinytorch profile`.
#[derive(Args, Debug)]
pub struct ProfileArgs {
    /// Model: mlp, seed-cnn, lenet5 or resnet20 (ignored with --checkpoint, which names its own).
    #[arg(long, default_value = "seed-cnn")]
    pub model: ModelKind,
    /// A `tinytorch train` checkpoint: its model, weights, data set and optimizer.
    #[arg(long, value_name = "CKPT")]
    pub checkpoint: Option<PathBuf>,
    /// The data set whose image shape the input takes (ignored with --checkpoint).
    #[arg(long, value_enum, default_value = "fashion-mnist")]
    pub dataset: DatasetKind,
    /// Samples in the profiled batch.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    pub batch_size: u64,
    /// Where to run: cpu, cuda or cuda:N.
    #[arg(long, default_value = "cpu")]
    pub device: Device,
    /// Print the profile as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Run `tinytorch profile`.
pub fn run(args: &ProfileArgs) -> Result<()> {
    let (config, model) = match &args.checkpoint {
        Some(path) => load_trained_model(path)?,
        None => {
            // `tinytorch train`'s defaults.
            let config = RunConfig {
                model: args.model,
                dataset: args.dataset,
                data: None,
                batch_size: args.batch_size as usize,
                optimizer: OptimizerKind::Sgd,
                lr: 0.05,
                momentum: 0.0,
                weight_decay: None,
                seed: 0,
                shuffle: true,
                widths: None,
                recipe: Default::default(),
            };
            let model = config.build_model(config.dataset.image_shape(), 10)?;
            (config, model)
        }
    };
    model.to_device(args.device)?;
    let shape = config.dataset.image_shape();
    let input = Tensor::randn(
        &[
            args.batch_size as usize,
            shape.channels,
            shape.height,
            shape.width,
        ],
        DType::F32,
        Device::Cpu,
    )?
    .to_device(args.device)?;
    let mut optimizer = config.build_optimizer(model.parameters())?;
    let p = profile::summary_with_step(model.as_ref(), &input, optimizer.as_mut())?;
    if args.json {
        let mut out = p.to_json();
        out["model"] = config.model.name().into();
        out["batch_size"] = args.batch_size.into();
        println!("{out}");
    } else {
        println!(
            "{} on {} inputs of {}x{}x{}, batch {} ({} step)\n",
            config.model,
            config.dataset.name(),
            shape.channels,
            shape.height,
            shape.width,
            args.batch_size,
            config.optimizer.name()
        );
        println!("{p}");
    }
    Ok(())
}
