//! Llama against `transformers` (fixtures/llama/ from scripts/fixtures/gen_llama_fixtures.py): tiny
//! random `LlamaForCausalLM` directories written by `save_pretrained` (f32, sharded, f16,
//! bf16, and a model with the other options) and the logits, loss, gradients and greedy
//! generation transformers computes for them; grouped-query attention against explicitly
//! repeated heads and by f64 gradcheck; the KV cache against the full forward; every loading
//! and config error.

mod common;

use common::{assert_close, fixture_path, max_diff, Tol};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use tinytorch::autograd::gradcheck::gradcheck;
use tinytorch::io::{load_safetensors, save_safetensors};
use tinytorch::models::gpt::Sampling;
use tinytorch::models::llama::{
    grouped_query_attention, read_state_dict, LlamaConfig, LlamaForCausalLM, RopeScaling,
};
use tinytorch::nn::Module;
use tinytorch::{manual_seed, DType, Device, Tensor};

/// Tests that draw from the global generator hold this while they do, so that tests running
/// in parallel do not interleave their draws.
static RANDOM: Mutex<()> = Mutex::new(());

fn seeded(seed: u64) -> MutexGuard<'static, ()> {
    let guard = RANDOM.lock().unwrap_or_else(|e| e.into_inner());
    manual_seed(seed);
    guard
}

fn reference() -> BTreeMap<String, Tensor> {
    load_safetensors(fixture_path("llama").join("reference.safetensors")).unwrap()
}

fn load(name: &str) -> LlamaForCausalLM {
    LlamaForCausalLM::from_pretrained(fixture_path("llama").join(name)).unwrap()
}

/// A fresh directory under the system temp dir.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tinytorch-llama-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A fresh temp dir `name` holding the f32 fixture's `config.json` and no weights.
fn dir_with_f32_config(name: &str) -> PathBuf {
    let dir = temp_dir(name);
    let config = fixture_path("llama").join("f32/config.json");
    std::fs::copy(config, dir.join("config.json")).unwrap();
    dir
}

/// A copy of fixture directory `name` in a fresh temp dir.
fn copy_fixture(name: &str, to: &str) -> PathBuf {
    let dir = temp_dir(to);
    for entry in std::fs::read_dir(fixture_path("llama").join(name)).unwrap() {
        let p = entry.unwrap().path();
        std::fs::copy(&p, dir.join(p.file_name().unwrap())).unwrap();
    }
    dir
}

/// The largest `|x|` of an f32 tensor, as f64.
fn largest_abs(t: &Tensor) -> f64 {
    let m = t.abs().unwrap().amax(&[], false).unwrap();
    m.item::<f32>().unwrap() as f64
}

/// A tensor of standard normal draws on the CPU.
fn randn(shape: &[usize], dtype: DType) -> Tensor {
    Tensor::randn(shape, dtype, Device::Cpu).unwrap()
}

fn err_of<T>(r: tinytorch::Result<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn f32_logits_match_transformers() {
    let f = reference();
    let model = load("f32");
    let logits = model.logits(&f["input_ids"]).unwrap();
    let d = max_diff(&logits, &f["logits"]);
    eprintln!("f32 logits: max abs difference to transformers {d:e}");
    assert!(d <= 1e-5, "logits differ by {d}");
    assert_eq!(
        model.forward(&f["input_ids"]).unwrap().shape(),
        &[2, 12, 96]
    );
}

#[test]
fn parameter_names_are_hugging_faces() {
    let model = load("f32");
    let ours: Vec<String> = model.state_dict().into_keys().collect();
    let file: Vec<String> = load_safetensors(fixture_path("llama").join("f32/model.safetensors"))
        .unwrap()
        .into_keys()
        .collect();
    assert_eq!(ours, file);
    let names: Vec<String> = model
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names[0], "model.embed_tokens.weight");
    assert_eq!(names[1], "model.layers.0.self_attn.q_proj.weight");
    assert_eq!(names.last().unwrap(), "lm_head.weight");
    assert_eq!(model.num_parameters(), 24736);
    // The tied model has no lm_head of its own, like the file save_pretrained wrote.
    let tied = load("options");
    let file: Vec<String> =
        load_safetensors(fixture_path("llama").join("options/model.safetensors"))
            .unwrap()
            .into_keys()
            .collect();
    assert_eq!(tied.state_dict().into_keys().collect::<Vec<_>>(), file);
}

#[test]
fn sharded_checkpoint_equals_unsharded() {
    let shards = std::fs::read_dir(fixture_path("llama").join("sharded"))
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_string_lossy().starts_with("model-")
        })
        .count();
    assert!(shards >= 2, "the fixture has {shards} shards");
    let (a, b) = (load("f32"), load("sharded"));
    let (sa, sb) = (a.state_dict(), b.state_dict());
    assert_eq!(sa.keys().collect::<Vec<_>>(), sb.keys().collect::<Vec<_>>());
    for (k, t) in &sa {
        assert_eq!(max_diff(t, &sb[k]), 0.0, "{k}");
    }
    let ids = &reference()["input_ids"];
    assert_eq!(
        max_diff(&a.logits(ids).unwrap(), &b.logits(ids).unwrap()),
        0.0
    );
}

#[test]
fn f16_and_bf16_checkpoints_load() {
    let f = reference();
    let ids = &f["input_ids"];
    for (tag, dtype, native_tol) in [("f16", DType::F16, 0.03), ("bf16", DType::BF16, 0.2)] {
        // Upcast to f32: transformers in f32 on the same rounded weights.
        let model = load(tag);
        assert_eq!(model.dtype(), DType::F32);
        let d = max_diff(
            &model.logits(ids).unwrap(),
            &f[&format!("logits_{tag}_weights")],
        );
        eprintln!("{tag} weights in f32: max abs difference {d:e}");
        assert!(d <= 1e-5, "{tag} weights in f32: {d}");
        // Run in the stored dtype: transformers running in that dtype, within its rounding.
        let half =
            LlamaForCausalLM::from_pretrained_as(fixture_path("llama").join(tag), dtype).unwrap();
        assert_eq!(half.dtype(), dtype);
        let logits = half.logits(ids).unwrap();
        assert_eq!(logits.dtype(), dtype);
        let d = max_diff(&logits, &f[&format!("logits_{tag}")]);
        eprintln!("{tag} natively: max abs difference {d:e}");
        assert!(d <= native_tol, "{tag} natively: {d}");
        // And about as far from the f32 result as transformers' own run in that dtype.
        let f32_logits = &f[&format!("logits_{tag}_weights")];
        let (ours, theirs) = (
            max_diff(&logits, f32_logits),
            max_diff(&f[&format!("logits_{tag}")], f32_logits),
        );
        eprintln!("{tag} natively vs f32: ours {ours:e}, transformers' {theirs:e}");
        assert!(
            ours <= 1.5 * theirs,
            "{tag}: {ours} vs transformers' {theirs}"
        );
    }
    // An f32 file loads into f16 too.
    let m = LlamaForCausalLM::from_pretrained_as(fixture_path("llama").join("f32"), DType::F16)
        .unwrap();
    assert!(m.parameters().iter().all(|p| p.dtype() == DType::F16));
}

#[test]
fn loss_and_every_gradient_match_pytorch() {
    let f = reference();
    let mut model = load("f32");
    model.train();
    let (loss, _) = model.loss(&f["input_ids"], &f["targets"]).unwrap();
    assert_close(&loss, &f["loss"], Tol::abs(2e-6), "loss");
    loss.backward().unwrap();
    let mut worst = 0.0f64;
    for (name, p) in model.named_parameters() {
        let want = &f[&format!("grad.{name}")];
        let got = p.grad().unwrap_or_else(|| panic!("{name} has no gradient"));
        let scale = largest_abs(want);
        let d = max_diff(&got, want);
        worst = worst.max(d / scale.max(1e-3));
        assert!(
            d <= 1e-5 + 1e-4 * scale,
            "grad {name}: {d} (largest {scale})"
        );
    }
    eprintln!("gradients: worst max difference relative to the largest entry {worst:e}");
}

#[test]
fn options_model_matches_transformers() {
    // Tied embeddings, q/k/v/o and MLP biases, head_dim 8 != 24 / 4, one KV head, Llama 3.1
    // RoPE scaling with rope_theta 500000, pad token 0.
    let f = reference();
    let mut model = load("options");
    let c = model.config();
    assert!(c.tie_word_embeddings && c.attention_bias && c.mlp_bias);
    assert_eq!((c.head_dim(), c.kv_heads()), (8, 1));
    assert!(matches!(
        c.rope().unwrap().scaling,
        RopeScaling::Llama3 { .. }
    ));
    model.train();
    let ids = &f["options.input_ids"];
    let (loss, logits) = model.loss(ids, &f["options.targets"]).unwrap();
    let scale = 1e-5 * 8.0; // logits here are about 8 times larger than the main model's
    assert_close(
        &logits,
        &f["options.logits"],
        Tol::abs(scale),
        "options logits",
    );
    assert_close(&loss, &f["options.loss"], Tol::abs(1e-5), "options loss");
    loss.backward().unwrap();
    let params: HashMap<String, Tensor> = model.named_parameters().into_iter().collect();
    let mut checked = 0;
    for (key, want) in &f {
        if let Some(name) = key.strip_prefix("options.grad.") {
            let got = params[name].grad().unwrap();
            let scale = largest_abs(want);
            assert_close(&got, want, Tol::abs(1e-5 + 1e-4 * scale), key);
            checked += 1;
        }
    }
    assert_eq!(checked, 5);
}

#[test]
fn rope_inverse_frequencies_match_transformers() {
    let f = reference();
    let base = r#""vocab_size": 8, "hidden_size": 32, "intermediate_size": 8,
        "num_hidden_layers": 1, "num_attention_heads": 4, "max_position_embeddings": 128"#;
    let cases = [
        (
            "default",
            r#""rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}"#,
        ),
        (
            "linear",
            r#""rope_parameters": {"rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0}"#,
        ),
        (
            "llama3",
            r#""rope_parameters": {"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0,
                "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": 64}"#,
        ),
        // The same in the older layout: rope_theta at the top, rope_scaling with "type".
        (
            "llama3",
            r#""rope_theta": 10000.0, "rope_scaling": {"type": "llama3", "factor": 8.0,
                "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": 64}"#,
        ),
        ("default", r#""rope_theta": 10000.0, "rope_scaling": null"#),
        ("default", r#""rope_scaling": null"#),
    ];
    for (tag, rope) in cases {
        let config = LlamaConfig::from_json(&format!("{{{base}, {rope}}}")).unwrap();
        let got = config.rope().unwrap().inv_freq(config.head_dim());
        let want = f[&format!("rope.{tag}.inv_freq")].to_vec::<f32>().unwrap();
        assert_eq!(got, want, "{tag}: {rope}");
    }
}

/// `repeat_kv` spelled out: key/value head j serves query heads j*G .. (j+1)*G.
fn repeat_kv(t: &Tensor, groups: usize) -> Tensor {
    let idx: Vec<i64> = (0..t.shape()[1] * groups)
        .map(|h| (h / groups) as i64)
        .collect();
    let n = idx.len();
    t.index_select(1, &Tensor::from_vec(idx, &[n]).unwrap())
        .unwrap()
}

/// Random query, key and value of grouped-query attention in `dtype`, drawn in that order:
/// a batch of 2, `heads` query heads over 2 key/value heads, `queries` queries of width 4,
/// `keys` keys of width 4 and values of width 3.
fn random_qkv(dtype: DType, heads: usize, queries: usize, keys: usize) -> [Tensor; 3] {
    [
        randn(&[2, heads, queries, 4], dtype),
        randn(&[2, 2, keys, 4], dtype),
        randn(&[2, 2, keys, 3], dtype),
    ]
}

#[test]
fn grouped_query_attention_equals_repeated_heads() {
    let _rng = seeded(3);
    let [q, k, v] = random_qkv(DType::F32, 6, 5, 7);
    let w = randn(&[2, 6, 5, 3], DType::F32);
    let bool_mask = Tensor::rand(&[2, 1, 5, 7], DType::F32, Device::Cpu)
        .unwrap()
        .lt_scalar(0.7)
        .unwrap();
    let head_mask = randn(&[2, 6, 5, 7], DType::F32);
    let masks = [None, Some(bool_mask), Some(head_mask)];
    for causal in [false, true] {
        for mask in masks.iter().filter(|m| !causal || m.is_none()) {
            let run = |gqa: bool| {
                let (q, k, v) = (
                    q.detach().requires_grad_(true).unwrap(),
                    k.detach().requires_grad_(true).unwrap(),
                    v.detach().requires_grad_(true).unwrap(),
                );
                let y = if gqa {
                    grouped_query_attention(&q, &k, &v, mask.as_ref(), 0.0, causal).unwrap()
                } else {
                    let (kr, vr) = (repeat_kv(&k, 3), repeat_kv(&v, 3));
                    q.scaled_dot_product_attention(&kr, &vr, mask.as_ref(), 0.0, causal, None)
                        .unwrap()
                };
                y.mul(&w).unwrap().sum_all().unwrap().backward().unwrap();
                [y, q.grad().unwrap(), k.grad().unwrap(), v.grad().unwrap()]
            };
            let (a, b) = (run(true), run(false));
            for (what, x, y) in ["out", "dq", "dk", "dv"]
                .iter()
                .zip(&a)
                .zip(&b)
                .map(|((w, x), y)| (w, x, y))
            {
                assert_close(
                    x,
                    y,
                    Tol::abs(1e-5),
                    &format!("{what} causal={causal} mask={}", mask.is_some()),
                );
            }
        }
    }
    let q3 = randn(&[1, 3, 2, 4], DType::F32);
    let k2 = randn(&[1, 2, 2, 4], DType::F32);
    assert!(err_of(grouped_query_attention(&q3, &k2, &k2, None, 0.0, true)).contains("multiple"));
}

#[test]
fn grouped_query_attention_gradcheck_f64() {
    let _rng = seeded(4);
    let [q, k, v] = random_qkv(DType::F64, 4, 3, 5);
    let head_mask = randn(&[2, 4, 3, 5], DType::F64);
    let bool_mask = Tensor::ones(&[3, 5], DType::Bool, Device::Cpu)
        .unwrap()
        .tril(2)
        .unwrap();
    // Causal (broadcast groups), no mask (stacked groups), per-head and shared masks.
    let cases = [
        ("causal", None, true),
        ("no mask", None, false),
        ("per-head mask", Some(&head_mask), false),
        ("bool mask", Some(&bool_mask), false),
    ];
    for (what, mask, causal) in cases {
        let worst = gradcheck(
            |x| grouped_query_attention(&x[0], &x[1], &x[2], mask, 0.0, causal),
            &[q.clone(), k.clone(), v.clone()],
            1e-6,
            1e-7,
            1e-5,
        )
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(worst < 1e-7, "{what}: {worst}");
    }
}

fn tiny_config() -> LlamaConfig {
    let mut c = LlamaConfig::new(16, 8, 12, 2, 4, 2);
    c.max_position_embeddings = 16;
    c.initializer_range = 0.5;
    c
}

#[test]
fn whole_model_gradcheck_f64() {
    let _rng = seeded(5);
    let mut c = tiny_config();
    c.attention_bias = true;
    c.tie_word_embeddings = true;
    let model = LlamaForCausalLM::new(c, DType::F64).unwrap();
    assert!(model.parameters().iter().all(|p| p.dtype() == DType::F64));
    let embeds = randn(&[2, 3, 8], DType::F64);
    gradcheck(
        |x| model.logits_from_embeds(&x[0]),
        &[embeds],
        1e-6,
        1e-6,
        1e-5,
    )
    .unwrap();
}

#[test]
fn fresh_models_follow_transformers_init() {
    let _rng = seeded(6);
    let mut c = tiny_config();
    c.pad_token_id = Some(3);
    c.mlp_bias = true;
    c.initializer_range = 0.02;
    let model = LlamaForCausalLM::new(c, DType::F32).unwrap();
    let p: HashMap<String, Tensor> = model.named_parameters().into_iter().collect();
    let emb = p["model.embed_tokens.weight"].to_vec::<f32>().unwrap();
    assert!(
        emb[3 * 8..4 * 8].iter().all(|&x| x == 0.0),
        "padding row is zero"
    );
    let std = p["model.layers.0.mlp.up_proj.weight"]
        .std(&[], 0.0, false)
        .unwrap();
    assert!((std.item::<f32>().unwrap() - 0.02).abs() < 0.005);
    assert!(p["model.norm.weight"]
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .all(|&x| x == 1.0));
    assert!(p["model.layers.1.mlp.down_proj.bias"]
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .all(|&x| x == 0.0));
    // The padding row gets no gradient, as with nn.Embedding(padding_idx).
    let ids = Tensor::from_vec(vec![3i64, 1, 3, 2], &[1, 4]).unwrap();
    model
        .logits(&ids)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    let g = p["model.embed_tokens.weight"]
        .grad()
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert!(g[3 * 8..4 * 8].iter().all(|&x| x == 0.0));
    assert!(g[8..16].iter().any(|&x| x != 0.0));
}

#[test]
fn cached_decoding_equals_full_forward() {
    let f = reference();
    let model = load("f32");
    let ids = &f["input_ids"];
    let full = model.logits(ids).unwrap();
    let _guard = tinytorch::autograd::no_grad();
    let mut cache = model.new_cache(2, 12).unwrap();
    // A prompt of 5, one token, a chunk of 3, then one at a time.
    let parts: Vec<Tensor> = [(0, 5), (5, 1), (6, 3), (9, 1), (10, 1), (11, 1)]
        .into_iter()
        .map(|(start, len)| {
            let chunk = ids.narrow(1, start, len).unwrap();
            let logits = model.logits_cached(&chunk, &mut cache).unwrap();
            assert_eq!(cache.len(), start as usize + len);
            logits
        })
        .collect();
    let refs: Vec<&Tensor> = parts.iter().collect();
    let cached = Tensor::cat(&refs, 1).unwrap();
    assert_close(&cached, &full, Tol::abs(1e-5), "cached logits");
    // Full: positions beyond the capacity are an error, and nothing is appended.
    let one = ids.narrow(1, 0, 1).unwrap();
    assert!(err_of(model.logits_cached(&one, &mut cache)).contains("capacity"));
    assert_eq!(cache.len(), 12);
    cache.clear();
    let again = model
        .logits_cached(&ids.narrow(1, 0, 4).unwrap(), &mut cache)
        .unwrap();
    assert_close(
        &again,
        &full.narrow(1, 0, 4).unwrap(),
        Tol::abs(1e-5),
        "after clear",
    );
    // The same in the options model (MQA, tied head, biases).
    let opt = load("options");
    let ids = &f["options.input_ids"];
    let full = opt.logits(ids).unwrap();
    let mut cache = opt.new_cache(2, 10).unwrap();
    let a = opt
        .logits_cached(&ids.narrow(1, 0, 7).unwrap(), &mut cache)
        .unwrap();
    let b = opt
        .logits_cached(&ids.narrow(1, 7, 3).unwrap(), &mut cache)
        .unwrap();
    assert_close(
        &Tensor::cat(&[&a, &b], 1).unwrap(),
        &full,
        Tol::abs(1e-4),
        "options cached",
    );
}

#[test]
fn greedy_generation_matches_transformers_generate() {
    let f = reference();
    let model = load("f32");
    let tokens = |key: &str| -> Vec<usize> {
        let ids = f[key].to_vec::<i64>().unwrap();
        ids.into_iter().map(|t| t as usize).collect()
    };
    let (prompt, want) = (tokens("generate.prompt"), tokens("generate.tokens"));
    let greedy = Sampling {
        temperature: 0.0,
        ..Default::default()
    };
    assert_eq!(model.generate(&prompt, 8, &greedy).unwrap(), want);
    // Sampling is reproducible under a seed.
    let s = Sampling {
        temperature: 0.8,
        top_k: Some(20),
        top_p: Some(0.95),
    };
    let rng = seeded(7);
    let a = model.generate(&prompt, 6, &s).unwrap();
    manual_seed(7);
    assert_eq!(model.generate(&prompt, 6, &s).unwrap(), a);
    drop(rng);
    assert!(err_of(model.generate(&[], 3, &greedy)).contains("at least one token"));
    assert!(err_of(model.generate(&prompt, 60, &greedy)).contains("max_position_embeddings"));
}

#[test]
fn bad_inputs_are_clear_errors() {
    let model = load("f32");
    let floats = Tensor::zeros(&[1, 3], DType::F32, Device::Cpu).unwrap();
    assert!(err_of(model.logits(&floats)).contains("int64"));
    let one_d = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
    assert!(err_of(model.logits(&one_d)).contains("(batch, seq)"));
    let too_long = Tensor::zeros(&[1, 65], DType::I64, Device::Cpu).unwrap();
    assert!(err_of(model.logits(&too_long)).contains("exceed the 64 positions"));
    let out_of_vocab = Tensor::from_vec(vec![96i64], &[1, 1]).unwrap();
    assert!(err_of(model.logits(&out_of_vocab)).contains("out of range"));
    let ids = Tensor::from_vec(vec![1i64, 2], &[1, 2]).unwrap();
    let mut cache = model.new_cache(2, 8).unwrap();
    assert!(err_of(model.logits_cached(&ids, &mut cache)).contains("batch"));
    assert!(err_of(model.new_cache(1, 65)).contains("max_position_embeddings"));
    let bad_embeds = Tensor::zeros(&[1, 2, 5], DType::F32, Device::Cpu).unwrap();
    assert!(err_of(model.logits_from_embeds(&bad_embeds)).contains("inputs_embeds"));
}

#[test]
fn loading_errors_name_the_file_and_the_key() {
    let missing = temp_dir("missing");
    let e = err_of(LlamaForCausalLM::from_pretrained(missing.join("nothing")));
    assert!(e.contains("config.json"), "{e}");
    let e = err_of(read_state_dict(missing.join("nothing")));
    assert!(e.contains("not a model directory"), "{e}");

    // A config without weights.
    let dir = dir_with_f32_config("no-weights");
    let e = err_of(LlamaForCausalLM::from_pretrained(&dir));
    assert!(
        e.contains("neither model.safetensors nor model.safetensors.index.json"),
        "{e}"
    );

    // A shard gone.
    let dir = copy_fixture("sharded", "lost-shard");
    std::fs::remove_file(dir.join("model-00002-of-00003.safetensors")).unwrap();
    let e = err_of(LlamaForCausalLM::from_pretrained(&dir));
    assert!(e.contains("model-00002-of-00003.safetensors"), "{e}");

    // An index that points at the wrong shard.
    let dir = copy_fixture("sharded", "wrong-shard");
    let index = dir.join("model.safetensors.index.json");
    let text = std::fs::read_to_string(&index).unwrap().replace(
        r#""model.norm.weight": "model-00003-of-00003.safetensors""#,
        r#""model.norm.weight": "model-00001-of-00003.safetensors""#,
    );
    std::fs::write(&index, text).unwrap();
    let e = err_of(LlamaForCausalLM::from_pretrained(&dir));
    assert!(e.contains("no tensor 'model.norm.weight'"), "{e}");
    std::fs::write(
        &index,
        r#"{"weight_map": {"a": "../f32/model.safetensors"}}"#,
    )
    .unwrap();
    assert!(err_of(read_state_dict(&dir)).contains("not a file inside the directory"));
    std::fs::write(&index, "{").unwrap();
    assert!(err_of(read_state_dict(&dir)).contains("model.safetensors.index.json"));

    // Edited single-file checkpoints: a key missing, mis-shaped, extra, or an integer tensor.
    let state = load_safetensors(fixture_path("llama").join("f32/model.safetensors")).unwrap();
    let edit = |name: &str, f: &dyn Fn(&mut BTreeMap<String, Tensor>)| {
        let dir = dir_with_f32_config(name);
        let mut s = state.clone();
        f(&mut s);
        save_safetensors(dir.join("model.safetensors"), &s).unwrap();
        LlamaForCausalLM::from_pretrained(&dir)
    };
    // The checkpoint with zeros of `shape` and `dtype` under `key`.
    let with_zeros = |name: &str, key: &str, shape: &[usize], dtype: DType| {
        let t = Tensor::zeros(shape, dtype, Device::Cpu).unwrap();
        edit(name, &|s| {
            s.insert(key.to_string(), t.clone());
        })
    };
    let key = "model.layers.1.self_attn.k_proj.weight";
    let e = err_of(edit("missing-key", &|s| {
        s.remove(key);
    }));
    assert!(
        e.contains(&format!("no tensor '{key}'")) && e.contains("[16, 32]"),
        "{e}"
    );
    let e = err_of(with_zeros("bad-shape", key, &[32, 32], DType::F32));
    assert!(
        e.contains(key) && e.contains("[32, 32]") && e.contains("[16, 32]"),
        "{e}"
    );
    let extra = "model.layers.2.mlp.up_proj.weight";
    let e = err_of(with_zeros("extra-key", extra, &[2], DType::F32));
    assert!(
        e.contains("not part of a Llama model") && e.contains("model.layers.2"),
        "{e}"
    );
    let e = err_of(with_zeros(
        "int-tensor",
        "model.norm.weight",
        &[32],
        DType::I64,
    ));
    assert!(
        e.contains("model.norm.weight") && e.contains("float"),
        "{e}"
    );
    // Old checkpoints' per-layer rotary buffers are accepted and ignored.
    let inv_freq = "model.layers.0.self_attn.rotary_emb.inv_freq";
    with_zeros("inv-freq", inv_freq, &[4], DType::F32).unwrap();

    // A corrupt file.
    let dir = dir_with_f32_config("corrupt");
    std::fs::write(dir.join("model.safetensors"), b"not a safetensors file").unwrap();
    let e = err_of(LlamaForCausalLM::from_pretrained(&dir));
    assert!(e.contains("model.safetensors"), "{e}");
}

#[test]
fn unsupported_configs_are_refused() {
    let base = r#""vocab_size": 8, "hidden_size": 16, "intermediate_size": 8,
        "num_hidden_layers": 1, "num_attention_heads": 4"#;
    let refused = [
        (
            r#""rope_parameters": {"rope_type": "yarn", "factor": 4.0}"#,
            "RoPE type 'yarn' is not supported",
        ),
        (
            r#""rope_scaling": {"type": "dynamic", "factor": 2.0}"#,
            "RoPE type 'dynamic'",
        ),
        (
            r#""rope_parameters": {"rope_type": "linear"}"#,
            "needs the number 'factor'",
        ),
        (
            r#""rope_parameters": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 1.0}"#,
            "must exceed low_freq_factor",
        ),
        (
            r#""rope_parameters": {"rope_type": "default", "partial_rotary_factor": 0.5}"#,
            "partial_rotary_factor",
        ),
        (
            r#""rope_parameters": {"full_attention": {"rope_type": "default"}}"#,
            "per-layer-type",
        ),
        (r#""rope_scaling": 3"#, "must be an object"),
        (r#""hidden_act": "gelu""#, "hidden_act 'gelu'"),
        (r#""model_type": "gemma""#, "model_type 'gemma'"),
        (
            r#""num_key_value_heads": 3"#,
            "not a multiple of num_key_value_heads 3",
        ),
        (r#""head_dim": 5"#, "even"),
        (r#""rms_norm_eps": 0.0"#, "rms_norm_eps"),
        (r#""pad_token_id": 8"#, "pad_token_id 8"),
    ];
    for (field, want) in refused {
        let e = err_of(LlamaConfig::from_json(&format!("{{{base}, {field}}}")));
        assert!(e.contains(want), "{field}: {e}");
    }
    assert!(err_of(LlamaConfig::from_json(r#"{"vocab_size": 8}"#)).contains("hidden_size"));
    let dir = temp_dir("bad-config");
    std::fs::write(
        dir.join("config.json"),
        format!("{{{base}, \"hidden_act\": \"relu\"}}"),
    )
    .unwrap();
    let e = err_of(LlamaForCausalLM::from_pretrained(&dir));
    assert!(e.contains("config.json") && e.contains("relu"), "{e}");
    // Accepted: head_dim not hidden/heads, negative pad id counted from the end.
    let c = LlamaConfig::from_json(&format!(
        "{{{base}, \"head_dim\": 6, \"pad_token_id\": -1}}"
    ))
    .unwrap();
    assert_eq!((c.head_dim(), c.padding_idx()), (6, Some(7)));
    assert!(matches!(c.rope().unwrap().scaling, RopeScaling::None));
    let model = LlamaForCausalLM::new(c, DType::F32).unwrap();
    let names: HashMap<String, Tensor> = model.named_parameters().into_iter().collect();
    assert_eq!(
        names["model.layers.0.self_attn.q_proj.weight"].shape(),
        &[24, 16]
    );
    assert_eq!(
        names["model.layers.0.self_attn.o_proj.weight"].shape(),
        &[16, 24]
    );
}

#[test]
fn state_dicts_round_trip_through_module_loading() {
    let a = load("f32");
    let _rng = seeded(8);
    let config = a.config().clone();
    let b = LlamaForCausalLM::new(config, DType::F32).unwrap();
    let ids = &reference()["input_ids"];
    assert!(max_diff(&a.logits(ids).unwrap(), &b.logits(ids).unwrap()) > 0.1);
    let state: HashMap<String, Tensor> = a.state_dict().into_iter().collect();
    b.load_state_dict(&state, true).unwrap();
    assert_eq!(
        max_diff(&a.logits(ids).unwrap(), &b.logits(ids).unwrap()),
        0.0
    );
    let read = read_state_dict(fixture_path("llama").join("sharded")).unwrap();
    let c =
        LlamaForCausalLM::from_state_dict(a.config().clone(), read, DType::F32, "shards").unwrap();
    assert_eq!(
        max_diff(&a.logits(ids).unwrap(), &c.logits(ids).unwrap()),
        0.0
    );
}
