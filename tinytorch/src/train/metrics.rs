//! Per-epoch metrics, appended to `metrics.csv` and `metrics.jsonl`.

use crate::error::Result;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

/// What one epoch measured.
#[derive(Clone, Debug, PartialEq)]
pub struct EpochMetrics {
    /// 1-based epoch number.
    pub epoch: usize,
    /// Optimizer steps taken since the start of training.
    pub steps: u64,
    /// Mean training loss per sample.
    pub train_loss: f64,
    /// Training accuracy in [0, 1].
    pub train_acc: f64,
    /// Mean test loss, when evaluated.
    pub test_loss: Option<f64>,
    /// Test accuracy in [0, 1], when evaluated.
    pub test_acc: Option<f64>,
    /// The learning rate of the first param group during the epoch.
    pub lr: f64,
    /// Wall-clock seconds of the epoch's training steps (evaluation excluded).
    pub train_s: f64,
    /// Training samples per second, leaving out the epoch's first step.
    pub samples_per_s: f64,
}

impl EpochMetrics {
    const CSV_HEADER: &'static str =
        "epoch,steps,train_loss,train_acc,test_loss,test_acc,lr,train_s,samples_per_s";

    fn csv_row(&self) -> String {
        let opt = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
        format!(
            "{},{},{},{},{},{},{},{},{}",
            self.epoch,
            self.steps,
            self.train_loss,
            self.train_acc,
            opt(self.test_loss),
            opt(self.test_acc),
            self.lr,
            self.train_s,
            self.samples_per_s
        )
    }

    /// The metrics as one JSON object.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "epoch": self.epoch,
            "steps": self.steps,
            "train_loss": self.train_loss,
            "train_acc": self.train_acc,
            "test_loss": self.test_loss,
            "test_acc": self.test_acc,
            "lr": self.lr,
            "train_s": self.train_s,
            "samples_per_s": self.samples_per_s,
        })
    }
}

/// Appends each epoch's metrics to `<dir>/metrics.csv` and `<dir>/metrics.jsonl`.
pub struct MetricsLog {
    csv: File,
    jsonl: File,
}

impl MetricsLog {
    /// Open (append) the logs in `dir`, writing the CSV header if the file is new. Resumed runs
    /// keep appending to the same files.
    pub fn open(dir: &Path) -> Result<MetricsLog> {
        std::fs::create_dir_all(dir)?;
        let csv_path = dir.join("metrics.csv");
        let is_new = !csv_path.exists();
        let append = |p: &Path| OpenOptions::new().create(true).append(true).open(p);
        let mut csv = append(&csv_path)?;
        if is_new {
            writeln!(csv, "{}", EpochMetrics::CSV_HEADER)?;
        }
        let jsonl = append(&dir.join("metrics.jsonl"))?;
        Ok(MetricsLog { csv, jsonl })
    }

    /// Append one epoch.
    pub fn write(&mut self, m: &EpochMetrics) -> Result<()> {
        writeln!(self.csv, "{}", m.csv_row())?;
        writeln!(self.jsonl, "{}", m.to_json())?;
        self.csv.flush()?;
        self.jsonl.flush()?;
        Ok(())
    }

    /// Read back every epoch of a `metrics.jsonl` (to redraw the curves of a resumed run).
    pub fn read_jsonl(path: &Path) -> Result<Vec<EpochMetrics>> {
        let text = std::fs::read_to_string(path)?;
        let bad = |line: usize, what: &str| {
            crate::Error::invalid(
                "MetricsLog::read_jsonl",
                format!("{}:{line}: {what}", path.display()),
            )
        };
        let mut out = Vec::new();
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let v: serde_json::Value =
                serde_json::from_str(line).map_err(|e| bad(i + 1, &e.to_string()))?;
            let num = |k: &str| {
                v[k].as_f64()
                    .ok_or_else(|| bad(i + 1, &format!("missing '{k}'")))
            };
            out.push(EpochMetrics {
                epoch: num("epoch")? as usize,
                steps: num("steps")? as u64,
                train_loss: num("train_loss")?,
                train_acc: num("train_acc")?,
                test_loss: v["test_loss"].as_f64(),
                test_acc: v["test_acc"].as_f64(),
                lr: num("lr")?,
                train_s: num("train_s")?,
                samples_per_s: num("samples_per_s")?,
            });
        }
        Ok(out)
    }
}
