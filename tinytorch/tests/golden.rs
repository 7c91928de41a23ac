//! End-to-end check in the style of llm.c's test_gpt2: a small CNN (convolution, batch norm,
//! ReLU, max pooling, global average pooling, linear) with PyTorch's initial weights must give
//! PyTorch's logits, loss and every parameter gradient, then the losses and final weights of 5
//! SGD-with-momentum steps. Reference values: scripts/fixtures/gen_golden_fixtures.py.

mod common;
use common::{load_fixture, max_diff, sgd_momentum, small_cnn};

use std::collections::{BTreeMap, HashMap};
use tinytorch::nn::functional::cross_entropy;
use tinytorch::nn::{Module, Reduction};
use tinytorch::ops::ConvPadding;
use tinytorch::optim::Optimizer;
use tinytorch::{Result, Tensor};

/// The fixture entries under `prefix`, with the prefix removed.
fn section(fx: &BTreeMap<String, Tensor>, prefix: &str) -> HashMap<String, Tensor> {
    fx.iter()
        .filter_map(|(k, v)| k.strip_prefix(prefix).map(|s| (s.to_string(), v.clone())))
        .collect()
}

#[test]
fn small_cnn_matches_pytorch_end_to_end() -> Result<()> {
    let fx = load_fixture("golden.safetensors");
    let model = small_cnn(ConvPadding::Explicit(1, 1), [1, 1], 10)?;
    model.load_state_dict(&section(&fx, "golden.param."), true)?;
    let (x, y) = (&fx["golden.x"], &fx["golden.y"]);

    let logits = model.forward(x)?;
    let d = max_diff(&logits, &fx["golden.logits"]);
    assert!(d < 1e-5, "logits differ by {d}");
    let loss = cross_entropy(&logits, y, None, -100, Reduction::Mean, 0.0)?;
    let d = max_diff(&loss, &fx["golden.loss"]);
    assert!(d < 1e-6, "loss differs by {d}");

    loss.backward()?;
    let grads = section(&fx, "golden.grad.");
    assert_eq!(grads.len(), model.named_parameters().len());
    for (name, p) in model.named_parameters() {
        let g = p.grad().expect("every parameter gets a gradient");
        let d = max_diff(&g, &grads[&name]);
        assert!(d < 1e-5, "gradient of {name} differs by {d}");
    }

    let mut opt = sgd_momentum(model.parameters(), 0.1, 0.9)?;
    let want = fx["golden.losses"].to_vec::<f32>()?;
    for (step, want) in want.iter().enumerate() {
        opt.zero_grad();
        let loss = cross_entropy(&model.forward(x)?, y, None, -100, Reduction::Mean, 0.0)?;
        loss.backward()?;
        opt.step()?;
        let got = loss.item::<f32>()?;
        assert!(
            (got - want).abs() < 1e-5,
            "step {step}: loss {got} vs {want}"
        );
    }
    let fin = section(&fx, "golden.final.");
    for (name, t) in model.state_dict() {
        let d = max_diff(&t, &fin[&name]);
        assert!(d < 1e-5, "{name} after 5 steps differs by {d}");
    }
    Ok(())
}
