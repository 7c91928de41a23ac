//! Saving and loading: safetensors state dicts that exchange with PyTorch
//! (`safetensors.torch.save_file` / `load_file`), module convenience wrappers, and training
//! checkpoints (model, optimizer, scheduler, generator states, counters) in one file.
//!
//! Every write is atomic (temp file, `fsync`, rename, directory `fsync`), so a crash during a
//! save leaves the previous file whole.

mod atomic;
mod checkpoint;
mod safetensors;

pub use self::checkpoint::{
    load_checkpoint, save_checkpoint, Checkpoint, CHECKPOINT_FORMAT, CHECKPOINT_VERSION,
};
pub use self::safetensors::{
    deserialize_safetensors, dtype_from_safetensors, dtype_to_safetensors, load_module,
    load_safetensors, load_safetensors_with_metadata, save_module, save_safetensors,
    save_safetensors_with_metadata, serialize_safetensors,
};
