//! What a training run is: the model, data and optimizer settings, stored in every checkpoint
//! so `--resume` and `tinytorch eval` rebuild exactly the same run.

use super::recipe::Recipe;
use serde_json::{json, Value};
use std::path::PathBuf;
use tinytorch::models::{ImageShape, ModelKind};
use tinytorch::nn::Module;
use tinytorch::optim::{
    Adagrad, AdagradOptions, Adam, AdamOptions, AdamW, Optimizer, RMSprop, RMSpropOptions,
    SgdOptions, SGD,
};
use tinytorch::{Error, Result, Tensor};

/// The data sets `--dataset` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DatasetKind {
    /// Fashion-MNIST (or any directory of MNIST-format IDX files given with --data).
    #[value(name = "fashion-mnist")]
    FashionMnist,
    /// MNIST-format IDX files; needs --data.
    Mnist,
    /// CIFAR-10 binary version (data_batch_*.bin, test_batch.bin); needs --data.
    Cifar10,
}

impl DatasetKind {
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            DatasetKind::FashionMnist => "fashion-mnist",
            DatasetKind::Mnist => "mnist",
            DatasetKind::Cifar10 => "cifar10",
        }
    }

    /// The shape of one image.
    pub fn image_shape(self) -> ImageShape {
        match self {
            DatasetKind::FashionMnist | DatasetKind::Mnist => ImageShape::MNIST,
            DatasetKind::Cifar10 => ImageShape::CIFAR,
        }
    }
}

/// The optimizers `--optimizer` accepts (torch.optim defaults for everything not on the
/// command line).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OptimizerKind {
    /// SGD, with --momentum and --weight-decay.
    Sgd,
    /// Adam.
    Adam,
    /// AdamW (weight decay 0.01 unless --weight-decay says otherwise).
    Adamw,
    /// RMSprop.
    Rmsprop,
    /// Adagrad.
    Adagrad,
}

impl OptimizerKind {
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            OptimizerKind::Sgd => "sgd",
            OptimizerKind::Adam => "adam",
            OptimizerKind::Adamw => "adamw",
            OptimizerKind::Rmsprop => "rmsprop",
            OptimizerKind::Adagrad => "adagrad",
        }
    }
}

/// Everything that defines a run apart from its length and where it writes.
#[derive(Clone, Debug, PartialEq)]
pub struct RunConfig {
    /// The model.
    pub model: ModelKind,
    /// The data set.
    pub dataset: DatasetKind,
    /// Where its files are (`None`: the data set's default location).
    pub data: Option<PathBuf>,
    /// Samples per batch.
    pub batch_size: usize,
    /// The optimizer.
    pub optimizer: OptimizerKind,
    /// Learning rate.
    pub lr: f64,
    /// SGD momentum.
    pub momentum: f64,
    /// Weight decay (`None`: the optimizer's default).
    pub weight_decay: Option<f64>,
    /// Seed of the global generator (initialisation) and of the shuffling generator.
    pub seed: u64,
    /// Shuffle the training set every epoch.
    pub shuffle: bool,
    /// Hidden widths other than the model's defaults (a structurally pruned model).
    pub widths: Option<Vec<usize>>,
    /// Augmentation, schedule, step options, weight average, early stopping.
    pub recipe: Recipe,
}

impl RunConfig {
    /// A fresh model of this configuration for `input` images and `num_classes` classes.
    pub fn build_model(&self, input: ImageShape, num_classes: usize) -> Result<Box<dyn Module>> {
        self.model
            .build_with_widths(input, num_classes, self.widths.as_deref())
    }

    /// The optimizer over `params`.
    pub fn build_optimizer(&self, params: Vec<Tensor>) -> Result<Box<dyn Optimizer>> {
        let lr = self.lr;
        let wd = self.weight_decay;
        let adam = |default_wd: f64| AdamOptions {
            lr,
            weight_decay: wd.unwrap_or(default_wd),
            ..Default::default()
        };
        Ok(match self.optimizer {
            OptimizerKind::Sgd => Box::new(SGD::new(
                params,
                SgdOptions {
                    lr,
                    momentum: self.momentum,
                    weight_decay: wd.unwrap_or(0.0),
                    ..Default::default()
                },
            )?),
            OptimizerKind::Adam => Box::new(Adam::new(params, adam(0.0))?),
            OptimizerKind::Adamw => Box::new(AdamW::new(params, adam(0.01))?),
            OptimizerKind::Rmsprop => Box::new(RMSprop::new(
                params,
                RMSpropOptions {
                    lr,
                    weight_decay: wd.unwrap_or(0.0),
                    momentum: self.momentum,
                    ..Default::default()
                },
            )?),
            OptimizerKind::Adagrad => Box::new(Adagrad::new(
                params,
                AdagradOptions {
                    lr,
                    weight_decay: wd.unwrap_or(0.0),
                    ..Default::default()
                },
            )?),
        })
    }

    /// The configuration as JSON (stored in checkpoints).
    pub fn to_json(&self) -> Value {
        json!({
            "model": self.model.name(),
            "dataset": self.dataset.name(),
            "data": self.data.as_ref().map(|p| p.display().to_string()),
            "batch_size": self.batch_size,
            "optimizer": self.optimizer.name(),
            "lr": self.lr,
            "momentum": self.momentum,
            "weight_decay": self.weight_decay,
            "seed": self.seed,
            "shuffle": self.shuffle,
            "widths": self.widths,
            "recipe": self.recipe.to_json(),
        })
    }

    /// Parse what [`RunConfig::to_json`] wrote.
    pub fn from_json(text: &str) -> Result<RunConfig> {
        let bad =
            |what: &str| Error::invalid("checkpoint", format!("bad run configuration: {what}"));
        let v: Value = serde_json::from_str(text).map_err(|e| bad(&e.to_string()))?;
        let s = |k: &str| v[k].as_str().ok_or_else(|| bad(&format!("missing '{k}'")));
        let f = |k: &str| v[k].as_f64().ok_or_else(|| bad(&format!("missing '{k}'")));
        let value_enum = |k: &str| -> Result<String> { s(k).map(str::to_string) };
        use clap::ValueEnum;
        let model: ModelKind = s("model")?.parse()?;
        Ok(RunConfig {
            model,
            dataset: DatasetKind::from_str(&value_enum("dataset")?, false).map_err(|e| bad(&e))?,
            data: v["data"].as_str().map(PathBuf::from),
            batch_size: f("batch_size")? as usize,
            optimizer: OptimizerKind::from_str(&value_enum("optimizer")?, false)
                .map_err(|e| bad(&e))?,
            lr: f("lr")?,
            momentum: f("momentum")?,
            weight_decay: v["weight_decay"].as_f64(),
            seed: f("seed")? as u64,
            shuffle: v["shuffle"]
                .as_bool()
                .ok_or_else(|| bad("missing 'shuffle'"))?,
            widths: match v.get("widths") {
                None | Some(Value::Null) => None,
                Some(w) => Some(pruned_widths(model, w).map_err(|m| bad(&m))?),
            },
            // Checkpoints from before recipes have none: plain training.
            recipe: match v.get("recipe") {
                None | Some(Value::Null) => Recipe::default(),
                Some(r) => Recipe::from_json(r)?,
            },
        })
    }
}

/// The hidden widths a checkpoint records: only structured pruning writes them, and it only
/// removes channels, so widths above the model's defaults are refused — a corrupt or
/// hostile file cannot make `eval` allocate a model its weights do not justify.
fn pruned_widths(model: ModelKind, w: &Value) -> std::result::Result<Vec<usize>, String> {
    let widths = w
        .as_array()
        .ok_or("'widths' is not a list")?
        .iter()
        .map(|x| x.as_u64().map(|n| n as usize))
        .collect::<Option<Vec<usize>>>()
        .ok_or("'widths' holds a non-integer")?;
    let defaults = model.default_widths().unwrap_or_default();
    let fits = widths.len() == defaults.len() && widths.iter().zip(&defaults).all(|(w, d)| w <= d);
    if !fits {
        return Err(format!(
            "widths {widths:?} do not narrow {model}'s {defaults:?} (pruning only removes channels)"
        ));
    }
    Ok(widths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_round_trips_through_json() {
        let c = RunConfig {
            model: ModelKind::LeNet5,
            dataset: DatasetKind::Cifar10,
            data: Some("/tmp/c".into()),
            batch_size: 32,
            optimizer: OptimizerKind::Adamw,
            lr: 0.001,
            momentum: 0.0,
            weight_decay: None,
            seed: 7,
            shuffle: false,
            widths: Some(vec![3, 8, 60, 42]),
            recipe: Recipe {
                flip: true,
                ema: Some(0.99),
                ..Default::default()
            },
        };
        assert_eq!(RunConfig::from_json(&c.to_json().to_string()).unwrap(), c);
        assert!(RunConfig::from_json("{}").is_err());
    }
}
