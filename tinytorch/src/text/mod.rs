//! Text processing for language models: Hugging Face tokenizers.

pub mod hf_tokenizer;
