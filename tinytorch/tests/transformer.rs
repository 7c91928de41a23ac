//! MultiheadAttention and the Transformer encoder/decoder layers against PyTorch
//! (fixtures/transformer.safetensors from scripts/fixtures/gen_transformer_fixtures.py): outputs and
//! the gradients of every parameter and input, with PyTorch's state-dict names.

mod common;
use common::{assert_close, load_fixture, Tol};

/// Outputs and gradients against PyTorch's: `|got - want| <= 2e-5 + 2e-4 |want|`.
const TOL: Tol = Tol::new(2e-5, 2e-4);

use std::collections::{BTreeMap, HashMap};
use tinytorch::nn::{
    Activation, AttentionArgs, DecoderMasks, Module, MultiheadAttention, TransformerDecoderLayer,
    TransformerEncoderLayer, TransformerOptions,
};
use tinytorch::{DType, Tensor};

/// The tensors of `case` of `kind`, by name, floats as f32.
fn part(f: &BTreeMap<String, Tensor>, case: &str, kind: &str) -> HashMap<String, Tensor> {
    let prefix = format!("{case}.{kind}.");
    f.iter()
        .filter_map(|(k, v)| {
            let v = if v.dtype() == DType::F64 {
                v.to_dtype(DType::F32).unwrap()
            } else {
                v.clone()
            };
            k.strip_prefix(&prefix).map(|n| (n.to_string(), v))
        })
        .collect()
}

/// Load the case's parameters, run `f` on its inputs (as leaves), backpropagate the stored
/// upstream gradients and compare outputs and all gradients.
fn check<M: Module>(
    case: &str,
    module: &mut M,
    f: impl Fn(&M, &HashMap<String, Tensor>) -> Vec<Tensor>,
) {
    let fx = load_fixture("transformer.safetensors");
    let params = part(&fx, case, "param");
    assert!(!params.is_empty(), "no fixture for {case}");
    module.load_state_dict(&params, true).unwrap();
    module.eval();
    let inputs: HashMap<String, Tensor> = part(&fx, case, "in")
        .into_iter()
        .map(|(k, v)| {
            let v = if v.dtype().is_float() {
                v.requires_grad_(true).unwrap()
            } else {
                v
            };
            (k, v)
        })
        .collect();
    let outs = f(module, &inputs);
    let (want, gout) = (part(&fx, case, "out"), part(&fx, case, "gout"));
    assert_eq!(outs.len(), want.len(), "{case}: outputs");
    let mut loss = Tensor::scalar(0.0f32);
    for (i, o) in outs.iter().enumerate() {
        assert_close(o, &want[&i.to_string()], TOL, &format!("{case} output {i}"));
        loss = loss
            .add(&o.mul(&gout[&i.to_string()]).unwrap().sum_all().unwrap())
            .unwrap();
    }
    loss.backward().unwrap();
    for (name, g) in part(&fx, case, "grad_param") {
        let p = module
            .named_parameters()
            .into_iter()
            .find(|(n, _)| *n == name)
            .unwrap()
            .1;
        assert_close(
            &p.grad().unwrap(),
            &g,
            TOL,
            &format!("{case} grad of {name}"),
        );
    }
    for (name, g) in part(&fx, case, "grad_in") {
        assert_close(
            &inputs[&name].grad().unwrap(),
            &g,
            TOL,
            &format!("{case} grad of input {name}"),
        );
    }
}

#[test]
fn multihead_attention_with_masks_and_weights() {
    let mut m = MultiheadAttention::new(8, 2, 0.0, true, false).unwrap();
    check("mha", &mut m, |m, x| {
        let args = AttentionArgs {
            key_padding_mask: Some(&x["pad"]),
            attn_mask: Some(&x["mask"]),
            need_weights: true,
            ..Default::default()
        };
        let (o, w) = m.attend(&x["q"], &x["k"], &x["v"], args).unwrap();
        vec![o, w.unwrap()]
    });
}

#[test]
fn multihead_attention_batch_first_without_bias() {
    let mut m = MultiheadAttention::new(8, 4, 0.0, false, true).unwrap();
    check("mha_bf", &mut m, |m, x| vec![m.forward(&x["x"]).unwrap()]);
}

fn opts(ff: usize) -> TransformerOptions {
    TransformerOptions {
        dim_feedforward: ff,
        ..Default::default()
    }
}

#[test]
fn encoder_layer_post_norm_with_padding() {
    let mut m = TransformerEncoderLayer::new(8, 2, opts(16)).unwrap();
    check("enc_post", &mut m, |m, x| {
        vec![m
            .forward_with(&x["x"], None, Some(&x["pad"]), false)
            .unwrap()]
    });
}

#[test]
fn encoder_layer_pre_norm_gelu_causal() {
    let o = TransformerOptions {
        activation: Activation::Gelu,
        norm_first: true,
        batch_first: true,
        ..opts(16)
    };
    let mut m = TransformerEncoderLayer::new(8, 2, o).unwrap();
    check("enc_pre_gelu", &mut m, |m, x| {
        vec![m.forward_with(&x["x"], None, None, true).unwrap()]
    });
}

#[test]
fn decoder_layer_post_norm_causal() {
    let o = TransformerOptions {
        batch_first: true,
        ..opts(16)
    };
    let mut m = TransformerDecoderLayer::new(8, 2, o).unwrap();
    let masks = DecoderMasks {
        tgt_is_causal: true,
        ..Default::default()
    };
    check("dec_post", &mut m, |m, x| {
        vec![m.forward_with(&x["x"], &x["mem"], masks).unwrap()]
    });
}

#[test]
fn decoder_layer_pre_norm() {
    let o = TransformerOptions {
        norm_first: true,
        ..opts(12)
    };
    let mut m = TransformerDecoderLayer::new(8, 4, o).unwrap();
    check("dec_pre", &mut m, |m, x| {
        vec![m
            .forward_with(&x["x"], &x["mem"], DecoderMasks::default())
            .unwrap()]
    });
}

#[test]
fn bad_head_counts_are_errors() {
    assert!(MultiheadAttention::new(8, 3, 0.0, true, false).is_err());
    assert!(TransformerEncoderLayer::new(8, 0, opts(16)).is_err());
}

#[test]
fn sinusoidal_table_and_rope_match_their_pytorch_definitions() {
    use tinytorch::nn::{sinusoidal_table, RotaryEmbedding, SinusoidalPositionalEncoding};
    let f = load_fixture("transformer.safetensors");
    let pe = sinusoidal_table(10, 6).unwrap();
    assert_close(&pe, &f["pos.sinusoidal"], TOL, "sinusoidal table");
    let enc = SinusoidalPositionalEncoding::new(6, 10).unwrap();
    let zeros = Tensor::zeros(&[2, 4, 6], DType::F32, Default::default()).unwrap();
    assert_close(
        &enc.forward(&zeros).unwrap().select(0, 1).unwrap(),
        &pe.narrow(0, 0, 4).unwrap(),
        TOL,
        "added table",
    );
    assert!(enc
        .forward(&Tensor::zeros(&[11, 6], DType::F32, Default::default()).unwrap())
        .is_err());
    let rope = RotaryEmbedding::new(8, 16, 10000.0).unwrap();
    let x = f["rope.x"].to_dtype(DType::F32).unwrap();
    assert_close(&rope.apply(&x, 3).unwrap(), &f["rope.out"], TOL, "rope");
    assert!(rope.apply(&x, 12).is_err(), "positions past the table");
    assert!(RotaryEmbedding::new(7, 4, 10000.0).is_err());
}

#[test]
fn swiglu_matches_pytorch() {
    use tinytorch::nn::SwiGlu;
    let f = load_fixture("transformer.safetensors");
    let m = SwiGlu::new(6, 10).unwrap();
    let params: HashMap<String, Tensor> = [
        ("gate_proj.weight", "swiglu.gate"),
        ("up_proj.weight", "swiglu.up"),
        ("down_proj.weight", "swiglu.down"),
    ]
    .iter()
    .map(|(n, k)| (n.to_string(), f[*k].to_dtype(DType::F32).unwrap()))
    .collect();
    m.load_state_dict(&params, true).unwrap();
    let x = f["swiglu.x"].to_dtype(DType::F32).unwrap();
    assert_close(&m.forward(&x).unwrap(), &f["swiglu.out"], TOL, "swiglu");
}
