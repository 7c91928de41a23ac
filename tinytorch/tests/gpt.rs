//! The GPT golden test (llm.c's test_gpt2 style) against PyTorch
//! (fixtures/gpt.safetensors from scripts/fixtures/gen_gpt_fixtures.py): logits, loss, the gradient of
//! every parameter, and the losses of 5 AdamW steps; plus the KV cache against the full
//! forward and sampling rules.

mod common;
use common::{assert_close, load_fixture, Tol, TINY_GPT as CONFIG};

use std::collections::{BTreeMap, HashMap};
use tinytorch::models::gpt::{sample_next, Gpt, Sampling};
use tinytorch::nn::Module;
use tinytorch::optim::{AdamOptions, AdamW, Optimizer};
use tinytorch::{manual_seed, Tensor};

fn model_from(f: &BTreeMap<String, Tensor>) -> Gpt {
    let model = Gpt::new(CONFIG).unwrap();
    let params: HashMap<String, Tensor> = f
        .iter()
        .filter_map(|(k, v)| k.strip_prefix("param.").map(|n| (n.to_string(), v.clone())))
        .collect();
    model.load_state_dict(&params, true).unwrap();
    model
}

#[test]
fn logits_loss_gradients_and_adamw_steps_match_pytorch() {
    let f = load_fixture("gpt.safetensors");
    let model = model_from(&f);
    let (idx, targets) = (&f["idx"], &f["targets"]);
    let (loss, logits) = model.loss(idx, targets).unwrap();
    assert_close(&logits, &f["logits"], Tol::abs(2e-5), "logits");
    assert_close(&loss, &f["loss"], Tol::abs(2e-6), "loss");
    loss.backward().unwrap();
    let mut checked = 0;
    for (name, p) in model.named_parameters() {
        assert_close(
            &p.grad().unwrap(),
            &f[&format!("grad.{name}")],
            Tol::abs(2e-5),
            &format!("grad {name}"),
        );
        checked += 1;
    }
    assert_eq!(checked, f.keys().filter(|k| k.starts_with("grad.")).count());

    let model = model_from(&f);
    let opts = AdamOptions {
        lr: 1e-2,
        betas: (0.9, 0.95),
        weight_decay: 0.1,
        ..Default::default()
    };
    let mut opt = AdamW::new(model.parameters(), opts).unwrap();
    let want = f["adamw_losses"].to_vec_f64().unwrap();
    for (step, w) in want.iter().enumerate() {
        opt.zero_grad();
        let (loss, _) = model.loss(idx, targets).unwrap();
        loss.backward().unwrap();
        opt.step().unwrap();
        let l = loss.item_f64().unwrap();
        assert!(
            (l - w).abs() < 1e-5,
            "AdamW step {step}: loss {l} vs PyTorch {w}"
        );
    }
}

#[test]
fn state_dict_has_nanogpt_keys_with_the_tied_head() {
    let model = Gpt::new(CONFIG).unwrap();
    let sd = model.state_dict();
    let f = load_fixture("gpt.safetensors");
    let want: Vec<&str> = f.keys().filter_map(|k| k.strip_prefix("param.")).collect();
    let got: Vec<&str> = sd.keys().map(String::as_str).collect();
    assert_eq!(got, want);
    // The head is the embedding: the optimizer sees it once.
    assert_eq!(model.parameters().len(), want.len() - 1);
}

#[test]
fn kv_cache_matches_the_full_forward() {
    manual_seed(0);
    let mut model = Gpt::new(CONFIG).unwrap();
    model.eval();
    let idx = Tensor::from_vec(vec![1i64, 5, 2, 9, 0, 3, 7], &[1, 7]).unwrap();
    let full = model.logits(&idx).unwrap();
    let mut cache = model.new_cache(1).unwrap();
    // A prompt of 3 tokens at once, then one token at a time.
    let mut parts = vec![model
        .logits_cached(&idx.narrow(1, 0, 3).unwrap(), &mut cache)
        .unwrap()];
    for t in 3..7 {
        parts.push(
            model
                .logits_cached(&idx.narrow(1, t, 1).unwrap(), &mut cache)
                .unwrap(),
        );
    }
    let cached = Tensor::cat(&parts.iter().collect::<Vec<_>>(), 1).unwrap();
    assert_close(&cached, &full, Tol::abs(1e-5), "cached logits");
    assert_eq!(cache.len(), 7);
    let one = Tensor::from_vec(vec![4i64, 4], &[1, 2]).unwrap();
    assert!(model
        .logits_cached(&one, &mut cache)
        .unwrap_err()
        .to_string()
        .contains("block_size"));
}

#[test]
fn sampling_follows_temperature_top_k_and_top_p() {
    let logits = Tensor::from_vec(vec![0.0f32, 3.0, 1.0, 2.9], &[4]).unwrap();
    let greedy = Sampling {
        temperature: 0.0,
        ..Default::default()
    };
    assert_eq!(sample_next(&logits, &greedy).unwrap(), 1);
    manual_seed(0);
    let top2 = Sampling {
        top_k: Some(2),
        ..Default::default()
    };
    let picks: Vec<usize> = (0..200)
        .map(|_| sample_next(&logits, &top2).unwrap())
        .collect();
    assert!(picks.iter().all(|&i| i == 1 || i == 3));
    assert!(picks.contains(&1) && picks.contains(&3));
    let nucleus = Sampling {
        top_p: Some(0.4), // token 1 alone has probability 0.48
        ..Default::default()
    };
    assert!((0..50).all(|_| sample_next(&logits, &nucleus).unwrap() == 1));
    let bad = Sampling {
        temperature: -1.0,
        ..Default::default()
    };
    assert!(sample_next(&logits, &bad).is_err());
}
