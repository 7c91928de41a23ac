//! Qwen2 and Mistral, the Llama-architecture families, against `transformers`
//! (fixtures/llm_families/ from scripts/fixtures/gen_llm_family_fixtures.py): tiny random
//! `Qwen2ForCausalLM` (q/k/v biases, no o_proj bias) and `MistralForCausalLM` (a sliding
//! window of 4 positions) directories written by `save_pretrained`, loaded by
//! `LlamaForCausalLM::from_pretrained`: logits of 12 positions, the loss and every
//! parameter's gradient, greedy generation with the cache, cached decoding (Mistral's rolling
//! cache) against the full forward, the tokenizer, and the config errors.

mod common;

use common::{fixture_path, load_fixture, load_json_fixture, max_diff};
use std::collections::BTreeMap;
use std::path::PathBuf;
use tinytorch::models::gpt::Sampling;
use tinytorch::models::llama::{Family, LlamaConfig, LlamaForCausalLM};
use tinytorch::nn::Module;
use tinytorch::Tensor;

fn fixtures() -> PathBuf {
    fixture_path("llm_families")
}

fn reference() -> BTreeMap<String, Tensor> {
    load_fixture("llm_families/reference.safetensors")
}

fn load(name: &str) -> LlamaForCausalLM {
    LlamaForCausalLM::from_pretrained(fixtures().join(name)).unwrap()
}

fn ids_of(t: &Tensor) -> Vec<usize> {
    t.to_vec::<i64>()
        .unwrap()
        .iter()
        .map(|&i| i as usize)
        .collect()
}

#[test]
fn families_are_read_from_the_config() {
    assert_eq!(load("qwen2").config().family().unwrap(), Family::Qwen2);
    let mistral = load("mistral");
    assert_eq!(mistral.config().family().unwrap(), Family::Mistral);
    assert_eq!(mistral.config().attention_window(), Some(4));
    // Qwen2's q/k/v biases, and none on o_proj.
    let names: Vec<String> = load("qwen2")
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    for p in ["q_proj", "k_proj", "v_proj"] {
        assert!(
            names.contains(&format!("model.layers.0.self_attn.{p}.bias")),
            "{p}"
        );
    }
    assert!(!names.contains(&"model.layers.0.self_attn.o_proj.bias".to_string()));
}

#[test]
fn logits_match_transformers() {
    let f = reference();
    for family in ["qwen2", "mistral"] {
        let model = load(family);
        let got = model.logits(&f[&format!("{family}.input_ids")]).unwrap();
        let d = max_diff(&got, &f[&format!("{family}.logits")]);
        assert!(d < 1e-4, "{family}: logits differ by {d}");
    }
}

#[test]
fn loss_and_every_gradient_match_pytorch() {
    let f = reference();
    for family in ["qwen2", "mistral"] {
        let mut model = load(family);
        model.train();
        let (loss, _) = model
            .loss(
                &f[&format!("{family}.input_ids")],
                &f[&format!("{family}.targets")],
            )
            .unwrap();
        let d = max_diff(&loss, &f[&format!("{family}.loss")]);
        assert!(d < 2e-6, "{family}: loss differs by {d}");
        loss.backward().unwrap();
        let params = model.named_parameters();
        assert!(params.len() > 10);
        for (name, p) in params {
            let want = &f[&format!("{family}.grad.{name}")];
            let got = p
                .grad()
                .unwrap_or_else(|| panic!("{family} {name}: no gradient"));
            let scale = want
                .to_vec_f64()
                .unwrap()
                .iter()
                .fold(0.0f64, |m, v| m.max(v.abs()));
            let d = max_diff(&got, want);
            assert!(
                d <= 1e-5 + 1e-4 * scale,
                "{family} grad {name}: {d} (largest {scale})"
            );
        }
    }
}

#[test]
fn the_sliding_window_is_what_makes_mistral_differ() {
    // The same weights read as a Llama (no window) give other logits past the window.
    let f = reference();
    let dir = fixtures().join("mistral");
    let mut config = LlamaConfig::from_file(dir.join("config.json")).unwrap();
    config.model_type = Some("llama".into());
    let tensors = tinytorch::models::llama::read_state_dict(&dir).unwrap();
    let full =
        LlamaForCausalLM::from_state_dict(config, tensors, tinytorch::DType::F32, "test").unwrap();
    let ids = &f["mistral.input_ids"];
    let (windowed, unwindowed) = (
        load("mistral").logits(ids).unwrap(),
        full.logits(ids).unwrap(),
    );
    // The first 4 positions see the same keys either way; later ones do not.
    assert!(
        max_diff(
            &windowed.narrow(1, 0, 4).unwrap(),
            &unwindowed.narrow(1, 0, 4).unwrap()
        ) < 1e-5
    );
    assert!(
        max_diff(
            &windowed.narrow(1, 4, 8).unwrap(),
            &unwindowed.narrow(1, 4, 8).unwrap()
        ) > 1e-2
    );
}

#[test]
fn cached_decoding_equals_the_full_forward() {
    let f = reference();
    for family in ["qwen2", "mistral"] {
        let model = load(family);
        let ids = &f[&format!("{family}.input_ids")];
        let full = model.logits(ids).unwrap();
        let _guard = tinytorch::autograd::no_grad();
        let mut cache = model.new_cache(2, 12).unwrap();
        // A prompt of 5 (past the window), a chunk of 3, then one at a time.
        let mut parts = Vec::new();
        for (start, len) in [(0, 5), (5, 3), (8, 1), (9, 1), (10, 1), (11, 1)] {
            let chunk = ids.narrow(1, start, len).unwrap();
            parts.push(model.logits_cached(&chunk, &mut cache).unwrap());
        }
        let refs: Vec<&Tensor> = parts.iter().collect();
        let d = max_diff(&Tensor::cat(&refs, 1).unwrap(), &full);
        assert!(d < 1e-4, "{family}: cached logits differ by {d}");
        assert_eq!(cache.position(), 12, "{family}");
        // Mistral's cache rolls: it holds the window - 1 = 3 positions a new query may need.
        let held = if family == "mistral" { 3 } else { 12 };
        assert_eq!(cache.len(), held, "{family}");
    }
}

#[test]
fn greedy_generation_matches_transformers_generate() {
    let f = reference();
    let greedy = Sampling {
        temperature: 0.0,
        ..Default::default()
    };
    for family in ["qwen2", "mistral"] {
        let prompt = ids_of(&f[&format!("{family}.generate.prompt")]);
        let want = ids_of(&f[&format!("{family}.generate.tokens")]);
        let got = load(family).generate(&prompt, 12, &greedy).unwrap();
        assert_eq!(got, want, "{family}");
    }
}

#[test]
fn unsupported_family_options_are_errors() {
    let mut v = load_json_fixture("llm_families/qwen2/config.json");
    v["use_sliding_window"] = true.into();
    let err = LlamaConfig::from_json(&v.to_string())
        .unwrap_err()
        .to_string();
    assert!(err.contains("use_sliding_window"), "{err}");
    v["use_sliding_window"] = false.into();
    v["model_type"] = "gemma".into();
    let err = LlamaConfig::from_json(&v.to_string())
        .unwrap_err()
        .to_string();
    assert!(err.contains("model_type 'gemma'"), "{err}");
    let mut v = load_json_fixture("llm_families/mistral/config.json");
    v["sliding_window"] = 0.into();
    let err = LlamaConfig::from_json(&v.to_string())
        .unwrap_err()
        .to_string();
    assert!(err.contains("sliding_window must be positive"), "{err}");
}

#[test]
fn the_directories_tokenizer_encodes_and_decodes_as_transformers() {
    use tinytorch::text::hf_tokenizer::HfTokenizer;
    let reference = load_json_fixture("llm_families/generate.json");
    let tok = HfTokenizer::from_file(fixtures().join("qwen2/tokenizer.json")).unwrap();
    let want: Vec<u32> = serde_json::from_value(reference["qwen2"]["prompt_ids"].clone()).unwrap();
    assert_eq!(tok.encode("the cat sat").unwrap(), want);
    assert_eq!(tok.decode(&want, true).unwrap(), "the cat sat");
    let err = tok.decode(&[5, 1000], true).unwrap_err().to_string();
    assert!(
        err.contains("token id 1000 is outside the vocabulary"),
        "{err}"
    );
}
