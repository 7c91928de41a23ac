//! Early stopping: end training once a validation loss has stopped improving (Keras' and
//! Lightning's `EarlyStopping(monitor="val_loss", mode="min", patience, min_delta)`).

use crate::error::{Error, Result};

/// Watches a loss after every epoch; [`EarlyStopping::update`] says when `patience` epochs in
/// a row have not improved on the best by more than `min_delta`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EarlyStopping {
    /// Epochs without improvement tolerated before stopping.
    pub patience: u64,
    /// The least decrease that counts as an improvement.
    pub min_delta: f64,
    /// The best loss so far (`+inf` before the first).
    pub best: f64,
    /// The epoch (1-based) of the best loss, 0 before the first.
    pub best_epoch: u64,
    /// Epochs since the best.
    pub bad_epochs: u64,
}

impl EarlyStopping {
    /// A fresh watcher; `patience` must be at least 1 and `min_delta` not negative.
    pub fn new(patience: u64, min_delta: f64) -> Result<EarlyStopping> {
        if patience == 0 || min_delta.is_nan() || min_delta < 0.0 {
            return Err(Error::invalid(
                "EarlyStopping",
                format!("needs patience >= 1 and min_delta >= 0, got patience {patience}, min_delta {min_delta}"),
            ));
        }
        Ok(EarlyStopping {
            patience,
            min_delta,
            best: f64::INFINITY,
            best_epoch: 0,
            bad_epochs: 0,
        })
    }

    /// Record epoch `epoch`'s loss; true when training should stop. A NaN loss never
    /// improves.
    pub fn update(&mut self, epoch: u64, loss: f64) -> bool {
        if loss < self.best - self.min_delta {
            self.best = loss;
            self.best_epoch = epoch;
            self.bad_epochs = 0;
        } else {
            self.bad_epochs += 1;
        }
        self.should_stop()
    }

    /// True once `patience` epochs in a row have not improved.
    pub fn should_stop(&self) -> bool {
        self.bad_epochs >= self.patience
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_after_patience_epochs_without_improvement() {
        let mut e = EarlyStopping::new(2, 0.01).unwrap();
        assert!(!e.update(1, 1.0));
        assert!(!e.update(2, 0.995)); // within min_delta: no improvement
        assert!(!e.update(3, 0.9));
        assert!(!e.update(4, f64::NAN));
        assert!(e.update(5, 0.95));
        assert_eq!((e.best, e.best_epoch), (0.9, 3));
        assert!(EarlyStopping::new(0, 0.0).is_err());
        assert!(EarlyStopping::new(1, -1.0).is_err());
    }
}
