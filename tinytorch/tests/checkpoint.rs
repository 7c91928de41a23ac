//! Activation checkpointing (`autograd::checkpoint`, `Gpt::set_gradient_checkpointing`):
//! gradients equal the plain ones bit for bit, dropout included (the generator's state is
//! restored for the recomputation), parameters captured by the function get their
//! gradients, and errors name the op. The memory saved is measured in checkpoint_memory.rs.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tinytorch::autograd::checkpoint;
use tinytorch::models::gpt::{Gpt, GptConfig};
use tinytorch::nn::functional::dropout;
use tinytorch::nn::{Linear, Module};
use tinytorch::{manual_seed, DType, Device, Tensor};

/// The tests here that draw random numbers (dropout, initialisation) share the default
/// generator: one at a time, so that a seeded run sees only its own draws.
static GENERATOR: Mutex<()> = Mutex::new(());

/// Gradients of every tensor in `ts`, as vectors (bitwise comparable).
fn grads(ts: &[Tensor]) -> Vec<Vec<f32>> {
    ts.iter()
        .map(|t| t.grad().unwrap().to_vec::<f32>().unwrap())
        .collect()
}

struct Mlp {
    fc1: Linear,
    fc2: Linear,
}

impl Mlp {
    fn run(&self, x: &Tensor) -> tinytorch::Result<Tensor> {
        let h = dropout(&self.fc1.call(x)?.gelu()?, 0.3, true)?;
        dropout(&self.fc2.call(&h)?, 0.2, true)
    }
}

#[test]
fn an_mlp_with_dropout_gets_the_same_gradients_checkpointed() {
    let _one = GENERATOR.lock().unwrap_or_else(|e| e.into_inner());
    manual_seed(1);
    let mlp = Arc::new(Mlp {
        fc1: Linear::new(8, 32, true).unwrap(),
        fc2: Linear::new(32, 8, true).unwrap(),
    });
    let x = Tensor::randn(&[16, 8], DType::F32, Device::Cpu)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let params: Vec<Tensor> = [&mlp.fc1, &mlp.fc2]
        .iter()
        .flat_map(|l| l.parameters())
        .chain([x.clone()])
        .collect();
    let step = |checkpointed: bool| {
        for p in &params {
            p.set_grad(None);
        }
        manual_seed(7);
        // Two pieces in a row, the second's input the first's output (not a leaf).
        let h = x.tanh().unwrap();
        let y = if checkpointed {
            let (m1, m2) = (mlp.clone(), mlp.clone());
            let h = checkpoint(move |xs| m1.run(&xs[0]), &[h]).unwrap();
            checkpoint(move |xs| m2.run(&xs[0]), &[h]).unwrap()
        } else {
            mlp.run(&mlp.run(&h).unwrap()).unwrap()
        };
        y.square().unwrap().sum_all().unwrap().backward().unwrap();
        // The generator is where the plain run leaves it: backward put it back.
        (
            y.to_vec::<f32>().unwrap(),
            grads(&params),
            Tensor::rand(&[3], DType::F32, Device::Cpu)
                .unwrap()
                .to_vec::<f32>()
                .unwrap(),
        )
    };
    let plain = step(false);
    let ckpt = step(true);
    assert_eq!(plain.0, ckpt.0, "outputs");
    assert_eq!(plain.1, ckpt.1, "gradients");
    assert_eq!(plain.2, ckpt.2, "generator state after the step");
}

#[test]
fn gpt_with_dropout_gets_the_same_loss_and_gradients_checkpointed() {
    let _one = GENERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let config = GptConfig {
        vocab_size: 19,
        block_size: 8,
        n_layer: 3,
        n_head: 2,
        n_embd: 16,
        dropout: 0.1,
        bias: true,
    };
    manual_seed(3);
    let mut model = Gpt::new(config).unwrap();
    let idx = Tensor::randint(0, 19, &[2, 8], Device::Cpu).unwrap();
    let targets = Tensor::randint(0, 19, &[2, 8], Device::Cpu).unwrap();
    let mut step = |on: bool| {
        model.set_gradient_checkpointing(on);
        assert_eq!(model.gradient_checkpointing(), on);
        model.zero_grad();
        manual_seed(11);
        let (loss, _) = model.loss(&idx, &targets).unwrap();
        loss.backward().unwrap();
        (loss.item::<f32>().unwrap(), grads(&model.parameters()))
    };
    let plain = step(false);
    let ckpt = step(true);
    assert_eq!(plain.0, ckpt.0);
    assert_eq!(plain.1, ckpt.1);
}

#[test]
fn parameters_reach_their_gradients_when_no_input_requires_grad() {
    // Linear::new draws its initial weights from the default generator.
    let _one = GENERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let lin = Arc::new(Linear::new(3, 2, true).unwrap());
    let x = Tensor::ones(&[4, 3], DType::F32, Device::Cpu).unwrap();
    let l = lin.clone();
    let y = checkpoint(move |xs| l.call(&xs[0]), std::slice::from_ref(&x)).unwrap();
    assert!(y.requires_grad());
    y.sum_all().unwrap().backward().unwrap();
    let got = grads(&lin.parameters());
    lin.zero_grad();
    lin.call(&x).unwrap().sum_all().unwrap().backward().unwrap();
    assert_eq!(got, grads(&lin.parameters()));
}

#[test]
fn without_grad_mode_it_is_a_plain_call() {
    let x = Tensor::ones(&[2], DType::F32, Device::Cpu)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let _guard = tinytorch::no_grad();
    let y = checkpoint(|xs| xs[0].mul_scalar(2.0), &[x]).unwrap();
    assert!(!y.requires_grad());
}

#[test]
fn errors_name_checkpoint_and_what_differs() {
    let x = Tensor::ones(&[2, 3], DType::F32, Device::Cpu)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let e = checkpoint(|xs| xs[0].reshape(&[7]), std::slice::from_ref(&x)).unwrap_err();
    assert!(e.to_string().contains("reshape"), "{e}");
    // A function that changes between forward and recomputation.
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let y = checkpoint(
        move |xs| match c.fetch_add(1, Ordering::SeqCst) {
            0 => xs[0].mul_scalar(2.0),
            _ => xs[0].sum(&[1], false),
        },
        &[x],
    )
    .unwrap();
    let e = y.sum_all().unwrap().backward().unwrap_err().to_string();
    assert!(
        e.contains("checkpoint") && e.contains("[2]") && e.contains("[2, 3]"),
        "{e}"
    );
}
