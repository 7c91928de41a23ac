//! CUDA events on a device's one stream (what `torch.cuda.Event` wraps): a marker recorded
//! behind the work queued so far, which the host can poll or wait for, and the GPU time
//! between two markers (`cuEventElapsedTime`), for timing kernels without a host round trip
//! per step.

use super::device::{cuda_err, CudaDevice};
use crate::error::{Error, Result};
use cudarc::driver::{result, sys, CudaEvent};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// One CUDA event of one device; created with nothing recorded in it.
pub struct Event {
    dev: Arc<CudaDevice>,
    event: CudaEvent,
    timing: bool,
    /// Whether `record` has run once (an event never recorded has no time).
    recorded: AtomicBool,
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Event({:?}, timing: {})", self.dev, self.timing)
    }
}

impl Event {
    /// A new event on `dev`. `timing`: whether [`Event::elapsed_ms`] may use it (events
    /// without timing are cheaper to record); `blocking`: whether [`Event::synchronize`]
    /// sleeps instead of spinning. The driver's flags cannot say "blocking without timing"
    /// through cudarc's flag enum, so a blocking event always keeps timing (harmless).
    pub fn new(dev: &Arc<CudaDevice>, timing: bool, blocking: bool) -> Result<Event> {
        let flags = match (timing, blocking) {
            (_, true) => sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC,
            (true, false) => sys::CUevent_flags::CU_EVENT_DEFAULT,
            (false, false) => sys::CUevent_flags::CU_EVENT_DISABLE_TIMING,
        };
        let event = dev
            .stream
            .context()
            .new_event(Some(flags))
            .map_err(|e| cuda_err("Event", e))?;
        Ok(Event {
            dev: dev.clone(),
            event,
            timing: timing || blocking,
            recorded: AtomicBool::new(false),
        })
    }

    /// The device the event belongs to.
    pub fn device(&self) -> &Arc<CudaDevice> {
        &self.dev
    }

    /// Whether the event was created with timing.
    pub fn timing(&self) -> bool {
        self.timing
    }

    /// Whether the event has been recorded.
    pub fn is_recorded(&self) -> bool {
        self.recorded.load(Ordering::Acquire)
    }

    /// Record the work queued on the device's stream so far (asynchronous: returns at once).
    pub fn record(&self) -> Result<()> {
        self.event
            .record(&self.dev.stream)
            .map_err(|e| cuda_err("Event.record", e))?;
        self.recorded.store(true, Ordering::Release);
        Ok(())
    }

    /// Whether the recorded work has finished (true for an event never recorded), without
    /// waiting. An error of an earlier asynchronous launch is returned here.
    pub fn query(&self) -> Result<bool> {
        self.event
            .try_is_complete()
            .map_err(|e| cuda_err("Event.query", e))
    }

    /// Wait on the host until the recorded work has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.event
            .synchronize()
            .map_err(|e| cuda_err("Event.synchronize", e))
    }

    /// Make work queued on the device's stream from now on wait for this event. All of a
    /// device's work goes to its one stream in order, so this only matters for events of
    /// another device.
    pub fn wait(&self) -> Result<()> {
        self.dev
            .stream
            .wait(&self.event)
            .map_err(|e| cuda_err("Event.wait", e))
    }

    /// Milliseconds of GPU time between this event and `end`, both recorded and finished
    /// (PyTorch checks the same and does not wait: call `end.synchronize()` first).
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        if !self.timing || !end.timing {
            return Err(Error::Cuda {
                op: "Event.elapsed_time",
                msg: "Both events must be created with argument 'enable_timing=True'.".into(),
            });
        }
        if !self.is_recorded() || !end.is_recorded() {
            return Err(Error::Cuda {
                op: "Event.elapsed_time",
                msg: "Both events must be recorded before calculating elapsed time.".into(),
            });
        }
        if self.dev.ordinal() != end.dev.ordinal() {
            return Err(Error::Cuda {
                op: "Event.elapsed_time",
                msg: format!(
                    "the events are on different devices (cuda:{} and cuda:{})",
                    self.dev.ordinal(),
                    end.dev.ordinal()
                ),
            });
        }
        if !self.query()? || !end.query()? {
            return Err(Error::Cuda {
                op: "Event.elapsed_time",
                msg: "Both events must be completed before calculating elapsed time.".into(),
            });
        }
        self.event
            .context()
            .bind_to_thread()
            .map_err(|e| cuda_err("Event.elapsed_time", e))?;
        // SAFETY: both events were created by `new_event` in this context and live as long
        // as `self` and `end`; both have completed.
        unsafe { result::event::elapsed(self.event.cu_event(), end.event.cu_event()) }
            .map_err(|e| cuda_err("Event.elapsed_time", e))
    }
}
