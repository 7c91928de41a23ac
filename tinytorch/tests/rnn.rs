//! Recurrent layers (`nn::RNN`, `LSTM`, `GRU` and their cells) against PyTorch: parameters
//! loaded through `load_state_dict` from `tests/fixtures/rnn.safetensors` (written by
//! `scripts/fixtures/gen_rnn_fixtures.py` with torch 2.15), outputs, final states and gradients
//! compared in f32; f64 gradchecks; parameter names, init, modes and errors.

mod common;
use common::{assert_close, gradcheck64, load_fixture, Tol};

/// Outputs and gradients against PyTorch's: `|got - want| <= 2e-5 + 2e-5 |want|`.
const TOL: Tol = Tol::new(2e-5, 2e-5);

use std::collections::HashMap;
use tinytorch::nn::{GRUCell, LSTMCell, Module, Nonlinearity, RNNCell, RNNOptions, GRU, LSTM, RNN};
use tinytorch::{manual_seed, DType, Device, Error, Result, Tensor};

// Must match the script's INPUT, HIDDEN, LAYERS.
const INPUT: usize = 3;
const HIDDEN: usize = 4;
const LAYERS: usize = 2;

/// The script's CASES: (name, kind, batch_first, bidirectional, with_h0, unbatched).
const KINDS: [&str; 4] = ["rnn_tanh", "rnn_relu", "lstm", "gru"];
const VARIANTS: [(&str, bool, bool, bool, bool); 6] = [
    ("seq", false, false, false, false),
    ("seq_h0", false, false, true, false),
    ("bf", true, false, false, false),
    ("bf_h0", true, false, true, false),
    ("unbatched_h0", false, false, true, true),
    ("bidir_h0", true, true, true, false),
];

struct Fixture {
    tensors: HashMap<String, Tensor>,
}

impl Fixture {
    fn load() -> Fixture {
        let tensors = load_fixture("rnn.safetensors").into_iter().collect();
        Fixture { tensors }
    }

    fn get(&self, name: &str) -> Option<Tensor> {
        self.tensors.get(name).cloned()
    }

    fn must(&self, name: &str) -> Tensor {
        self.get(name)
            .unwrap_or_else(|| panic!("fixture has no {name}"))
    }

    /// Checks `got` against the fixture's `<case>.<key>` within [`TOL`].
    #[track_caller]
    fn check(&self, got: &Tensor, case: &str, key: &str) {
        let want = self.must(&format!("{case}.{key}"));
        assert_close(got, &want, TOL, &format!("{case} {key}"));
    }

    /// The `<case>.param.*` tensors keyed by their state_dict name.
    fn state_dict(&self, case: &str) -> HashMap<String, Tensor> {
        let prefix = format!("{case}.param.");
        self.tensors
            .iter()
            .filter_map(|(k, v)| k.strip_prefix(&prefix).map(|n| (n.to_string(), v.clone())))
            .collect()
    }
}

fn grad_of(t: &Tensor) -> Tensor {
    t.grad().expect("a gradient")
}

/// `out.sum() + h_n.pow(2).sum() (+ c_n.pow(2).sum())`, the script's loss.
fn loss(out: &Tensor, h: &Tensor, c: Option<&Tensor>) -> Tensor {
    let mut l = out
        .sum_all()
        .unwrap()
        .add(&h.square().unwrap().sum_all().unwrap())
        .unwrap();
    if let Some(c) = c {
        l = l.add(&c.square().unwrap().sum_all().unwrap()).unwrap();
    }
    l
}

enum Any {
    Rnn(RNN),
    Lstm(LSTM),
    Gru(GRU),
}

impl Any {
    fn new(kind: &str, opts: RNNOptions) -> Any {
        match kind {
            "rnn_tanh" => Any::Rnn(RNN::new(INPUT, HIDDEN, opts).unwrap()),
            "rnn_relu" => {
                Any::Rnn(RNN::new(INPUT, HIDDEN, opts.nonlinearity(Nonlinearity::Relu)).unwrap())
            }
            "lstm" => Any::Lstm(LSTM::new(INPUT, HIDDEN, opts).unwrap()),
            "gru" => Any::Gru(GRU::new(INPUT, HIDDEN, opts).unwrap()),
            other => panic!("unknown kind {other}"),
        }
    }

    fn module(&self) -> &dyn Module {
        match self {
            Any::Rnn(m) => m,
            Any::Lstm(m) => m,
            Any::Gru(m) => m,
        }
    }

    fn run(
        &self,
        x: &Tensor,
        h0: Option<&Tensor>,
        c0: Option<&Tensor>,
    ) -> Result<(Tensor, Tensor, Option<Tensor>)> {
        match self {
            Any::Rnn(m) => m.forward(x, h0).map(|(o, h)| (o, h, None)),
            Any::Gru(m) => m.forward(x, h0).map(|(o, h)| (o, h, None)),
            Any::Lstm(m) => {
                let hc = h0.map(|h| (h, c0.expect("c0 with h0")));
                m.forward(x, hc).map(|(o, (h, c))| (o, h, Some(c)))
            }
        }
    }
}

fn leaf(t: Option<Tensor>) -> Option<Tensor> {
    t.map(|t| t.requires_grad_(true).unwrap())
}

/// Compare the gradients of the inputs and every parameter with the fixture's.
fn check_grads(fx: &Fixture, case: &str, m: &dyn Module, inputs: &[(&str, &Option<Tensor>)]) {
    for (key, t) in inputs {
        if let Some(t) = t {
            fx.check(&grad_of(t), case, &format!("grad.{key}"));
        }
    }
    for (name, p) in m.named_parameters() {
        fx.check(&grad_of(&p), case, &format!("grad.param.{name}"));
    }
}

/// Compares the final hidden state `h` (and the cell state `c` of an LSTM) with the
/// fixture's `<case>.h_n` (and `<case>.c_n`), runs the script's loss backward from `out` and
/// the states, and compares the gradients of the inputs x, h0 and c0 (where given) and of
/// every parameter of `m` ([`check_grads`]).
fn check_states_and_grads(
    fx: &Fixture,
    case: &str,
    m: &dyn Module,
    out: &Tensor,
    h: &Tensor,
    c: Option<&Tensor>,
    [x, h0, c0]: [&Option<Tensor>; 3],
) {
    fx.check(h, case, "h_n");
    if let Some(c) = c {
        fx.check(c, case, "c_n");
    }
    loss(out, h, c).backward().unwrap();
    check_grads(fx, case, m, &[("x", x), ("h0", h0), ("c0", c0)]);
}

#[test]
fn sequence_modules_match_pytorch() {
    let fx = Fixture::load();
    for kind in KINDS {
        for (variant, batch_first, bidirectional, with_h0, _unbatched) in VARIANTS {
            let case = format!("{kind}.{variant}");
            let opts = RNNOptions::default()
                .num_layers(LAYERS)
                .batch_first(batch_first)
                .bidirectional(bidirectional);
            let m = Any::new(kind, opts);
            m.module()
                .load_state_dict(&fx.state_dict(&case), true)
                .unwrap();
            let x = leaf(fx.get(&format!("{case}.x")));
            let h0 = leaf(fx.get(&format!("{case}.h0")).filter(|_| with_h0));
            let c0 = leaf(fx.get(&format!("{case}.c0")));
            let (out, h, c) = m
                .run(x.as_ref().unwrap(), h0.as_ref(), c0.as_ref())
                .unwrap();
            fx.check(&out, &case, "out");
            check_states_and_grads(&fx, &case, m.module(), &out, &h, c.as_ref(), [&x, &h0, &c0]);
        }
    }
}

#[test]
fn cells_match_pytorch() {
    let fx = Fixture::load();
    for kind in ["rnncell_tanh", "rnncell_relu", "lstmcell", "grucell"] {
        for variant in ["h", "unbatched"] {
            let case = format!("{kind}.{variant}");
            let x = leaf(fx.get(&format!("{case}.x")));
            let h0 = leaf(fx.get(&format!("{case}.h0")));
            let c0 = leaf(fx.get(&format!("{case}.c0")));
            let x_ref = x.as_ref().unwrap();
            let (m, h, c): (Box<dyn Module>, Tensor, Option<Tensor>) = match kind {
                "lstmcell" => {
                    let m = LSTMCell::new(INPUT, HIDDEN, true).unwrap();
                    m.load_state_dict(&fx.state_dict(&case), true).unwrap();
                    let hc = h0.as_ref().map(|h| (h, c0.as_ref().unwrap()));
                    let (h, c) = m.forward(x_ref, hc).unwrap();
                    (Box::new(m), h, Some(c))
                }
                "grucell" => {
                    let m = GRUCell::new(INPUT, HIDDEN, true).unwrap();
                    m.load_state_dict(&fx.state_dict(&case), true).unwrap();
                    let h = m.forward(x_ref, h0.as_ref()).unwrap();
                    (Box::new(m), h, None)
                }
                _ => {
                    let nl = if kind == "rnncell_relu" {
                        Nonlinearity::Relu
                    } else {
                        Nonlinearity::Tanh
                    };
                    let m = RNNCell::new(INPUT, HIDDEN, true, nl).unwrap();
                    m.load_state_dict(&fx.state_dict(&case), true).unwrap();
                    let h = m.forward(x_ref, h0.as_ref()).unwrap();
                    (Box::new(m), h, None)
                }
            };
            check_states_and_grads(&fx, &case, m.as_ref(), &h, &h, c.as_ref(), [&x, &h0, &c0]);
        }
    }
}

/// Deterministic f64 values in (-1, 1).
fn det(shape: &[usize], a: f64) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|i| (a * i as f64 + 0.3).sin()).collect();
    Tensor::from_vec(v, shape).unwrap()
}

/// Replace the parameters of `weights` (in named order) with `params`.
fn set_weights(weights: &mut [tinytorch::nn::RecurrentWeights], params: &[Tensor]) {
    let mut it = params.iter().cloned();
    for w in weights {
        w.weight_ih = it.next().unwrap();
        w.weight_hh = it.next().unwrap();
        w.bias_ih = Some(it.next().unwrap());
        w.bias_hh = Some(it.next().unwrap());
    }
}

fn flat_cat(parts: &[&Tensor]) -> Result<Tensor> {
    let flat: Vec<Tensor> = parts
        .iter()
        .map(|t| t.flatten(0, -1))
        .collect::<Result<_>>()?;
    Tensor::cat(&flat.iter().collect::<Vec<_>>(), 0)
}

fn f64_opts(bidirectional: bool) -> RNNOptions {
    RNNOptions::default()
        .num_layers(2)
        .bidirectional(bidirectional)
        .dtype(DType::F64)
}

/// Inputs for a gradcheck: x (3, 2, 2), states (layers*dirs, 2, 2), and the parameters of a
/// fresh f64 module (hidden 2).
fn gradcheck_inputs(m: &dyn Module, dirs: usize, states: usize) -> Vec<Tensor> {
    let mut inputs = vec![det(&[3, 2, 2], 0.7)];
    for s in 0..states {
        inputs.push(det(&[2 * dirs, 2, 2], 0.37 + s as f64));
    }
    inputs.extend(m.parameters().iter().map(|p| p.detach()));
    inputs
}

#[test]
fn lstm_gradcheck_f64() {
    for bidirectional in [false, true] {
        let dirs = 1 + usize::from(bidirectional);
        let m = LSTM::new(2, 2, f64_opts(bidirectional)).unwrap();
        let inputs = gradcheck_inputs(&m, dirs, 2);
        gradcheck64(
            |xs| {
                let mut m = LSTM::new(2, 2, f64_opts(bidirectional))?;
                set_weights(m.weights_mut(), &xs[3..]);
                let (out, (h, c)) = m.forward(&xs[0], Some((&xs[1], &xs[2])))?;
                flat_cat(&[&out, &h, &c])
            },
            &inputs,
        );
    }
}

/// A GRU's or RNN's `forward`: from the input and the initial hidden state, the output and
/// the final hidden state.
type ForwardFn<M> = fn(&M, &Tensor, Option<&Tensor>) -> Result<(Tensor, Tensor)>;

/// Gradchecks a fresh two-layer f64 GRU or RNN (input and hidden 2, `bidirectional` or
/// not; `new`, `weights_mut` and `forward` are the type's) through its output and final
/// state, at x, h0 and its parameters.
fn gradcheck_gru_or_rnn<M: Module>(
    new: fn(usize, usize, RNNOptions) -> Result<M>,
    weights_mut: fn(&mut M) -> &mut [tinytorch::nn::RecurrentWeights],
    forward: ForwardFn<M>,
    bidirectional: bool,
) {
    let dirs = 1 + usize::from(bidirectional);
    let m = new(2, 2, f64_opts(bidirectional)).unwrap();
    gradcheck64(
        |xs| {
            let mut m = new(2, 2, f64_opts(bidirectional))?;
            set_weights(weights_mut(&mut m), &xs[2..]);
            let (out, h) = forward(&m, &xs[0], Some(&xs[1]))?;
            flat_cat(&[&out, &h])
        },
        &gradcheck_inputs(&m, dirs, 1),
    );
}

#[test]
fn gru_and_rnn_gradcheck_f64() {
    gradcheck_gru_or_rnn(GRU::new, GRU::weights_mut, GRU::forward, true);
    gradcheck_gru_or_rnn(RNN::new, RNN::weights_mut, RNN::forward, false);
}

#[test]
fn cell_gradcheck_f64() {
    let x = det(&[2, 3], 0.4);
    let h = det(&[2, 2], 0.9);
    let c = det(&[2, 2], 1.3);
    let cell = LSTMCell::new_with(3, 2, true, DType::F64, Device::Cpu).unwrap();
    let mut inputs = vec![x.clone(), h.clone(), c];
    inputs.extend(cell.parameters().iter().map(|p| p.detach()));
    gradcheck64(
        |xs| {
            let mut cell = LSTMCell::new_with(3, 2, true, DType::F64, Device::Cpu)?;
            set_weights(std::slice::from_mut(&mut cell.weights), &xs[3..]);
            let (h, c) = cell.forward(&xs[0], Some((&xs[1], &xs[2])))?;
            flat_cat(&[&h, &c])
        },
        &inputs,
    );
    let cell = GRUCell::new_with(3, 2, true, DType::F64, Device::Cpu).unwrap();
    let mut inputs = vec![x, h];
    inputs.extend(cell.parameters().iter().map(|p| p.detach()));
    gradcheck64(
        |xs| {
            let mut cell = GRUCell::new_with(3, 2, true, DType::F64, Device::Cpu)?;
            set_weights(std::slice::from_mut(&mut cell.weights), &xs[2..]);
            cell.forward(&xs[0], Some(&xs[1]))
        },
        &inputs,
    );
}

#[test]
fn parameter_names_shapes_and_init() {
    let m = LSTM::new(
        3,
        5,
        RNNOptions::default().num_layers(2).bidirectional(true),
    )
    .unwrap();
    let names: Vec<(String, Vec<usize>)> = m
        .named_parameters()
        .into_iter()
        .map(|(n, p)| (n, p.shape().to_vec()))
        .collect();
    // PyTorch: [(k, tuple(v.shape)) for k, v in nn.LSTM(3, 5, 2, bidirectional=True).state_dict().items()]
    // That is, per layer and direction: weight_ih (20, input: 3, then 2 * 5), weight_hh
    // (20, 5), bias_ih and bias_hh (20,).
    let mut want = Vec::new();
    for (layer, input) in [(0, 3), (1, 10)] {
        for direction in ["", "_reverse"] {
            let params = [
                ("weight_ih", vec![20, input]),
                ("weight_hh", vec![20, 5]),
                ("bias_ih", vec![20]),
                ("bias_hh", vec![20]),
            ];
            for (param, shape) in params {
                want.push((format!("{param}_l{layer}{direction}"), shape));
            }
        }
    }
    assert_eq!(names, want);

    let bound = 1.0 / 5f64.sqrt();
    for (name, p) in m.named_parameters() {
        assert!(p.requires_grad(), "{name} requires grad");
        let v = p.to_vec_f64().unwrap();
        assert!(v.iter().all(|x| x.abs() <= bound), "{name} within U(-k, k)");
        let spread = v.iter().cloned().fold(0f64, |a, x| a.max(x.abs()));
        assert!(spread > bound / 2.0, "{name} fills the range");
    }

    let gru = GRU::new(3, 5, RNNOptions::default().bias(false)).unwrap();
    let names: Vec<String> = gru.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["weight_ih_l0", "weight_hh_l0"]);
    assert_eq!(gru.weights()[0].weight_ih.shape(), [15, 3]);
    let rnn = RNN::new(3, 5, RNNOptions::default()).unwrap();
    assert_eq!(rnn.num_parameters(), 5 * 3 + 5 * 5 + 5 + 5);
    let cell = LSTMCell::new(3, 5, true).unwrap();
    let names: Vec<String> = cell
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]);
}

#[test]
fn module_forward_noncontiguous_and_zero_state() {
    manual_seed(3);
    let m = GRU::new(3, 4, RNNOptions::default().batch_first(true)).unwrap();
    // (N=2, L=5, 3) as a transposed view of a (5, 2, 3) buffer.
    let base = det(&[5, 2, 3], 0.3).to_dtype(DType::F32).unwrap();
    let x = base.transpose(0, 1).unwrap();
    assert!(!x.is_contiguous());
    let (out, h) = m.forward(&x, None).unwrap();
    let (out_c, _) = m.forward(&x.contiguous().unwrap(), None).unwrap();
    assert_eq!(out.shape(), [2, 5, 4]);
    assert_eq!(h.shape(), [1, 2, 4]);
    assert_eq!(out.to_vec_f64().unwrap(), out_c.to_vec_f64().unwrap());
    // h_n is the last output step; Module::forward runs from zeros and returns the output.
    assert_eq!(
        out.select(1, -1).unwrap().to_vec_f64().unwrap(),
        h.select(0, 0).unwrap().to_vec_f64().unwrap()
    );
    let zeros = Tensor::zeros(&[1, 2, 4], DType::F32, Device::Cpu).unwrap();
    let (out_z, _) = m.forward(&x, Some(&zeros)).unwrap();
    let out_m = Module::forward(&m, &x).unwrap();
    assert_eq!(out_m.to_vec_f64().unwrap(), out_z.to_vec_f64().unwrap());
}

#[test]
fn dropout_between_layers_only_in_training() {
    manual_seed(7);
    let mut m = LSTM::new(3, 4, RNNOptions::default().num_layers(2).dropout(0.5)).unwrap();
    let x = det(&[6, 2, 3], 0.5).to_dtype(DType::F32).unwrap();
    let mut plain = LSTM::new(3, 4, RNNOptions::default().num_layers(2)).unwrap();
    plain
        .load_state_dict(&m.state_dict().into_iter().collect(), true)
        .unwrap();
    let reference = Module::forward(&plain, &x).unwrap().to_vec_f64().unwrap();
    let train = Module::forward(&m, &x).unwrap().to_vec_f64().unwrap();
    assert_ne!(
        train, reference,
        "dropout changes the output in training mode"
    );
    m.eval();
    assert!(!m.is_training());
    assert_eq!(
        Module::forward(&m, &x).unwrap().to_vec_f64().unwrap(),
        reference
    );
    plain.train();
    assert_eq!(
        Module::forward(&plain, &x).unwrap().to_vec_f64().unwrap(),
        reference
    );
}

fn expect_err<T>(r: Result<T>, needle: &str) {
    match r {
        Ok(_) => panic!("expected an error containing {needle:?}"),
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.contains(needle), "error {msg:?} lacks {needle:?}");
        }
    }
}

#[test]
fn errors() {
    let f32 = |shape: &[usize]| Tensor::zeros(shape, DType::F32, Device::Cpu).unwrap();
    let opts = RNNOptions::default().num_layers(2);
    let rnn = RNN::new(3, 4, opts).unwrap();
    let lstm = LSTM::new(3, 4, opts).unwrap();
    // Wrong feature size, wrong rank, empty sequence, wrong dtype.
    expect_err(rnn.forward(&f32(&[5, 2, 7]), None), "Expected 3, got 7");
    expect_err(rnn.forward(&f32(&[5, 2, 3, 1]), None), "2D or 3D");
    expect_err(rnn.forward(&f32(&[3]), None), "2D or 3D");
    expect_err(rnn.forward(&f32(&[0, 2, 3]), None), "sequence length");
    let x64 = Tensor::zeros(&[5, 2, 3], DType::F64, Device::Cpu).unwrap();
    assert!(matches!(rnn.forward(&x64, None), Err(Error::DType { .. })));
    // Wrong initial state shapes (batched and unbatched) and dtype.
    let x = f32(&[5, 2, 3]);
    expect_err(rnn.forward(&x, Some(&f32(&[1, 2, 4]))), "[2, 2, 4]");
    expect_err(rnn.forward(&x, Some(&f32(&[2, 3, 4]))), "got [2, 3, 4]");
    expect_err(rnn.forward(&f32(&[5, 3]), Some(&f32(&[2, 1, 4]))), "[2, 4]");
    let h64 = Tensor::zeros(&[2, 2, 4], DType::F64, Device::Cpu).unwrap();
    assert!(matches!(
        rnn.forward(&x, Some(&h64)),
        Err(Error::DType { .. })
    ));
    expect_err(
        lstm.forward(&x, Some((&f32(&[2, 2, 4]), &f32(&[2, 2, 5])))),
        "cell",
    );
    // Constructor arguments.
    expect_err(RNN::new(3, 0, opts), "hidden_size");
    expect_err(GRU::new(3, 4, opts.num_layers(0)), "num_layers");
    expect_err(LSTM::new(3, 4, opts.dropout(1.5)), "dropout");
    expect_err(
        LSTM::new(3, 4, opts.nonlinearity(Nonlinearity::Relu)),
        "nonlinearity",
    );
    expect_err(RNN::new(3, 4, opts.dtype(DType::I64)), "floating point");
    // Cells.
    let cell = GRUCell::new(3, 4, true).unwrap();
    expect_err(cell.forward(&f32(&[2, 5]), None), "got 5 expected 3");
    expect_err(cell.forward(&f32(&[1, 2, 3]), None), "1D or 2D");
    expect_err(cell.forward(&f32(&[2, 3]), Some(&f32(&[3, 4]))), "[2, 4]");
    expect_err(cell.forward(&f32(&[3]), Some(&f32(&[1, 4]))), "[4]");
    expect_err(RNNCell::new(3, 0, true, Nonlinearity::Tanh), "hidden_size");
    let lcell = LSTMCell::new(3, 4, true).unwrap();
    expect_err(
        lcell.forward(&f32(&[2, 3]), Some((&f32(&[2, 4]), &f32(&[2, 3])))),
        "hx[1]",
    );
    // A bad state dict is refused with the offending names.
    let mut sd: HashMap<String, Tensor> = lstm.state_dict().into_iter().collect();
    sd.insert("weight_ih_l0".into(), f32(&[16, 2]));
    expect_err(lstm.load_state_dict(&sd, true), "weight_ih_l0");
}

#[test]
fn unbatched_and_batch_of_one_agree() {
    manual_seed(11);
    let m = RNN::new(
        3,
        4,
        RNNOptions::default().num_layers(2).bidirectional(true),
    )
    .unwrap();
    let x = det(&[4, 3], 0.8).to_dtype(DType::F32).unwrap();
    let h0 = det(&[4, 4], 0.2).to_dtype(DType::F32).unwrap();
    let (out, h) = m.forward(&x, Some(&h0)).unwrap();
    assert_eq!(out.shape(), [4, 8]);
    assert_eq!(h.shape(), [4, 4]);
    let (out_b, h_b) = m
        .forward(&x.unsqueeze(1).unwrap(), Some(&h0.unsqueeze(1).unwrap()))
        .unwrap();
    assert_eq!(out.to_vec_f64().unwrap(), out_b.to_vec_f64().unwrap());
    assert_eq!(h.to_vec_f64().unwrap(), h_b.to_vec_f64().unwrap());
}

#[test]
fn empty_batch() {
    // PyTorch: nn.LSTM(3, 4, 2)(torch.zeros(5, 0, 3)) gives output (5, 0, 4), h_n (2, 0, 4).
    let m = LSTM::new(3, 4, RNNOptions::default().num_layers(2)).unwrap();
    let x = Tensor::zeros(&[5, 0, 3], DType::F32, Device::Cpu)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let (out, (h, c)) = m.forward(&x, None).unwrap();
    assert_eq!(out.shape(), [5, 0, 4]);
    assert_eq!(h.shape(), [2, 0, 4]);
    assert_eq!(c.shape(), [2, 0, 4]);
    out.sum_all().unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().shape(), [5, 0, 3]);
}

/// An LSTM has to remember the first element of a sequence to the end: the loss of an
/// LSTM + Linear head trained with Adam must fall well below its start.
#[test]
fn lstm_learns_to_remember_the_first_step() -> Result<()> {
    use tinytorch::nn::functional::mse_loss;
    use tinytorch::nn::{Linear, Reduction};
    use tinytorch::optim::{Adam, AdamOptions, Optimizer};
    let lstm = LSTM::new(1, 8, RNNOptions::default().batch_first(true))?;
    let head = Linear::new(8, 1, true)?;
    let mut params = lstm.parameters();
    params.extend(head.parameters());
    // The parameters are drawn again from a generator of the test's own (PyTorch's default
    // bound 1/sqrt(hidden)): the default generator is shared with the tests running beside
    // this one, so `manual_seed` alone would not fix the start (and the result) of the run.
    let mut init_gen = tinytorch::Generator::new(0);
    for p in &params {
        tinytorch::nn::init::uniform_with(p, -1.0 / 8f64.sqrt(), 1.0 / 8f64.sqrt(), &mut init_gen)?;
    }
    let mut opt = Adam::new(
        params,
        AdamOptions {
            lr: 0.03,
            ..Default::default()
        },
    )?;
    // The batches come from a generator of the test's own too.
    let mut data_gen = tinytorch::Generator::new(0);
    let mut losses = Vec::new();
    for _ in 0..200 {
        let x = Tensor::rand_with(&[32, 6, 1], DType::F32, Device::Cpu, &mut data_gen)?
            .mul_scalar(2.0)?
            .add_scalar(-1.0)?;
        let target = x.select(1, 0)?;
        let (out, _) = lstm.forward(&x, None)?;
        let pred = head.forward(&out.select(1, -1)?)?;
        let loss = mse_loss(&pred, &target, Reduction::Mean)?;
        opt.zero_grad();
        loss.backward()?;
        opt.step()?;
        losses.push(loss.item::<f32>()?);
    }
    let first: f32 = losses[..10].iter().sum::<f32>() / 10.0;
    let last: f32 = losses[losses.len() - 10..].iter().sum::<f32>() / 10.0;
    assert!(last < 0.2 * first, "loss fell from {first} only to {last}");
    Ok(())
}

/// A long sequence (past the step-splitting threshold) through `GRU` agrees with a naive loop
/// of `GRUCell` steps on the same weights, in values and in gradients.
#[test]
fn long_sequence_matches_a_loop_of_cells() {
    manual_seed(5);
    let len = 21;
    let m = GRU::new(3, 4, RNNOptions::default().dtype(DType::F64)).unwrap();
    let mut cell = GRUCell::new_with(3, 4, true, DType::F64, Device::Cpu).unwrap();
    cell.weights = m.weights()[0].clone();
    let x = det(&[len, 2, 3], 0.45).requires_grad_(true).unwrap();
    let (out, _) = m.forward(&x, None).unwrap();
    let weight = det(&[len, 2, 4], 0.13);
    out.mul(&weight)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    let gx = x.grad().unwrap().to_vec_f64().unwrap();
    let gw = m.weights()[0]
        .weight_ih
        .grad()
        .unwrap()
        .to_vec_f64()
        .unwrap();
    m.zero_grad();

    let x2 = x.detach().requires_grad_(true).unwrap();
    let mut h: Option<Tensor> = None;
    let mut steps = Vec::new();
    for t in 0..len {
        let next = cell
            .forward(&x2.select(0, t as isize).unwrap(), h.as_ref())
            .unwrap();
        steps.push(next.clone());
        h = Some(next);
    }
    let out2 = Tensor::stack(&steps.iter().collect::<Vec<_>>(), 0).unwrap();
    let close = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12);
    assert!(close(
        &out.to_vec_f64().unwrap(),
        &out2.to_vec_f64().unwrap()
    ));
    out2.mul(&weight)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    assert!(close(&gx, &x2.grad().unwrap().to_vec_f64().unwrap()));
    let gw2 = cell.weights.weight_ih.grad().unwrap().to_vec_f64().unwrap();
    assert!(close(&gw, &gw2));
}
