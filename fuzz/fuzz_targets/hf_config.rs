//! Hugging Face `config.json` files of the Llama-family and BERT models.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tinytorch::models::bert::BertConfig;
use tinytorch::models::llama::LlamaConfig;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(config) = LlamaConfig::from_json(text) {
        let _ = config.family();
    }
    let _ = BertConfig::from_json(text);
});
