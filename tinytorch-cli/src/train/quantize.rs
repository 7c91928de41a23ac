//! `tinytorch quantize`: turn a trained model into an int8 one and save it. With
//! `--calibrate N`, static quantization: every Linear and Conv2d (with the ReLU after it fused)
//! runs int8 x int8 with activation ranges observed on N training images; without it, dynamic
//! quantization of the Linear layers. Prints the test accuracy before and after and the two
//! files' sizes; `tinytorch eval` runs the saved model.

use super::checkpoint::{load_trained_model, CONFIG_KEY};
use super::data::{load_split, on_device, Split};
use super::eval::state_dict_bytes;
use clap::{Args, ValueEnum};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;
use tinytorch::quant::{
    convert_static, quantize_dynamic, quantized_parameter_count, save_quantized, Calibration,
    ObserverKind,
};
use tinytorch::train::evaluate;
use tinytorch::{Device, Error, Result};

/// How calibration sets activation ranges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ObserverArg {
    /// The smallest and largest values seen.
    Minmax,
    /// Clipped to `--percentile` of |x|.
    Percentile,
}

/// Arguments of `tinytorch quantize`.
#[derive(Args, Debug)]
pub struct QuantizeArgs {
    /// The model to quantize: a `tinytorch train` checkpoint.
    #[arg(long, value_name = "CKPT")]
    pub checkpoint: PathBuf,
    /// Static quantization of every Linear and Conv2d, calibrated on the first N training
    /// images; without it, dynamic quantization of the Linear layers.
    #[arg(long, value_name = "N")]
    pub calibrate: Option<usize>,
    /// How calibration sets activation ranges.
    #[arg(long, value_enum, default_value = "minmax")]
    pub observer: ObserverArg,
    /// The percentile of |x| that `--observer percentile` keeps.
    #[arg(long, default_value_t = 99.99)]
    pub percentile: f64,
    /// Directory of the data set's files (default: the checkpoint's).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Where to write the int8 model (a safetensors file).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Print the results as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Images per calibration batch.
const CALIBRATION_BATCH: usize = 250;

/// Run `tinytorch quantize`.
pub fn quantize(args: &QuantizeArgs) -> Result<()> {
    let (mut config, mut model) = load_trained_model(&args.checkpoint)?;
    if args.data.is_some() {
        config.data = args.data.clone();
    }
    let test = load_split(&config, Split::Test)?;
    let (_, float_acc) = evaluate(model.as_mut(), on_device(test.batches(1000)?, Device::Cpu))?;
    let float_bytes = state_dict_bytes(model.as_ref())?;
    let (mut q, scheme) = match args.calibrate {
        None => (quantize_dynamic(model)?, "dynamic".to_string()),
        Some(0) => {
            return Err(Error::invalid(
                "quantize",
                "--calibrate needs at least one image",
            ))
        }
        Some(n) => {
            let kind = match args.observer {
                ObserverArg::Minmax => ObserverKind::MinMax,
                ObserverArg::Percentile => ObserverKind::Percentile(args.percentile),
            };
            let mut calibration = Calibration::new(kind)?;
            let train = load_split(&config, Split::Train)?;
            let mut seen = 0;
            for batch in train.batches(CALIBRATION_BATCH.min(n))? {
                let (x, _) = batch?;
                let take = (n - seen).min(x.shape()[0]);
                calibration.observe(model.as_ref(), &x.narrow(0, 0, take)?)?;
                seen += take;
                if seen == n {
                    break;
                }
            }
            let scheme =
                format!("static ({seen} calibration images, {:?})", args.observer).to_lowercase();
            (convert_static(model, &calibration)?, scheme)
        }
    };
    if quantized_parameter_count(q.as_ref()) == 0 {
        return Err(Error::invalid(
            "quantize",
            format!(
                "{} has no layer quantization converts (Linear and Conv2d layers are found \
                 through Sequential containers: mlp, seed-cnn, lenet5)",
                config.model
            ),
        ));
    }
    let metadata = BTreeMap::from([
        (CONFIG_KEY.to_string(), config.to_json().to_string()),
        ("scheme".to_string(), scheme.clone()),
    ]);
    save_quantized(&args.out, q.as_ref(), &metadata)?;
    let int8_bytes = std::fs::metadata(&args.out)?.len();
    let (_, int8_acc) = evaluate(q.as_mut(), on_device(test.batches(1000)?, Device::Cpu))?;
    if args.json {
        println!(
            "{}",
            json!({
                "model": config.model.name(), "scheme": scheme,
                "float_acc": float_acc, "int8_acc": int8_acc,
                "float_bytes": float_bytes, "int8_bytes": int8_bytes,
                "out": args.out,
            })
        );
    } else {
        println!(
            "{} int8, {scheme}: test accuracy {:.2}% (float {:.2}%, {:+.2} points); weights \
             {:.1} KB -> {:.1} KB ({:.2}x smaller); wrote {}",
            config.model,
            int8_acc * 100.0,
            float_acc * 100.0,
            (int8_acc - float_acc) * 100.0,
            float_bytes as f64 / 1024.0,
            int8_bytes as f64 / 1024.0,
            float_bytes as f64 / int8_bytes as f64,
            args.out.display()
        );
    }
    Ok(())
}
