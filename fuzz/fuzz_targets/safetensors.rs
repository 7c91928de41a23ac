//! safetensors files (weights, `torch.save` files of the Python package).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = tinytorch::io::deserialize_safetensors(data);
});
