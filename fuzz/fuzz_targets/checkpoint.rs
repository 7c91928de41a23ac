//! Training checkpoints: safetensors plus the JSON of optimizer, scheduler and generator
//! state; the stored tokenizer of a language-model run is read as `tinytorch generate` does.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(ckpt) = tinytorch::io::deserialize_checkpoint(data) {
        for text in ckpt.extra.values() {
            let _ = tinytorch::text::tokenizer_from_json(text);
        }
    }
});
