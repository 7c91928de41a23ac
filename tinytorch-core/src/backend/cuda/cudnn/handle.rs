//! cuDNN handles: one per thread and device, on the device's one stream, made on first use
//! and kept until the thread ends. Per thread because a cuDNN handle must not be used by
//! two threads at once (cuDNN's thread-safety rule), and the backward may run on another
//! thread than the forward; per device because a handle belongs to the context current
//! when it was made.

use super::super::device::{cuda_err, CudaDevice};
use crate::error::{Error, Result};
use cudarc::cudnn::{result, sys};
use std::cell::RefCell;
use std::collections::HashMap;

/// A cuDNN handle, destroyed when its thread ends.
struct Handle(sys::cudnnHandle_t);

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: made by `handle` below and destroyed once, by the thread that owns it.
        let _ = unsafe { result::destroy_handle(self.0) };
    }
}

thread_local! {
    static HANDLES: RefCell<HashMap<usize, Handle>> = RefCell::new(HashMap::new());
}

/// This thread's handle for `dev`, with `dev`'s context made current on this thread (every
/// cuDNN call runs in the current context). Callers check first that cuDNN loads
/// (`library::check`).
pub(crate) fn handle(dev: &CudaDevice) -> Result<sys::cudnnHandle_t> {
    dev.stream
        .context()
        .bind_to_thread()
        .map_err(|e| cuda_err("cudnn", e))?;
    HANDLES.with(|handles| {
        let mut handles = handles.borrow_mut();
        if let Some(h) = handles.get(&dev.ordinal()) {
            return Ok(h.0);
        }
        let h = Handle(result::create_handle().map_err(|e| cudnn_err("cudnnCreate", e))?);
        // SAFETY: a live handle and this device's live stream (kept for the process by the
        // device registry, so it outlives the handle).
        unsafe { result::set_stream(h.0, dev.stream.cu_stream() as sys::cudaStream_t) }
            .map_err(|e| cudnn_err("cudnnSetStream", e))?;
        let raw = h.0;
        handles.insert(dev.ordinal(), h);
        Ok(raw)
    })
}

/// A cuDNN status as an error naming the call.
pub(crate) fn cudnn_err(call: &str, e: result::CudnnError) -> Error {
    Error::Cuda {
        op: "conv2d",
        msg: format!("{call} (cuDNN): {e:?}"),
    }
}
