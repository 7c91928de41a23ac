//! The training progress bar (indicatif): epoch, step, loss, samples/s and ETA.

use super::EpochTotals;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar over the steps of one epoch; hidden when disabled (`--json`, tests) or when
/// stderr is not a terminal.
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar for epoch `epoch` of `epochs` with `steps` steps, drawn on stderr if `visible`.
    pub fn new(epoch: usize, epochs: usize, steps: u64, visible: bool) -> Progress {
        let bar = ProgressBar::with_draw_target(
            Some(steps),
            if visible {
                ProgressDrawTarget::stderr()
            } else {
                ProgressDrawTarget::hidden()
            },
        );
        let style = ProgressStyle::with_template(
            "epoch {prefix} [{bar:30}] {pos}/{len} steps  {msg}  ETA {eta}",
        )
        .expect("the template is valid")
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(format!("{epoch}/{epochs}"));
        Progress { bar }
    }

    /// A bar that draws nothing.
    pub fn hidden() -> Progress {
        Progress::new(0, 0, 0, false)
    }

    /// Record one finished step with its loss.
    pub fn step(&self, loss: f64, totals: &EpochTotals) {
        self.bar.inc(1);
        // The message is formatted every `MESSAGE_EVERY` steps, and not at all when nothing
        // is drawn: two `format!`s and the bar's lock on every step of a 0.25 ms step were
        // a cost an epoch's samples/s saw.
        const MESSAGE_EVERY: u64 = 8;
        if self.bar.is_hidden() || self.bar.position() % MESSAGE_EVERY != 1 {
            return;
        }
        let rate = if totals.timed_s > 0.0 {
            format!("{:.0} samples/s", totals.samples_per_s())
        } else {
            "-".to_string()
        };
        self.bar.set_message(format!("loss {loss:.4}  {rate}"));
    }

    /// Start counting from `pos` (a resumed epoch).
    pub fn set_position(&self, pos: u64) {
        self.bar.set_position(pos);
    }

    /// Remove the bar and print `line` in its place.
    pub fn finish(&self, line: &str) {
        self.bar.finish_and_clear();
        if !self.bar.is_hidden() {
            eprintln!("{line}");
        }
    }
}
