//! TinyTorch's own tokenizer JSON (char-level and byte-level BPE, as stored in checkpoints),
//! then a round trip of text through what loaded.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(tok) = tinytorch::text::tokenizer_from_json(text) {
        let sample = "The quick brown fox, 42 times.";
        if let Ok(ids) = tok.encode(sample) {
            assert_eq!(tok.decode(&ids).unwrap(), sample);
        }
        let _ = tok.decode(&[0, 1, 255, 256, 1 << 20]);
    }
});
