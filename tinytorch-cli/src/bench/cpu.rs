//! The CPU-performance suite: the work TinyTorch's users do, each row timed as the median of
//! at least five runs. Training steps of the built-in models (forward, cross-entropy,
//! backward, SGD step) and of the small GPT of `gpt_train` (AdamW), the overhead of one op, bandwidth-bound elementwise ops on fresh
//! 64 MiB outputs, a 1024^3 matmul, and the seed's layer table (scaled down in batch where a
//! row would take PyTorch more than ~0.5 s). Every JSON row carries its parameters, so
//! scripts/bench/bench_cpu_torch.py times exactly the same work in PyTorch.

use super::{gpt_train, layers};
use serde_json::{json, Value};
use tinytorch::models::{ImageShape, ModelKind};
use tinytorch::nn::functional::cross_entropy;
use tinytorch::nn::Reduction;
use tinytorch::optim::{Optimizer, SgdOptions, SGD};
use tinytorch::{manual_seed, DType, Device, Result, Tensor};

/// One row of the suite: a name, its parameters and the closure timed.
pub struct CpuRow {
    /// The row's kind: `train_step`, an op name, or a layer-table family.
    pub name: &'static str,
    /// What exactly runs (model, batch, shapes), for the PyTorch side.
    pub params: Value,
    /// One timed repetition.
    pub run: Box<dyn FnMut() -> Result<()>>,
}

/// The training-step rows: model, input image shape, batch.
const TRAIN: &[(ModelKind, ImageShape, usize)] = &[
    (ModelKind::SeedCnn, ImageShape::MNIST, 64),
    (ModelKind::Mlp, ImageShape::MNIST, 64),
    (ModelKind::ResNet20, ImageShape::CIFAR, 64),
];

/// One SGD training step (lr 0.05, the seed configuration) of `kind` on a fixed random batch.
fn train_step(kind: ModelKind, shape: ImageShape, batch: usize) -> Result<CpuRow> {
    manual_seed(0);
    let mut model = kind.build(shape, 10)?;
    model.train();
    let mut opt = SGD::new(
        model.parameters(),
        SgdOptions {
            lr: 0.05,
            ..Default::default()
        },
    )?;
    let dims = [batch, shape.channels, shape.height, shape.width];
    let x = Tensor::rand(&dims, DType::F32, Device::Cpu)?;
    let y = Tensor::randint(0, 10, &[batch], Device::Cpu)?;
    Ok(CpuRow {
        name: "train_step",
        params: json!({"model": kind.name(), "batch": batch, "channels": shape.channels,
                       "height": shape.height, "width": shape.width}),
        // The step on a compute thread, as `tinytorch::train::train_step` runs it.
        run: Box::new(move || {
            tinytorch::parallel::run(|| {
                opt.zero_grad();
                let logits = model.forward(&x)?;
                cross_entropy(&logits, &y, None, -100, Reduction::Mean, 0.0)?.backward()?;
                opt.step()
            })
        }),
    })
}

/// An elementwise row on fresh outputs: `op` over `n` f32 elements.
fn elementwise(op: &'static str, n: usize) -> Result<CpuRow> {
    let a = Tensor::randn(&[n], DType::F32, Device::Cpu)?;
    let b = Tensor::randn(&[n], DType::F32, Device::Cpu)?;
    let run: Box<dyn FnMut() -> Result<()>> = match op {
        "add" => Box::new(move || a.add(&b).map(drop)),
        _ => Box::new(move || a.relu().map(drop)),
    };
    Ok(CpuRow {
        name: "elementwise",
        params: json!({"op": op, "numel": n}),
        run,
    })
}

/// The rows of the suite whose name or parameters contain `filter` (all without one; e.g.
/// `train_step` or `resnet20`), in table order.
/// The layer table's rows are built only when selected: their inputs alone take gigabytes.
pub fn rows(filter: Option<&str>) -> Result<Vec<CpuRow>> {
    let mut rows = all_but_layers()?;
    rows.retain(|r| filter.is_none_or(|f| r.name.contains(f) || r.params.to_string().contains(f)));
    for row in layers::rows(Device::Cpu, filter)? {
        rows.push(CpuRow {
            name: row.family,
            params: row.params,
            run: row.run,
        });
    }
    Ok(rows)
}

/// The training steps, op overhead, bandwidth and matmul rows.
fn all_but_layers() -> Result<Vec<CpuRow>> {
    let mut rows = Vec::new();
    for &(kind, shape, batch) in TRAIN {
        rows.push(train_step(kind, shape, batch)?);
    }
    let c = gpt_train::CONFIG;
    rows.push(CpuRow {
        name: "train_step",
        params: json!({"model": "gpt", "batch": gpt_train::BATCH, "vocab_size": c.vocab_size,
                       "block_size": c.block_size, "n_layer": c.n_layer, "n_head": c.n_head,
                       "n_embd": c.n_embd}),
        run: Box::new(gpt_train::step()?),
    });
    let one = Tensor::from_vec(vec![1.0f32], &[1])?;
    rows.push(CpuRow {
        name: "op_overhead",
        params: json!({"op": "add", "numel": 1}),
        run: Box::new(move || one.add(&one).map(drop)),
    });
    rows.push(elementwise("add", 1 << 24)?);
    rows.push(elementwise("relu", 1 << 24)?);
    let n = 1024;
    let (a, b) = (
        Tensor::randn(&[n, n], DType::F32, Device::Cpu)?,
        Tensor::randn(&[n, n], DType::F32, Device::Cpu)?,
    );
    rows.push(CpuRow {
        name: "matmul",
        params: json!({"m": n, "k": n, "n": n}),
        run: Box::new(move || a.matmul(&b).map(drop)),
    });
    Ok(rows)
}
