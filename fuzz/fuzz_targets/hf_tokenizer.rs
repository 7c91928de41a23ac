//! Hugging Face `tokenizer.json` files, then encoding and decoding with what loaded.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tinytorch::text::hf_tokenizer::HfTokenizer;

fuzz_target!(init: {
    // One thread: the crate's batch parallelism only slows a fuzzer down (and a panic on a
    // pool thread would lose the input that caused it).
    std::env::set_var("TOKENIZERS_PARALLELISM", "false");
}, |data: &[u8]| {
    if let Ok(tok) = HfTokenizer::from_bytes(data) {
        if let Ok(batch) = tok.encode_batch(&["Hello, world!", "ünïcode ☃ text"]) {
            let _ = batch.input_ids.shape();
        }
        if let Ok(ids) = tok.encode("a tokenizer.json from the fuzzer") {
            let _ = tok.decode(&ids, true);
        }
    }
});
