//! What a training run writes for the dashboard (`tinytorch dashboard`) beside its
//! per-epoch metrics: a line per logged step (`steps.jsonl`), histograms of every
//! parameter's values and gradients (`histograms.jsonl`), and whole JSON documents replaced
//! atomically (`model.json`, `eval.json`), so a reader never sees half of one.
//!
//! JSON lines are appended and flushed line by line: a reader of a file being written may
//! meet a last line without its newline, which it skips until the line is complete.

use crate::error::Result;
use crate::nn::Module;
use crate::tensor::Tensor;
use serde_json::{json, Value};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Bins of each histogram: enough to show a distribution's shape, few enough that a line per
/// parameter stays small.
pub const HISTOGRAM_BINS: usize = 30;

/// One logged training step: means over the steps since the previous record.
#[derive(Clone, Debug, PartialEq)]
pub struct StepRecord {
    /// Optimizer steps taken since the start of training (this one included).
    pub step: u64,
    /// The 1-based epoch the step belongs to.
    pub epoch: usize,
    /// Fractional epoch: `epoch - 1 + batch_in_epoch / batches_per_epoch`.
    pub epoch_progress: f64,
    /// Mean training loss per sample over the window.
    pub loss: f64,
    /// Training accuracy in [0, 1] over the window.
    pub acc: f64,
    /// Learning rate of the first param group.
    pub lr: f64,
    /// Training samples per second over the window.
    pub samples_per_s: f64,
}

impl StepRecord {
    /// The record as one JSON object.
    pub fn to_json(&self) -> Value {
        json!({
            "step": self.step,
            "epoch": self.epoch,
            "epoch_progress": self.epoch_progress,
            "loss": self.loss,
            "acc": self.acc,
            "lr": self.lr,
            "samples_per_s": self.samples_per_s,
        })
    }
}

/// Appends JSON values, one per line, to a file, flushing each.
pub struct JsonLines {
    file: File,
}

impl JsonLines {
    /// Open `path` for appending (created if missing).
    pub fn append(path: &Path) -> Result<JsonLines> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(JsonLines { file })
    }

    /// Append one value as a line. The line goes out in one write, so that a concurrent
    /// reader sees it whole or not at all (or, at worst, a prefix without its newline).
    pub fn write(&mut self, value: &Value) -> Result<()> {
        let mut line = value.to_string();
        line.push('\n');
        self.file.write_all(line.as_bytes())?;
        self.file.flush()?;
        Ok(())
    }
}

/// Cut a line-oriented log at its last newline: a process killed while appending leaves a
/// partial last line, which a resumed run must not append to (nor read as a record). A
/// missing file is left missing.
pub fn drop_torn_line(path: &Path) -> Result<()> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    if bytes.last().is_some_and(|&b| b != b'\n') {
        let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        OpenOptions::new()
            .write(true)
            .open(path)?
            .set_len(keep as u64)?;
    }
    Ok(())
}

/// Replace `path` with `value` (pretty JSON) atomically: written to a temporary file beside
/// it, then renamed over it.
pub fn write_json_atomic(path: &Path, value: &Value) -> Result<()> {
    let mut tmp = PathBuf::from(path);
    tmp.as_mut_os_string().push(".tmp");
    std::fs::write(
        &tmp,
        serde_json::to_vec_pretty(value).map_err(std::io::Error::from)?,
    )?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

/// A histogram of a tensor's values: [`HISTOGRAM_BINS`] equal bins from `min` to `max`,
/// with the non-finite values (NaN, ±inf) counted apart; and the L2 norm of the finite ones.
pub fn histogram(t: &Tensor) -> Result<Value> {
    let values = t.detach().to_vec_f64()?;
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let nonfinite = values.len() - finite.len();
    let (min, max) = finite
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    let mut counts = vec![0u64; HISTOGRAM_BINS];
    if !finite.is_empty() {
        let width = (max - min) / HISTOGRAM_BINS as f64;
        for v in &finite {
            let bin = if width > 0.0 {
                (((v - min) / width) as usize).min(HISTOGRAM_BINS - 1)
            } else {
                HISTOGRAM_BINS / 2
            };
            counts[bin] += 1;
        }
    }
    let norm = finite.iter().map(|v| v * v).sum::<f64>().sqrt();
    // An empty or all-NaN tensor has no range: null rather than ±inf, which JSON lacks.
    let bound = |v: f64| {
        if finite.is_empty() {
            Value::Null
        } else {
            json!(v)
        }
    };
    Ok(json!({
        "min": bound(min),
        "max": bound(max),
        "counts": counts,
        "nonfinite": nonfinite,
        "norm": norm,
    }))
}

/// Appends, for every parameter of a model, the histograms of its values and of its
/// gradient (null before the first backward pass) to `histograms.jsonl`: one line per
/// parameter per call, `{"step", "name", "shape", "weight", "grad"}`.
pub struct HistogramLog {
    lines: JsonLines,
}

impl HistogramLog {
    /// Append to `<dir>/histograms.jsonl`.
    pub fn open(dir: &Path) -> Result<HistogramLog> {
        Ok(HistogramLog {
            lines: JsonLines::append(&dir.join("histograms.jsonl"))?,
        })
    }

    /// Log every parameter of `model` at optimizer step `step`.
    pub fn write(&mut self, step: u64, model: &dyn Module) -> Result<()> {
        for (name, p) in model.named_parameters() {
            let grad = match p.grad() {
                Some(g) => histogram(&g)?,
                None => Value::Null,
            };
            self.lines.write(&json!({
                "step": step,
                "name": name,
                "shape": p.shape(),
                "weight": histogram(&p)?,
                "grad": grad,
            }))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_torn_last_line_is_dropped_and_whole_lines_kept() {
        let dir = std::env::temp_dir().join(format!("tt_torn_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("log.jsonl");
        for (before, after) in [
            ("{\"a\":1}\n{\"a\":2}\n{\"a\"", "{\"a\":1}\n{\"a\":2}\n"),
            ("{\"a\":1}\n", "{\"a\":1}\n"),
            ("{\"a\"", ""),
        ] {
            std::fs::write(&path, before).unwrap();
            super::drop_torn_line(&path).unwrap();
            assert_eq!(std::fs::read_to_string(&path).unwrap(), after);
        }
        super::drop_torn_line(&dir.join("missing")).unwrap();
        assert!(!dir.join("missing").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    use super::*;

    #[test]
    fn histogram_counts_every_finite_value_once() {
        let t = Tensor::from_slice(&[0.0f64, 1.0, 2.0, 3.0, f64::NAN, f64::INFINITY]);
        let h = histogram(&t).unwrap();
        let counts: Vec<u64> = serde_json::from_value(h["counts"].clone()).unwrap();
        assert_eq!(counts.iter().sum::<u64>(), 4);
        assert_eq!(counts[0], 1);
        assert_eq!(
            counts[HISTOGRAM_BINS - 1],
            1,
            "the maximum lands in the last bin"
        );
        assert_eq!(h["nonfinite"], 2);
        assert_eq!(h["min"], 0.0);
        assert_eq!(h["max"], 3.0);
        assert!((h["norm"].as_f64().unwrap() - 14f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn histogram_of_constant_and_empty_tensors() {
        let h = histogram(&Tensor::from_slice(&[2.5f32; 4])).unwrap();
        let counts: Vec<u64> = serde_json::from_value(h["counts"].clone()).unwrap();
        assert_eq!(counts[HISTOGRAM_BINS / 2], 4);
        let h = histogram(&Tensor::from_slice::<f32>(&[])).unwrap();
        assert!(h["min"].is_null() && h["max"].is_null());
    }

    #[test]
    fn atomic_json_replaces_the_file_whole() {
        let dir = std::env::temp_dir().join(format!("tt_runlog_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("eval.json");
        write_json_atomic(&p, &json!({"a": 1})).unwrap();
        write_json_atomic(&p, &json!({"a": 2})).unwrap();
        let v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        assert_eq!(v["a"], 2);
        assert!(!dir.join("eval.json.tmp").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
