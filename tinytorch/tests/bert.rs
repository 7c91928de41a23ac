//! The BERT encoder, the tokenizer wrapper and the sentence-embedding pipeline on a tiny
//! model (fixtures/tiny_bert: a 16-token WordPiece vocabulary, 2 layers of width 8, the
//! sentence-transformers config files; random weights written at test time), so that they
//! run without the real model: Hugging Face's parameter names, padding that changes nothing,
//! loading and its errors, truncation, pooling, normalisation. The real model against
//! PyTorch is tests/minilm.rs.

mod common;
use common::{fixture_path, max_diff};

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use tinytorch::io::{load_safetensors, save_safetensors};
use tinytorch::models::bert::{
    l2_normalize, mean_pooling, BertConfig, BertEmbeddings, BertLayer, BertModel, Init,
    SentenceConfig, SentenceEncoder,
};
use tinytorch::nn::Module;
use tinytorch::text::hf_tokenizer::HfTokenizer;
use tinytorch::{DType, Device, Tensor};

/// The tiny model's directory.
fn fixture() -> PathBuf {
    fixture_path("tiny_bert")
}

fn tiny_config() -> BertConfig {
    BertConfig::from_file(fixture().join("config.json")).unwrap()
}

/// A random model with weights large enough that every part matters.
fn tiny_model() -> BertModel {
    tinytorch::manual_seed(7);
    BertModel::new(tiny_config(), Init::Normal { std: 0.5 }).unwrap()
}

/// A copy of the fixture directory with `model`'s weights plus the keys real checkpoints
/// carry and the encoder ignores (pooler, position_ids).
fn model_dir(name: &str, model: &BertModel) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tinytorch-bert-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("1_Pooling")).unwrap();
    for f in [
        "config.json",
        "tokenizer.json",
        "modules.json",
        "sentence_bert_config.json",
        "1_Pooling/config.json",
    ] {
        std::fs::copy(fixture().join(f), dir.join(f)).unwrap();
    }
    let mut state = model.state_dict();
    let h = model.config().hidden_size;
    state.insert(
        "pooler.dense.weight".into(),
        Tensor::zeros(&[h, h], DType::F32, Device::Cpu).unwrap(),
    );
    state.insert(
        "embeddings.position_ids".into(),
        Tensor::arange(0.0, 16.0, 1.0, DType::I64, Device::Cpu)
            .unwrap()
            .reshape(&[1, 16])
            .unwrap(),
    );
    save_safetensors(dir.join("model.safetensors"), &state).unwrap();
    dir
}

fn ids(rows: &[&[i64]]) -> Tensor {
    let t = rows[0].len();
    let flat: Vec<i64> = rows.iter().flat_map(|r| r.iter().copied()).collect();
    Tensor::from_vec(flat, &[rows.len(), t]).unwrap()
}

#[test]
fn parameter_names_are_hugging_faces() {
    let model = tiny_model();
    let names: Vec<String> = model
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    // 5 embedding tensors, then 16 per layer.
    assert_eq!(names.len(), 5 + 16 * 2);
    for key in [
        "embeddings.word_embeddings.weight",
        "embeddings.position_embeddings.weight",
        "embeddings.token_type_embeddings.weight",
        "embeddings.LayerNorm.weight",
        "encoder.layer.0.attention.self.query.weight",
        "encoder.layer.0.attention.self.key.bias",
        "encoder.layer.0.attention.self.value.weight",
        "encoder.layer.0.attention.output.dense.weight",
        "encoder.layer.0.attention.output.LayerNorm.bias",
        "encoder.layer.1.intermediate.dense.weight",
        "encoder.layer.1.output.dense.bias",
        "encoder.layer.1.output.LayerNorm.weight",
    ] {
        assert!(names.iter().any(|n| n == key), "missing {key}");
    }
    let shapes: HashMap<String, Vec<usize>> = model
        .named_parameters()
        .into_iter()
        .map(|(n, t)| (n, t.shape().to_vec()))
        .collect();
    assert_eq!(shapes["embeddings.word_embeddings.weight"], vec![16, 8]);
    assert_eq!(
        shapes["encoder.layer.0.intermediate.dense.weight"],
        vec![16, 8]
    );
    assert_eq!(shapes["encoder.layer.0.output.dense.weight"], vec![8, 16]);
}

#[test]
fn padding_changes_nothing_for_the_real_tokens() {
    let model = tiny_model();
    let alone = model.forward(&ids(&[&[2, 4, 5, 3]])).unwrap(); // (1, 4, 8)
    let batch = ids(&[&[2, 4, 5, 3, 0, 0], &[2, 4, 5, 6, 7, 3]]);
    let mask = ids(&[&[1, 1, 1, 1, 0, 0], &[1, 1, 1, 1, 1, 1]]);
    let padded = model.forward_with_mask(&batch, None, Some(&mask)).unwrap();
    let first = padded.narrow(0, 0, 1).unwrap().narrow(1, 0, 4).unwrap();
    assert!(max_diff(&first, &alone) < 1e-5);
    let pooled_alone = mean_pooling(&alone, &ids(&[&[1, 1, 1, 1]])).unwrap();
    let pooled = mean_pooling(&padded, &mask)
        .unwrap()
        .narrow(0, 0, 1)
        .unwrap();
    assert!(max_diff(&pooled, &pooled_alone) < 1e-5);
    // Without the mask the padding is attended and the output changes.
    let unmasked = model.forward(&batch).unwrap();
    let first = unmasked.narrow(0, 0, 1).unwrap().narrow(1, 0, 4).unwrap();
    assert!(max_diff(&first, &alone) > 1e-3);
}

#[test]
fn token_types_and_positions_matter() {
    let model = tiny_model();
    let x = ids(&[&[2, 4, 5, 3]]);
    let zeros = model.forward(&x).unwrap();
    let ones = model
        .forward_with_mask(&x, Some(&ids(&[&[1, 1, 1, 1]])), None)
        .unwrap();
    assert!(max_diff(&zeros, &ones) > 1e-3);
    // Same tokens in another order: different states, as positions are embedded.
    let swapped = model.forward(&ids(&[&[2, 5, 4, 3]])).unwrap();
    assert!(max_diff(&zeros, &swapped) > 1e-3);
}

#[test]
fn weights_load_from_safetensors_with_hugging_faces_extra_keys() {
    let model = tiny_model();
    let dir = model_dir("load", &model);
    let loaded = BertModel::from_pretrained(&dir).unwrap();
    let x = ids(&[&[2, 4, 5, 6, 3]]);
    assert_eq!(
        max_diff(&model.forward(&x).unwrap(), &loaded.forward(&x).unwrap()),
        0.0
    );

    // A key the encoder does not know, or a missing one, means another model: an error.
    let mut state: BTreeMap<String, Tensor> =
        load_safetensors(dir.join("model.safetensors")).unwrap();
    state.insert(
        "encoder.layer.2.output.dense.bias".into(),
        Tensor::from_slice(&[0f32; 8]),
    );
    let extra = dir.join("extra.safetensors");
    save_safetensors(&extra, &state).unwrap();
    let err = BertModel::from_safetensors(tiny_config(), &extra)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("encoder.layer.2.output.dense.bias"), "{err}");
    state.remove("encoder.layer.2.output.dense.bias");
    state.remove("encoder.layer.1.output.LayerNorm.weight");
    save_safetensors(&extra, &state).unwrap();
    let err = BertModel::from_safetensors(tiny_config(), &extra)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("encoder.layer.1.output.LayerNorm.weight"),
        "{err}"
    );
    assert!(err.contains("extra.safetensors"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_inputs_and_configs_are_clear_errors() {
    let model = tiny_model();
    let long: Vec<i64> = vec![4; 17];
    let err = model.forward(&ids(&[&long])).err().unwrap().to_string();
    assert!(
        err.contains("17 tokens") && err.contains("16 positions"),
        "{err}"
    );
    let err = model
        .forward(&ids(&[&[2, 99, 3]]))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("99"), "{err}");
    let err = model
        .forward_with_mask(&ids(&[&[2, 4, 3]]), None, Some(&ids(&[&[1, 1]])))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("attention_mask"), "{err}");
    let floats = Tensor::from_vec(vec![2f32, 4.0, 3.0], &[1, 3]).unwrap();
    assert!(model.forward(&floats).is_err());
    assert!(model.forward(&Tensor::from_slice(&[2i64, 3])).is_err());

    // The blocks check their own inputs too.
    let layer = BertLayer::new(&tiny_config(), Init::Zeros).unwrap();
    let err = layer
        .forward(
            &Tensor::zeros(&[2, 8], DType::F32, Device::Cpu).unwrap(),
            None,
        )
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("(batch, seq, 8)"), "{err}");
    let emb = BertEmbeddings::new(&tiny_config(), Init::Zeros).unwrap();
    let err = emb
        .forward(&ids(&[&[2, 3]]), &ids(&[&[0, 0, 0]]))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("token_type_ids"), "{err}");

    let text = std::fs::read_to_string(fixture().join("config.json")).unwrap();
    let err = BertConfig::from_json(
        &text.replace("\"num_attention_heads\": 2", "\"num_attention_heads\": 3"),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        err.contains("not a multiple of num_attention_heads 3"),
        "{err}"
    );
    let err = BertConfig::from_json(&text.replace("\"hidden_size\"", "\"hidden\""))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("hidden_size"), "{err}");
    let err = BertConfig::from_json(&text.replace("\"gelu\"", "\"relu\""))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("relu"), "{err}");

    let err = SentenceEncoder::from_dir("/nonexistent/minilm")
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("'/nonexistent/minilm' does not exist"),
        "{err}"
    );
    let err = BertModel::from_pretrained(std::env::temp_dir())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("config.json"), "{err}");
}

#[test]
fn tokenizer_pads_to_the_longest_and_truncates() {
    let tok = HfTokenizer::from_file(fixture().join("tokenizer.json")).unwrap();
    // The file's own truncation (5) and fixed padding (12) are replaced.
    assert_eq!(tok.max_length(), None);
    assert_eq!(tok.special_tokens(), 2);
    assert_eq!(
        tok.encode("The cats sat on the mat.").unwrap(),
        vec![2, 4, 5, 9, 6, 7, 4, 8, 10, 3]
    );
    // Lowercased, accents stripped (so "cafe" is unknown), CJK split per character.
    assert_eq!(
        tok.encode("A DOG café 東京").unwrap(),
        vec![2, 11, 12, 1, 14, 15, 3]
    );
    assert_eq!(tok.encode("").unwrap(), vec![2, 3]);

    let batch = tok.encode_batch(&["the cat", "", "a dog sat"]).unwrap();
    assert_eq!(batch.input_ids.shape(), &[3, 5]);
    assert_eq!(
        batch.input_ids.to_vec::<i64>().unwrap(),
        vec![2, 4, 5, 3, 0, 2, 3, 0, 0, 0, 2, 11, 12, 6, 3]
    );
    assert_eq!(
        batch.attention_mask.to_vec::<i64>().unwrap(),
        vec![1, 1, 1, 1, 0, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1]
    );
    assert_eq!(batch.token_type_ids.to_vec::<i64>().unwrap(), vec![0; 15]);
    assert_eq!(batch.lengths, vec![4, 2, 5]);

    let tok = tok.with_max_length(4).unwrap();
    assert_eq!(tok.encode("the cat sat on").unwrap(), vec![2, 4, 5, 3]);
    let err = tok.with_max_length(2).err().unwrap().to_string();
    assert!(err.contains("max_length 2"), "{err}");
    let tok = HfTokenizer::from_file(fixture().join("tokenizer.json")).unwrap();
    assert!(tok.encode_batch(&[]).is_err());
    let err = HfTokenizer::from_file(fixture().join("config.json"))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("config.json"), "{err}");
}

#[test]
fn mean_pooling_and_normalisation() {
    // Two sequences of three 2-d states; the second has one padded position.
    let hidden = Tensor::from_vec(
        vec![1f32, 2., 3., 4., 5., 6., 1., 1., 3., 3., 100., 100.],
        &[2, 3, 2],
    )
    .unwrap();
    let mask = ids(&[&[1, 1, 1], &[1, 1, 0]]);
    let pooled = mean_pooling(&hidden, &mask).unwrap();
    assert_eq!(pooled.to_vec::<f32>().unwrap(), vec![3., 4., 2., 2.]);
    let unit = l2_normalize(&pooled, 1).unwrap().to_vec::<f32>().unwrap();
    let expect = [0.6, 0.8, 0.5f32.sqrt(), 0.5f32.sqrt()];
    assert!(unit.iter().zip(expect).all(|(a, b)| (a - b).abs() < 1e-6));
    // No tokens at all: zeros, not NaN.
    let none = mean_pooling(&hidden, &ids(&[&[0, 0, 0], &[0, 0, 0]])).unwrap();
    assert_eq!(none.to_vec::<f32>().unwrap(), vec![0.0; 4]);
    let zero = Tensor::zeros(&[1, 3], DType::F32, Device::Cpu).unwrap();
    assert_eq!(
        l2_normalize(&zero, 1).unwrap().to_vec::<f32>().unwrap(),
        vec![0.0; 3]
    );
    assert!(mean_pooling(&hidden, &ids(&[&[1, 1], &[1, 1]])).is_err());
}

#[test]
fn sentence_encoder_embeds_in_input_order() {
    let model = tiny_model();
    let dir = model_dir("encoder", &model);
    let encoder = SentenceEncoder::from_dir(&dir).unwrap();
    assert_eq!(encoder.dim(), 8);
    assert!(encoder.normalizes());
    // sentence_bert_config.json says 8.
    assert_eq!(encoder.tokenizer().max_length(), Some(8));
    let texts = [
        "the cat",
        "a dog sat on the mat.",
        "",
        "the cats sat on the mat and the dog sat on the cat",
        "!!!",
    ];
    let batched = encoder.encode(&texts, 2).unwrap();
    assert_eq!(batched.len(), texts.len());
    for (text, got) in texts.iter().zip(&batched) {
        let alone = encoder.encode(&[text], 1).unwrap().remove(0);
        let diff = got
            .iter()
            .zip(&alone)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
        assert!(diff < 1e-5, "{text:?}: {diff}");
        let norm: f32 = got.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{text:?}: norm {norm}");
    }
    // Truncation to 8 tokens: what follows the 6th word does not matter.
    let long = encoder
        .encode(&["the cats sat on the mat and more words"], 4)
        .unwrap();
    let cut = encoder.encode(&["the cats sat on the mat"], 4).unwrap();
    assert_eq!(long, cut);
    assert!(encoder.encode(&texts, 0).is_err());
    assert!(encoder.encode::<&str>(&[], 4).unwrap().is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sentence_configs_other_than_mean_pooling_are_refused() {
    let model = tiny_model();
    let dir = model_dir("configs", &model);
    let st = SentenceConfig::from_dir(&dir).unwrap();
    assert_eq!(st.max_seq_length, Some(8));
    assert!(st.normalize);
    assert_eq!(st.embedding_dim, Some(8));

    let pooling = dir.join("1_Pooling/config.json");
    let text = std::fs::read_to_string(&pooling).unwrap();
    std::fs::write(
        &pooling,
        text.replace(
            "\"pooling_mode_cls_token\": false",
            "\"pooling_mode_cls_token\": true",
        ),
    )
    .unwrap();
    let err = SentenceConfig::from_dir(&dir).err().unwrap().to_string();
    assert!(err.contains("pooling_mode_cls_token"), "{err}");
    std::fs::write(&pooling, text).unwrap();

    let modules = dir.join("modules.json");
    let text = std::fs::read_to_string(&modules).unwrap();
    std::fs::write(&modules, text.replace("models.Normalize", "models.Dense")).unwrap();
    let err = SentenceEncoder::from_dir(&dir).err().unwrap().to_string();
    assert!(err.contains("sentence_transformers.models.Dense"), "{err}");

    // No modules.json: a plain Hugging Face directory, mean pooling without normalisation.
    std::fs::remove_file(&modules).unwrap();
    let encoder = SentenceEncoder::from_dir(&dir).unwrap();
    assert!(!encoder.normalizes());
    std::fs::write(
        dir.join("sentence_bert_config.json"),
        "{\"max_seq_length\": 64}",
    )
    .unwrap();
    let err = SentenceEncoder::from_dir(&dir).err().unwrap().to_string();
    assert!(err.contains("max_seq_length 64"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
