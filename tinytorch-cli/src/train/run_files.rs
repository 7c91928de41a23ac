//! What `tinytorch train` writes for `tinytorch dashboard` beside metrics.csv/jsonl:
//! `steps.jsonl` (a line every `--log-every` steps), `histograms.jsonl` (every parameter's
//! values and gradients every `--log-histograms` steps), `model.json` (the profiler's layer
//! table of one test image) and `eval.json` (after each evaluation: the confusion matrix, the
//! first misclassified test images and a gallery of test images, with their pixels).

use super::config::DatasetKind;
use super::data::LoadedSplit;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;
use tinytorch::nn::Module;
use tinytorch::tensor::{get_rng_state, set_rng_state};
use tinytorch::train::run_log::{write_json_atomic, HistogramLog, JsonLines, StepRecord};
use tinytorch::train::{Prediction, StepDone};
use tinytorch::{Device, Result, Tensor};

/// Misclassified test images kept in eval.json.
const MISTAKES: usize = 32;
/// Test images (the first ones) whose feature maps the dashboard can show.
const GALLERY: usize = 16;

/// Writes steps.jsonl and histograms.jsonl while a run trains.
pub struct StepLogger {
    every: u64,
    histograms_every: u64,
    steps: JsonLines,
    histograms: Option<HistogramLog>,
    batches_per_epoch: u64,
    window: Window,
}

/// The steps since the last line.
struct Window {
    loss_sum: f64,
    correct: u64,
    samples: u64,
    /// Training time of the window: from one step's end to the next, so that the evaluation
    /// between epochs (when [`StepLogger::start_epoch`] restarts the clock) is left out.
    busy_s: f64,
    last: Instant,
}

impl Window {
    fn new() -> Window {
        Window {
            loss_sum: 0.0,
            correct: 0,
            samples: 0,
            busy_s: 0.0,
            last: Instant::now(),
        }
    }
}

impl StepLogger {
    /// Append to the run directory's logs: a step line every `every` steps (0: none) and
    /// histograms every `histograms_every` steps (0: none).
    pub fn open(
        dir: &Path,
        every: u64,
        histograms_every: u64,
        batches_per_epoch: u64,
    ) -> Result<StepLogger> {
        Ok(StepLogger {
            every,
            histograms_every,
            steps: JsonLines::append(&dir.join("steps.jsonl"))?,
            histograms: if histograms_every > 0 {
                Some(HistogramLog::open(dir)?)
            } else {
                None
            },
            batches_per_epoch,
            window: Window::new(),
        })
    }

    /// Restart the step clock at the start of an epoch.
    pub fn start_epoch(&mut self) {
        self.window.last = Instant::now();
    }

    /// Called after optimizer step `step` (counted from the start of training), the
    /// `batch_in_epoch`-th batch (1-based) of epoch `epoch`.
    pub fn after_step(
        &mut self,
        done: &StepDone<'_>,
        step: u64,
        epoch: usize,
        batch_in_epoch: u64,
    ) -> Result<()> {
        let w = &mut self.window;
        let now = Instant::now();
        w.busy_s += (now - w.last).as_secs_f64();
        w.last = now;
        w.loss_sum += done.loss * done.samples as f64;
        w.correct += done.correct;
        w.samples += done.samples;
        if self.every > 0 && step.is_multiple_of(self.every) {
            let record = StepRecord {
                step,
                epoch,
                epoch_progress: (epoch - 1) as f64
                    + batch_in_epoch as f64 / self.batches_per_epoch.max(1) as f64,
                loss: w.loss_sum / w.samples.max(1) as f64,
                acc: w.correct as f64 / w.samples.max(1) as f64,
                lr: done.optimizer.lrs()[0],
                samples_per_s: w.samples as f64 / w.busy_s.max(1e-9),
            };
            self.steps.write(&record.to_json())?;
            self.window = Window::new();
        }
        if let Some(h) = &mut self.histograms {
            if step.is_multiple_of(self.histograms_every) {
                h.write(step, done.model)?;
            }
        }
        Ok(())
    }
}

/// The class names of a data set, for the confusion matrix's axes.
pub fn class_names(kind: DatasetKind) -> Vec<String> {
    let names: &[&str] = match kind {
        DatasetKind::FashionMnist => &[
            "T-shirt/top",
            "Trouser",
            "Pullover",
            "Dress",
            "Coat",
            "Sandal",
            "Shirt",
            "Sneaker",
            "Bag",
            "Ankle boot",
        ],
        DatasetKind::Mnist => &["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"],
        DatasetKind::Cifar10 => &[
            "airplane",
            "automobile",
            "bird",
            "cat",
            "deer",
            "dog",
            "frog",
            "horse",
            "ship",
            "truck",
        ],
    };
    names.iter().map(|s| s.to_string()).collect()
}

/// Pixels of a `[C, H, W]` image in [0, 1] as hex bytes (0-255), two characters each.
fn pixels_hex(image: &Tensor) -> Result<String> {
    let mut hex = String::new();
    for v in image.to_vec_f64()? {
        let _ = write!(hex, "{:02x}", (v.clamp(0.0, 1.0) * 255.0).round() as u8);
    }
    Ok(hex)
}

/// model.json: the layer table of `model` on the first test image (profile of one forward
/// and backward pass) with the run's configuration. Called before the model is wrapped for
/// data-parallel training: the profiled backward pass must not reach the gradient hooks that
/// start collectives.
pub fn model_json(
    model: &dyn Module,
    test: &LoadedSplit,
    device: Device,
    config: Value,
) -> Result<Value> {
    let (image, _) = test.dataset.get(0)?;
    let input = image.unsqueeze(0)?.to_device(device)?;
    // The profiler draws random numbers (its machine peaks, dropout): the training draws
    // stay those of a run without it.
    let rng = get_rng_state();
    let profile = tinytorch::profile::summary(model, &input);
    set_rng_state(&rng);
    let mut doc = profile?.to_json();
    doc["config"] = config;
    doc["input_shape"] = json!(input.shape());
    Ok(doc)
}

/// The test set's confusion matrix and mistakes after epoch `epoch` (step `step`), from the
/// evaluation's `predictions` (class, probability and target of every test image, in
/// order), as eval.json.
pub fn write_eval_json(
    dir: &Path,
    test: &LoadedSplit,
    kind: DatasetKind,
    predictions: &[Prediction],
    (epoch, step): (usize, u64),
) -> Result<()> {
    let classes = test.classes;
    let mut confusion = vec![vec![0u64; classes]; classes];
    let mut mistakes = Vec::new();
    let mut gallery = Vec::new();
    for (index, p) in predictions.iter().enumerate() {
        let (truth, pred) = (p.target as usize, p.class as usize);
        if truth < classes && pred < classes {
            confusion[truth][pred] += 1;
        }
        let is_mistake = pred != truth && mistakes.len() < MISTAKES;
        let in_gallery = index < GALLERY;
        if !(is_mistake || in_gallery) {
            continue;
        }
        // Only the images kept are read back.
        let (image, _) = test.dataset.get(index)?;
        let entry = json!({
            "index": index,
            "true": truth,
            "pred": pred,
            "confidence": p.probability,
            "pixels_hex": pixels_hex(&image)?,
        });
        if is_mistake {
            mistakes.push(entry.clone());
        }
        if in_gallery {
            gallery.push(entry);
        }
    }
    let shape = test.shape;
    write_json_atomic(
        &dir.join("eval.json"),
        &json!({
            "epoch": epoch,
            "step": step,
            "classes": class_names(kind),
            "image_shape": [shape.channels, shape.height, shape.width],
            "samples": predictions.len(),
            "confusion": confusion,
            "misclassified": mistakes,
            "gallery": gallery,
        }),
    )
}
