//! The runs under a log directory and what their files hold, read defensively: a run is a
//! directory (up to three levels down) holding `metrics.jsonl` or `steps.jsonl`; only files
//! of such directories are read, by fixed names, and nothing that resolves outside the log
//! directory (`..`, symbolic links) is. A file being written may end in a half line, which is
//! skipped; a corrupt line becomes that run's error and the rest of the file still counts.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;
use tinytorch::{Error, Result};

/// A file whose presence makes a directory a run.
const RUN_MARKERS: [&str; 2] = ["metrics.jsonl", "steps.jsonl"];
/// The files the dashboard reads from a run directory.
pub const RUN_FILES: [&str; 8] = [
    "metrics.jsonl",
    "steps.jsonl",
    "histograms.jsonl",
    "samples.jsonl",
    "model.json",
    "eval.json",
    "checkpoint.safetensors",
    "metrics.csv",
];
/// How deep below the log directory runs are looked for (`runs/exp/seed1` is two).
const MAX_DEPTH: usize = 3;

/// The log directory (`--logdir`), resolved once.
#[derive(Clone, Debug)]
pub struct LogDir {
    root: PathBuf,
}

/// One run: its id (its path below the log directory, `/`-separated) and directory.
#[derive(Clone, Debug)]
pub struct Run {
    /// Path below the log directory, with `/` between components.
    pub id: String,
    /// The directory (inside the log directory).
    pub dir: PathBuf,
}

impl LogDir {
    /// The log directory at `path`, which must exist.
    pub fn open(path: &Path) -> Result<LogDir> {
        let root = path.canonicalize().map_err(|e| {
            Error::invalid(
                "dashboard",
                format!("cannot open log directory {}: {e}", path.display()),
            )
        })?;
        if !root.is_dir() {
            return Err(Error::invalid(
                "dashboard",
                format!("{} is not a directory", path.display()),
            ));
        }
        Ok(LogDir { root })
    }

    /// The resolved path.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Every run, sorted by id. Symbolic links are not followed.
    pub fn runs(&self) -> Vec<Run> {
        let mut out = Vec::new();
        let mut stack = vec![(self.root.clone(), 0usize)];
        while let Some((dir, depth)) = stack.pop() {
            if RUN_MARKERS.iter().any(|m| is_plain_file(&dir.join(m))) {
                let id = dir
                    .strip_prefix(&self.root)
                    .map(|p| {
                        p.components()
                            .map(|c| c.as_os_str().to_string_lossy().into_owned())
                            .collect::<Vec<_>>()
                            .join("/")
                    })
                    .unwrap_or_default();
                let id = if id.is_empty() { ".".to_string() } else { id };
                out.push(Run {
                    id,
                    dir: dir.clone(),
                });
            }
            if depth == MAX_DEPTH {
                continue;
            }
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push((e.path(), depth + 1));
                }
            }
        }
        out.sort_by(|a, b| a.id.cmp(&b.id));
        out
    }

    /// The run named `id`, if it is one of [`LogDir::runs`] (never a path built from `id`).
    pub fn run(&self, id: &str) -> Option<Run> {
        self.runs().into_iter().find(|r| r.id == id)
    }
}

/// A regular file, not a symbolic link.
fn is_plain_file(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file())
}

impl Run {
    /// The path of one of [`RUN_FILES`] in this run, if it exists as a regular file.
    pub fn file(&self, name: &str) -> Option<PathBuf> {
        debug_assert!(RUN_FILES.contains(&name), "{name} is not a run file");
        let p = self.dir.join(name);
        is_plain_file(&p).then_some(p)
    }

    /// Size and modification time of each run file present: what changes while it trains.
    pub fn fingerprint(&self) -> Vec<(&'static str, u64, SystemTime)> {
        RUN_FILES
            .iter()
            .filter_map(|&name| {
                let m = std::fs::symlink_metadata(self.dir.join(name)).ok()?;
                Some((name, m.len(), m.modified().ok()?))
            })
            .collect()
    }

    /// Whether the run trained a language model (it writes samples.jsonl).
    pub fn is_language_model(&self) -> bool {
        self.file("samples.jsonl").is_some()
    }
}

/// The complete lines of a JSON-lines file, and the first problem met, if any.
#[derive(Debug, Default)]
pub struct Lines {
    /// Every complete line that parsed, in file order.
    pub rows: Vec<Value>,
    /// What was wrong (a corrupt line, an unreadable file), naming the file and line.
    pub error: Option<String>,
}

/// Read `name` of `run` as JSON lines; a missing file is empty. The last line is skipped
/// while it has no newline (its writer is still at it).
pub fn read_lines(run: &Run, name: &str) -> Lines {
    let Some(path) = run.file(name) else {
        return Lines::default();
    };
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            return Lines {
                rows: vec![],
                error: Some(format!("{name}: {e}")),
            }
        }
    };
    let complete = match bytes.iter().rposition(|&b| b == b'\n') {
        Some(end) => &bytes[..=end],
        None => &[][..],
    };
    let mut out = Lines::default();
    for (i, line) in complete.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Value>(line) {
            Ok(v) if v.is_object() => out.rows.push(v),
            Ok(_) => {
                out.error
                    .get_or_insert(format!("{name} line {}: not a JSON object", i + 1));
            }
            Err(e) => {
                out.error
                    .get_or_insert(format!("{name} line {}: {e}", i + 1));
            }
        }
    }
    out
}

/// Read `name` of `run` as one JSON document (None when missing).
pub fn read_json(run: &Run, name: &str) -> std::result::Result<Option<Value>, String> {
    let Some(path) = run.file(name) else {
        return Ok(None);
    };
    let bytes = std::fs::read(&path).map_err(|e| format!("{name}: {e}"))?;
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| format!("{name}: {e}"))
}

/// The scalar a chart shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Training loss (per logged step) and test/validation loss (per epoch).
    Loss,
    /// Training and test accuracy.
    Accuracy,
    /// Learning rate.
    LearningRate,
    /// Training samples (tokens for a language model) per second.
    SamplesPerSecond,
}

impl Metric {
    /// From the query string's name.
    pub fn parse(s: &str) -> Option<Metric> {
        Some(match s {
            "loss" => Metric::Loss,
            "accuracy" => Metric::Accuracy,
            "lr" => Metric::LearningRate,
            "samples_per_s" => Metric::SamplesPerSecond,
            _ => return None,
        })
    }

    /// Axis title.
    pub fn title(self) -> &'static str {
        match self {
            Metric::Loss => "loss",
            Metric::Accuracy => "accuracy",
            Metric::LearningRate => "learning rate",
            Metric::SamplesPerSecond => "samples/s",
        }
    }

    /// The key in steps.jsonl, and in metrics.jsonl for the training side and (when there is
    /// one) the evaluation side.
    fn keys(self) -> (&'static str, &'static str, Option<&'static str>) {
        match self {
            Metric::Loss => ("loss", "train_loss", Some("test_loss")),
            Metric::Accuracy => ("acc", "train_acc", Some("test_acc")),
            Metric::LearningRate => ("lr", "lr", None),
            Metric::SamplesPerSecond => ("samples_per_s", "samples_per_s", None),
        }
    }
}

/// The x axis of a chart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XAxis {
    /// Optimizer steps.
    Step,
    /// Epochs (fractional for the step lines).
    Epoch,
}

/// One curve of a run: its label (`train`, `test`, ...), whether it is per logged step
/// (smoothable), and its points sorted by x, one per x (the last logged wins: a resumed run
/// may log a step twice).
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    /// What the curve is.
    pub label: String,
    /// Per logged step (dense; smoothed on request) rather than per epoch.
    pub per_step: bool,
    /// (x, y) points, finite only.
    pub points: Vec<(f64, f64)>,
}

fn sorted_unique(points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    let mut by_x: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
    for (x, y) in points {
        if x.is_finite() && y.is_finite() {
            // Order-preserving key for finite f64 (all x here are >= 0).
            by_x.insert(x.to_bits(), (x, y));
        }
    }
    let mut v: Vec<_> = by_x.into_values().collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

/// The curves of `metric` for `run` against `x`, and the errors met reading its files.
pub fn curves(run: &Run, metric: Metric, x: XAxis) -> (Vec<Curve>, Vec<String>) {
    let steps = read_lines(run, "steps.jsonl");
    let epochs = read_lines(run, "metrics.jsonl");
    let errors: Vec<String> = [steps.error.clone(), epochs.error.clone()]
        .into_iter()
        .flatten()
        .collect();
    let (step_key, train_key, eval_key) = metric.keys();
    let num = |v: &Value, k: &str| v.get(k).and_then(Value::as_f64);
    let mut out = Vec::new();
    if !steps.rows.is_empty() {
        let xk = if x == XAxis::Step {
            "step"
        } else {
            "epoch_progress"
        };
        let pts = steps
            .rows
            .iter()
            .filter_map(|r| Some((num(r, xk)?, num(r, step_key)?)))
            .collect();
        out.push(Curve {
            label: "train".into(),
            per_step: true,
            points: sorted_unique(pts),
        });
    }
    let xk = if x == XAxis::Step { "steps" } else { "epoch" };
    let epoch_curve = |key: &str| {
        sorted_unique(
            epochs
                .rows
                .iter()
                .filter_map(|r| Some((num(r, xk)?, num(r, key)?)))
                .collect(),
        )
    };
    if steps.rows.is_empty() && !epochs.rows.is_empty() {
        out.push(Curve {
            label: "train (per epoch)".into(),
            per_step: false,
            points: epoch_curve(train_key),
        });
    }
    if let Some(k) = eval_key {
        let pts = epoch_curve(k);
        if !pts.is_empty() {
            let label = if run.is_language_model() {
                "validation"
            } else {
                "test"
            };
            out.push(Curve {
                label: label.into(),
                per_step: false,
                points: pts,
            });
        }
    }
    out.retain(|c| !c.points.is_empty());
    (out, errors)
}

/// TensorBoard's smoothing: an exponential moving average with weight `w` in [0, 1),
/// debiased so that the first points are not pulled towards zero.
pub fn smooth(points: &[(f64, f64)], w: f64) -> Vec<(f64, f64)> {
    let mut last = 0.0;
    let mut out = Vec::with_capacity(points.len());
    for (i, &(x, y)) in points.iter().enumerate() {
        last = last * w + (1.0 - w) * y;
        let debias = 1.0 - w.powi(i as i32 + 1);
        out.push((x, if debias > 0.0 { last / debias } else { y }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_logdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tt_dash_runs_{tag}_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn runs_are_found_by_their_files_and_nothing_else_resolves() {
        let d = temp_logdir("find");
        std::fs::create_dir_all(d.join("a")).unwrap();
        std::fs::create_dir_all(d.join("exp/b")).unwrap();
        std::fs::create_dir_all(d.join("not_a_run")).unwrap();
        std::fs::write(d.join("a/metrics.jsonl"), "").unwrap();
        std::fs::write(d.join("exp/b/steps.jsonl"), "").unwrap();
        let logdir = LogDir::open(&d).unwrap();
        let ids: Vec<String> = logdir.runs().into_iter().map(|r| r.id).collect();
        assert_eq!(ids, ["a", "exp/b"]);
        for bad in ["../a", "a/..", "/etc", "not_a_run", "exp", ""] {
            assert!(logdir.run(bad).is_none(), "{bad}");
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_half_written_last_line_is_skipped_and_a_corrupt_line_reported() {
        let d = temp_logdir("lines");
        std::fs::write(
            d.join("metrics.jsonl"),
            "{\"epoch\":1,\"steps\":10,\"test_loss\":0.5}\nnot json\n{\"epoch\":2,\"steps\":20,\"test_loss\":0.4}\n{\"epoch\":3,",
        )
        .unwrap();
        let run = LogDir::open(&d).unwrap().run(".").unwrap();
        let lines = read_lines(&run, "metrics.jsonl");
        assert_eq!(lines.rows.len(), 2);
        assert!(lines.error.unwrap().starts_with("metrics.jsonl line 2:"));
        let (curves, errors) = curves(&run, Metric::Loss, XAxis::Epoch);
        assert_eq!(curves.len(), 1);
        assert_eq!(curves[0].points, [(1.0, 0.5), (2.0, 0.4)]);
        assert_eq!(errors.len(), 1);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn curves_keep_the_last_record_of_a_step_and_drop_non_finite_values() {
        let d = temp_logdir("curves");
        let mut text = String::new();
        for (step, loss) in [(10, 2.0), (20, 1.5), (10, 1.9), (30, f64::NAN)] {
            let v = serde_json::json!({"step": step, "epoch_progress": step as f64 / 100.0, "loss": loss});
            text.push_str(&format!("{v}\n"));
        }
        std::fs::write(d.join("steps.jsonl"), text).unwrap();
        let run = LogDir::open(&d).unwrap().run(".").unwrap();
        let (c, errors) = curves(&run, Metric::Loss, XAxis::Step);
        assert!(errors.is_empty());
        assert_eq!(c[0].points, [(10.0, 1.9), (20.0, 1.5)]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn smoothing_is_debiased_and_zero_weight_is_the_identity() {
        let pts = [(0.0, 1.0), (1.0, 3.0), (2.0, 3.0)];
        assert_eq!(smooth(&pts, 0.0), pts);
        let s = smooth(&pts, 0.5);
        assert_eq!(s[0].1, 1.0, "the first point is its own average");
        // (0.25 * 1 + 0.5 * 3) / 0.75 = 2.333...
        assert!((s[1].1 - 7.0 / 3.0).abs() < 1e-12);
    }
}
