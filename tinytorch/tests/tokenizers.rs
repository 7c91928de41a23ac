//! The character-level and byte-level BPE tokenizers: round trips, known merges, JSON.

use tinytorch::text::{tokenizer_from_json, BpeTokenizer, CharTokenizer, Tokenizer};

#[test]
fn char_tokenizer_round_trips_and_rejects_unknown_characters() {
    let t = CharTokenizer::fit("hello world");
    assert_eq!(t.vocab_size(), 8); // " dehlorw"
    let ids = t.encode("hello").unwrap();
    assert_eq!(ids, vec![3, 2, 4, 4, 5]);
    assert_eq!(t.decode(&ids).unwrap(), "hello");
    assert!(t.encode("hex").unwrap_err().to_string().contains("'x'"));
    assert!(t.decode(&[99]).is_err());
    let back = tokenizer_from_json(&t.to_json()).unwrap();
    assert_eq!(back.encode("world").unwrap(), t.encode("world").unwrap());
}

#[test]
fn bpe_learns_the_most_frequent_pairs_first() {
    // "aa" occurs most often, then "aaaa" = (aa, aa).
    let t = BpeTokenizer::train("aaaa aaaa aaaa ab", 258).unwrap();
    assert_eq!(t.merges(), &[(97, 97), (256, 256)]);
    assert_eq!(t.encode("aaaa").unwrap(), vec![257]);
    assert_eq!(t.vocab_size(), 258);
}

#[test]
fn bpe_round_trips_any_text_and_compresses_its_training_text() {
    let text = "the cat sat on the mat. the cat ate the rat. Ünïcödé — 日本語 🙂 ok";
    let t = BpeTokenizer::train(text, 300).unwrap();
    let ids = t.encode(text).unwrap();
    assert!(
        ids.len() < text.len(),
        "{} tokens for {} bytes",
        ids.len(),
        text.len()
    );
    assert_eq!(t.decode(&ids).unwrap(), text);
    let other = "unseen words: zebra, 🙂🙂";
    assert_eq!(t.decode(&t.encode(other).unwrap()).unwrap(), other);
    let back = tokenizer_from_json(&t.to_json()).unwrap();
    assert_eq!(back.encode(text).unwrap(), ids);
    assert!(BpeTokenizer::train(text, 100).is_err());
    assert!(tokenizer_from_json("{\"kind\": \"bpe\", \"merges\": [[300, 1]]}").is_err());
}
