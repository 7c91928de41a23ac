//! Saving and loading: safetensors state dicts that exchange with PyTorch
//! (`safetensors.torch.save_file` / `load_file`), module convenience wrappers, and training
//! checkpoints (model, optimizer, scheduler, generator states, counters) in one file.
//!
//! Every write is atomic (temp file, `fsync`, rename, directory `fsync`), so a crash during a
//! save leaves the previous file whole.
//!
//! ```
//! use std::collections::HashMap;
//! use tinytorch_core::io::{load_checkpoint, save_checkpoint, Checkpoint};
//! use tinytorch_core::nn::{Linear, Module};
//! use tinytorch_core::optim::{Optimizer, SgdOptions, SGD};
//!
//! # fn main() -> tinytorch_core::Result<()> {
//! let model = Linear::new(4, 2, true)?;
//! let opts = SgdOptions { lr: 0.1, momentum: 0.9, ..Default::default() };
//! let mut opt = SGD::new(model.parameters(), opts)?;
//! let path = std::env::temp_dir().join(format!("doc-ckpt-{}.safetensors", std::process::id()));
//! let ckpt = Checkpoint {
//!     model: model.state_dict(),
//!     optimizer: Some(opt.state_dict()),
//!     epoch: 1,
//!     ..Default::default()
//! };
//! save_checkpoint(&path, &ckpt)?;
//!
//! let ckpt = load_checkpoint(&path)?;
//! let state: HashMap<_, _> = ckpt.model.into_iter().collect();
//! model.load_state_dict(&state, true)?;
//! opt.load_state_dict(ckpt.optimizer.as_ref().expect("saved above"))?;
//! assert_eq!(ckpt.epoch, 1);
//! # std::fs::remove_file(&path)?;
//! # Ok(())
//! # }
//! ```

mod atomic;
pub use atomic::remove_torn_saves;
pub use atomic::write_atomic;
mod checkpoint;
mod safetensors;

pub use self::checkpoint::{
    deserialize_checkpoint, load_checkpoint, save_checkpoint, Checkpoint, CHECKPOINT_FORMAT,
    CHECKPOINT_VERSION,
};
pub use self::safetensors::{
    deserialize_safetensors, dtype_from_safetensors, dtype_to_safetensors, load_module,
    load_safetensors, load_safetensors_with_metadata, save_module, save_safetensors,
    save_safetensors_with_metadata, serialize_safetensors,
};
