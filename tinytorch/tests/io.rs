//! tinytorch::io: safetensors round trips of every dtype, interchange with PyTorch through
//! committed fixtures (scripts/fixtures/gen_io_fixtures.py), module save/load, checkpoints that resume
//! training bit-identically, and the errors for missing, truncated and corrupt files.
//! (The crash-during-save tests live next to the atomic writer, in src/io.)

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use tinytorch::io::{
    deserialize_safetensors, load_checkpoint, load_module, load_safetensors,
    load_safetensors_with_metadata, save_checkpoint, save_module, save_safetensors,
    save_safetensors_with_metadata, serialize_safetensors, Checkpoint,
};
use tinytorch::nn::{BatchNorm2d, Conv2d, Flatten, Linear, Module, ReLU, Sequential};
use tinytorch::ops::ConvPadding;
use tinytorch::optim::lr_scheduler::{LrScheduler, PlateauOptions, ReduceLROnPlateau, StepLR};
use tinytorch::optim::{Adam, AdamOptions, Optimizer, SgdOptions, StateValue, SGD};
use tinytorch::tensor::get_rng_state;
use tinytorch::{DType, Device, Generator, Tensor};

/// The folder of this file's fixtures.
fn fixtures() -> PathBuf {
    common::fixture_path("io")
}

/// A fresh scratch directory for one test, removed when the test ends.
struct Scratch(PathBuf);

impl Scratch {
    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("tinytorch-io-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

fn map(items: Vec<(&str, Tensor)>) -> BTreeMap<String, Tensor> {
    items.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// The interchange tensors; scripts/fixtures/gen_io_fixtures.py `expected()` builds the same ones.
fn expected() -> BTreeMap<String, Tensor> {
    let f = |v: &[f64], d: DType| Tensor::from_slice(v).to_dtype(d).unwrap();
    map(vec![
        // A transposed, non-contiguous view: saved as its contiguous values.
        (
            "f32",
            Tensor::arange(0.0, 6.0, 1.0, DType::F32, Device::Cpu)
                .unwrap()
                .reshape(&[2, 3])
                .unwrap()
                .t()
                .unwrap(),
        ),
        ("f64", Tensor::from_slice(&[0.1f64, -2.5, 1e300])),
        ("f16", f(&[1.0, -0.5, 65504.0], DType::F16)),
        ("bf16", f(&[1.0, -0.5, 256.0], DType::BF16)),
        ("i64", Tensor::from_slice(&[-(1i64 << 62), 0, 7])),
        ("u8", Tensor::from_slice(&[0u8, 255, 7])),
        ("bool", Tensor::from_slice(&[true, false, true])),
        ("scalar", Tensor::scalar(3.5f32)),
        (
            "empty",
            Tensor::zeros(&[0, 3], DType::F32, Device::Cpu).unwrap(),
        ),
    ])
}

fn metadata() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("creator".to_string(), "tinytorch".to_string()),
        ("format".to_string(), "pt".to_string()),
    ])
}

/// Same dtype, shape and bit-identical values.
fn assert_same(name: &str, got: &Tensor, want: &Tensor) {
    assert_eq!(got.dtype(), want.dtype(), "{name}: dtype");
    assert_eq!(got.shape(), want.shape(), "{name}: shape");
    let bits = |t: &Tensor| -> Vec<u64> {
        t.to_vec_f64()
            .unwrap()
            .into_iter()
            .map(f64::to_bits)
            .collect()
    };
    assert_eq!(bits(got), bits(want), "{name}: values");
}

fn assert_same_maps(got: &BTreeMap<String, Tensor>, want: &BTreeMap<String, Tensor>) {
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    for (k, w) in want {
        assert_same(k, &got[k], w);
    }
}

fn err_text<T: std::fmt::Debug>(r: tinytorch::Result<T>) -> String {
    r.expect_err("expected an error").to_string()
}

// ---- safetensors round trips -----------------------------------------------------------------

#[test]
fn every_dtype_0d_and_empty_round_trip() {
    let dir = scratch("dtypes");
    let path = dir.join("t.safetensors");
    let tensors = expected();
    save_safetensors_with_metadata(&path, &tensors, &metadata()).unwrap();
    let (back, meta) = load_safetensors_with_metadata(&path).unwrap();
    assert_same_maps(&back, &tensors);
    assert_eq!(meta, metadata());
    for t in back.values() {
        assert!(t.is_contiguous());
        assert_eq!(t.device(), Device::Cpu);
    }
    // Without metadata: load_safetensors, and an empty metadata map.
    save_safetensors(&path, &tensors).unwrap();
    assert_same_maps(&load_safetensors(&path).unwrap(), &tensors);
    assert!(load_safetensors_with_metadata(&path).unwrap().1.is_empty());
}

#[test]
fn special_float_values_keep_their_bits() {
    let v = [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        -0.0,
        5e-324,
        f64::MAX,
    ];
    let tensors = map(vec![
        ("f64", Tensor::from_slice(&v)),
        ("f32", Tensor::from_slice(&v).to_dtype(DType::F32).unwrap()),
        ("f16", Tensor::from_slice(&v).to_dtype(DType::F16).unwrap()),
        (
            "bf16",
            Tensor::from_slice(&v).to_dtype(DType::BF16).unwrap(),
        ),
    ]);
    let (back, _) =
        deserialize_safetensors(&serialize_safetensors(&tensors, &BTreeMap::new()).unwrap())
            .unwrap();
    assert_same_maps(&back, &tensors);
}

#[test]
fn non_contiguous_views_are_saved_contiguous() {
    let base = Tensor::arange(0.0, 12.0, 1.0, DType::F64, Device::Cpu).unwrap();
    let tensors = map(vec![
        ("strided", base.slice(0, Some(1), None, 3).unwrap()),
        (
            "permuted",
            base.reshape(&[2, 3, 2])
                .unwrap()
                .permute(&[2, 0, 1])
                .unwrap(),
        ),
        (
            "expanded",
            Tensor::from_slice(&[1i64, 2]).expand(&[3, 2]).unwrap(),
        ),
        (
            "narrowed",
            base.reshape(&[3, 4]).unwrap().narrow(1, 1, 2).unwrap(),
        ),
    ]);
    for t in tensors.values() {
        assert!(!t.is_contiguous());
    }
    let (back, _) =
        deserialize_safetensors(&serialize_safetensors(&tensors, &BTreeMap::new()).unwrap())
            .unwrap();
    assert_same_maps(&back, &tensors);
    assert_eq!(
        back["strided"].to_vec::<f64>().unwrap(),
        vec![1.0, 4.0, 7.0, 10.0]
    );
    assert_eq!(
        back["expanded"].to_vec::<i64>().unwrap(),
        vec![1, 2, 1, 2, 1, 2]
    );
}

#[test]
fn grad_tensors_are_saved_by_value() {
    let w = Tensor::from_slice(&[1.0f32, 2.0])
        .requires_grad_(true)
        .unwrap();
    let y = w.mul_scalar(3.0).unwrap();
    let (back, _) = deserialize_safetensors(
        &serialize_safetensors(&map(vec![("y", y)]), &BTreeMap::new()).unwrap(),
    )
    .unwrap();
    assert!(!back["y"].requires_grad());
    assert_eq!(back["y"].to_vec::<f32>().unwrap(), vec![3.0, 6.0]);
}

// ---- agreement with the reference `safetensors` crate ---------------------------------------

#[test]
fn reference_reader_accepts_our_files() {
    let tensors = expected();
    let bytes = serialize_safetensors(&tensors, &metadata()).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let names: Vec<String> = {
        let mut n: Vec<String> = st.names().into_iter().map(String::from).collect();
        n.sort();
        n
    };
    assert_eq!(names, tensors.keys().cloned().collect::<Vec<_>>());
    let view = st.tensor("f32").unwrap();
    assert_eq!(view.dtype(), safetensors::Dtype::F32);
    assert_eq!(view.shape(), &[3, 2]);
    let values: Vec<f32> = view
        .data()
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(values, vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    assert_eq!(st.tensor("bool").unwrap().data(), &[1, 0, 1]);
    assert_eq!(st.tensor("scalar").unwrap().shape(), &[] as &[usize]);
    assert_eq!(st.tensor("empty").unwrap().shape(), &[0, 3]);
    let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
    let meta: BTreeMap<String, String> = meta.metadata().clone().unwrap().into_iter().collect();
    assert_eq!(meta, metadata());
}

#[test]
fn we_read_reference_writer_files() {
    use safetensors::tensor::TensorView;
    use safetensors::Dtype;
    let i64_bytes: Vec<u8> = [-3i64, 9].iter().flat_map(|x| x.to_le_bytes()).collect();
    let f64_bytes: Vec<u8> = [0.25f64].iter().flat_map(|x| x.to_le_bytes()).collect();
    let u8_bytes = vec![1u8, 2, 3, 4];
    let views = vec![
        (
            "a",
            TensorView::new(Dtype::I64, vec![2], &i64_bytes).unwrap(),
        ),
        (
            "b",
            TensorView::new(Dtype::F64, vec![], &f64_bytes).unwrap(),
        ),
        (
            "c",
            TensorView::new(Dtype::U8, vec![2, 2], &u8_bytes).unwrap(),
        ),
    ];
    let meta = HashMap::from([("k".to_string(), "v".to_string())]);
    let bytes = safetensors::serialize(views, Some(meta)).unwrap();
    let (back, meta) = deserialize_safetensors(&bytes).unwrap();
    assert_eq!(back["a"].to_vec::<i64>().unwrap(), vec![-3, 9]);
    assert_eq!(back["b"].shape(), &[] as &[usize]);
    assert_eq!(back["b"].item::<f64>().unwrap(), 0.25);
    assert_eq!(back["c"].to_vec::<u8>().unwrap(), vec![1, 2, 3, 4]);
    assert_eq!(back["c"].shape(), &[2, 2]);
    assert_eq!(meta["k"], "v");
}

// ---- interchange with PyTorch ----------------------------------------------------------------

#[test]
fn loads_pytorch_written_tensors_of_every_dtype() {
    // Written by safetensors.torch.save_file in scripts/fixtures/gen_io_fixtures.py.
    let (got, meta) =
        load_safetensors_with_metadata(fixtures().join("torch_dtypes.safetensors")).unwrap();
    assert_same_maps(&got, &expected());
    assert_eq!(meta, metadata());
}

#[test]
fn writes_the_bytes_pytorch_verified() {
    // tinytorch_written.safetensors was written by this test (with
    // TINYTORCH_REGEN_IO_FIXTURES=1) and scripts/fixtures/gen_io_fixtures.py checked that
    // safetensors.torch.load_file reads it back with PyTorch's dtypes, shapes and values equal
    // to its `expected()`. Writing the same bytes again means PyTorch still reads our files.
    let path = fixtures().join("tinytorch_written.safetensors");
    if std::env::var_os("TINYTORCH_REGEN_IO_FIXTURES").is_some() {
        save_safetensors_with_metadata(&path, &expected(), &metadata()).unwrap();
    }
    let committed = std::fs::read(&path).unwrap();
    let ours = serialize_safetensors(&expected(), &metadata()).unwrap();
    assert_eq!(ours, committed);
}

/// TinyTorch's equivalent of the fixture script's `Net` (conv -> 0, bn -> 1, fc -> 4).
fn net() -> Sequential {
    Sequential::new(vec![
        Box::new(
            Conv2d::new(
                2,
                3,
                [3, 3],
                [1, 1],
                ConvPadding::Explicit(1, 1),
                [1, 1],
                1,
                true,
            )
            .unwrap(),
        ),
        Box::new(BatchNorm2d::new(3).unwrap()),
        Box::new(ReLU::new()),
        Box::new(Flatten::default()),
        Box::new(Linear::new(48, 5, true).unwrap()),
    ])
}

#[test]
fn pytorch_state_dict_gives_pytorchs_forward() {
    let mut model = net();
    load_module(fixtures().join("torch_model.safetensors"), &model, true).unwrap();
    model.eval();
    let io = load_safetensors(fixtures().join("torch_model_io.safetensors")).unwrap();
    let y = model.forward(&io["input"]).unwrap();
    let (got, want) = (y.to_vec_f64().unwrap(), io["output"].to_vec_f64().unwrap());
    assert_eq!(y.shape(), io["output"].shape());
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() < 1e-5, "{got:?} vs PyTorch {want:?}");
    }
    // The i64 batch counter came through too (two training batches in the script).
    let sd = model.state_dict();
    assert_eq!(sd["1.num_batches_tracked"].item::<i64>().unwrap(), 2);
}

// ---- modules ---------------------------------------------------------------------------------

#[test]
fn save_module_then_load_module_copies_every_value() {
    let dir = scratch("module");
    let path = dir.join("net.safetensors");
    let a = net();
    save_module(&path, &a).unwrap();
    let b = net();
    load_module(&path, &b, true).unwrap();
    assert_same_maps(&b.state_dict(), &a.state_dict());
    // The handles are the same parameters as before (values copied in place).
    assert!(b.parameters()[0].requires_grad());
}

#[test]
fn load_module_reports_key_and_shape_problems() {
    let dir = scratch("module-errors");
    let path = dir.join("lin.safetensors");
    let lin = Linear::new(3, 2, true).unwrap();
    save_safetensors(
        &path,
        &map(vec![("weight", lin.state_dict()["weight"].clone())]),
    )
    .unwrap();
    // Strict: "bias" is missing.
    let msg = err_text(load_module(&path, &lin, true));
    assert!(
        msg.contains("missing keys") && msg.contains("bias"),
        "{msg}"
    );
    // Not strict: the weight alone loads.
    load_module(&path, &lin, false).unwrap();
    // A shape mismatch is always an error.
    let other = Linear::new(4, 2, true).unwrap();
    let msg = err_text(load_module(&path, &other, false));
    assert!(msg.contains("weight") && msg.contains("[2, 3]"), "{msg}");
}

// ---- errors ----------------------------------------------------------------------------------

fn write_bytes(dir: &Scratch, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// A file with the given JSON header and data bytes.
fn raw_file(header: &str, data: &[u8]) -> Vec<u8> {
    let mut b = (header.len() as u64).to_le_bytes().to_vec();
    b.extend(header.as_bytes());
    b.extend(data);
    b
}

#[test]
fn missing_file_is_an_error_naming_it() {
    let msg = err_text(load_safetensors("/nonexistent/dir/weights.safetensors"));
    assert!(
        msg.contains("load_safetensors") && msg.contains("/nonexistent/dir/weights.safetensors"),
        "{msg}"
    );
    let msg = err_text(load_checkpoint("/nonexistent/ckpt.safetensors"));
    assert!(msg.contains("/nonexistent/ckpt.safetensors"), "{msg}");
}

#[test]
fn save_into_a_missing_directory_is_an_error_naming_the_file() {
    let dir = scratch("save-missing");
    let path = dir.join("no/such/dir/w.safetensors");
    let msg = err_text(save_safetensors(&path, &expected()));
    assert!(
        msg.contains("save_safetensors") && msg.contains("w.safetensors"),
        "{msg}"
    );
}

#[test]
fn truncated_files_are_errors() {
    let dir = scratch("truncated");
    let bytes = serialize_safetensors(&expected(), &BTreeMap::new()).unwrap();
    let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    for cut in [
        0,
        5,
        8 + header_len / 2,
        8 + header_len + 3,
        bytes.len() - 1,
    ] {
        let path = write_bytes(&dir, "cut.safetensors", &bytes[..cut]);
        let msg = err_text(load_safetensors(&path));
        assert!(
            msg.contains("truncated") && msg.contains("cut.safetensors"),
            "cut at {cut}: {msg}"
        );
    }
}

#[test]
fn corrupt_headers_are_errors() {
    let dir = scratch("corrupt");
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (raw_file("this is not json", b""), "corrupt header"),
        (raw_file("[1, 2]", b""), "corrupt header"),
        (u64::MAX.to_le_bytes().to_vec(), "corrupt header"),
        (
            raw_file(r#"{"x": {"shape": [1], "data_offsets": [0, 4]}}"#, &[0; 4]),
            "dtype",
        ),
        (
            raw_file(
                r#"{"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}"#,
                &[0; 4],
            ),
            "do not match",
        ),
        (
            raw_file(
                r#"{"x": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}}"#,
                &[0; 4],
            ),
            "data_offsets",
        ),
        (
            raw_file(
                r#"{"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}"#,
                &[0; 8],
            ),
            "do not cover",
        ),
        (
            raw_file(
                r#"{"x": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
                    "y": {"dtype": "U8", "shape": [2], "data_offsets": [1, 3]}}"#,
                &[0; 3],
            ),
            "overlap",
        ),
        (
            raw_file(
                r#"{"__metadata__": {"a": 1}, "x": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}"#,
                &[0],
            ),
            "corrupt header",
        ),
    ];
    for (bytes, want) in cases {
        let path = write_bytes(&dir, "bad.safetensors", &bytes);
        let msg = err_text(load_safetensors(&path));
        assert!(
            msg.contains(want) && msg.contains("bad.safetensors"),
            "expected '{want}' in: {msg}"
        );
    }
}

#[test]
fn unknown_dtypes_are_errors_naming_the_dtype() {
    let dir = scratch("dtype");
    // Dtypes of the format that TinyTorch lacks name the tensor; a name outside the format is
    // a corrupt header, whose message still quotes it.
    for (dtype, len) in [("I16", 2), ("F8_E4M3", 4)] {
        let header =
            format!(r#"{{"w": {{"dtype": "{dtype}", "shape": [{len}], "data_offsets": [0, 4]}}}}"#);
        let path = write_bytes(&dir, "odd.safetensors", &raw_file(&header, &[0; 4]));
        let msg = err_text(load_safetensors(&path));
        assert!(
            msg.contains(dtype) && msg.contains("'w'") && msg.contains("odd.safetensors"),
            "{msg}"
        );
    }
    let header = r#"{"w": {"dtype": "Q4_K", "shape": [1], "data_offsets": [0, 4]}}"#;
    let path = write_bytes(&dir, "odd.safetensors", &raw_file(header, &[0; 4]));
    let msg = err_text(load_safetensors(&path));
    assert!(
        msg.contains("Q4_K") && msg.contains("corrupt header"),
        "{msg}"
    );
}

#[test]
fn reserved_metadata_name_cannot_be_a_tensor() {
    let msg = err_text(serialize_safetensors(
        &map(vec![("__metadata__", Tensor::scalar(1.0f32))]),
        &BTreeMap::new(),
    ));
    assert!(msg.contains("__metadata__"), "{msg}");
}

// ---- checkpoints -----------------------------------------------------------------------------

fn mlp() -> Sequential {
    Sequential::new(vec![
        Box::new(Linear::new(4, 8, true).unwrap()),
        Box::new(ReLU::new()),
        Box::new(Linear::new(8, 2, true).unwrap()),
    ])
}

/// `steps` optimizer steps on batches drawn from `gen`, with a scheduler step after each.
fn train(
    model: &Sequential,
    opt: &mut dyn Optimizer,
    sched: &mut dyn LrScheduler,
    gen: &mut Generator,
    steps: usize,
) {
    for _ in 0..steps {
        let x = Tensor::randn_with(&[5, 4], DType::F32, Device::Cpu, gen).unwrap();
        let t = Tensor::randn_with(&[5, 2], DType::F32, Device::Cpu, gen).unwrap();
        let loss = model
            .forward(&x)
            .unwrap()
            .sub(&t)
            .unwrap()
            .square()
            .unwrap()
            .mean_all()
            .unwrap();
        opt.zero_grad();
        loss.backward().unwrap();
        opt.step().unwrap();
        sched.step(opt).unwrap();
    }
}

fn snapshot(
    model: &Sequential,
    opt: &dyn Optimizer,
    sched: &StepLR,
    gen: &Generator,
) -> Checkpoint {
    // state_dict() shares storage with the parameters: copy, since training goes on.
    let model: BTreeMap<String, Tensor> = model
        .state_dict()
        .into_iter()
        .map(|(k, v)| (k, v.contiguous_copy().unwrap()))
        .collect();
    // A moving average stands beside the weights (here simply their halves).
    let ema = model
        .iter()
        .map(|(k, v)| (k.clone(), v.mul_scalar(0.5).unwrap()))
        .collect();
    Checkpoint {
        model,
        ema,
        optimizer: Some(opt.state_dict()),
        scheduler: Some(sched.state_dict()),
        scheduler_extra: BTreeMap::from([("best".to_string(), f64::INFINITY)]),
        rng: BTreeMap::from([
            ("global".to_string(), get_rng_state()),
            ("loader".to_string(), gen.state()),
        ]),
        epoch: 1,
        step: 3,
        extra: BTreeMap::from([("model".to_string(), "mlp 4-8-2".to_string())]),
    }
}

/// Train 3 steps, checkpoint, train 3 more; then resume fresh objects from the checkpoint
/// and train the same 3 steps: parameters, optimizer state and lrs must be bit-identical.
fn resume_is_bit_identical(make_opt: impl Fn(Vec<Tensor>) -> Box<dyn Optimizer>, name: &str) {
    let dir = scratch(name);
    let path = dir.join("ckpt.safetensors");

    let model = mlp();
    let mut opt = make_opt(model.parameters());
    let mut sched = StepLR::new(opt.as_mut(), 2, 0.5).unwrap();
    let mut gen = Generator::new(7);
    train(&model, opt.as_mut(), &mut sched, &mut gen, 3);
    let saved = snapshot(&model, opt.as_ref(), &sched, &gen);
    save_checkpoint(&path, &saved).unwrap();
    train(&model, opt.as_mut(), &mut sched, &mut gen, 3);

    let ckpt = load_checkpoint(&path).unwrap();
    assert_checkpoints_equal(&ckpt, &saved);
    let resumed = mlp();
    let state: HashMap<String, Tensor> = ckpt.model.clone().into_iter().collect();
    resumed.load_state_dict(&state, true).unwrap();
    let mut opt2 = make_opt(resumed.parameters());
    opt2.load_state_dict(ckpt.optimizer.as_ref().unwrap())
        .unwrap();
    let mut sched2 = StepLR::new(opt2.as_mut(), 2, 0.5).unwrap();
    sched2
        .load_state_dict(ckpt.scheduler.as_ref().unwrap())
        .unwrap();
    let mut gen2 = Generator::new(12345);
    gen2.set_state(&ckpt.rng["loader"]);
    train(&resumed, opt2.as_mut(), &mut sched2, &mut gen2, 3);

    assert_same_maps(&resumed.state_dict(), &model.state_dict());
    assert_eq!(opt2.lrs(), opt.lrs());
    assert_eq!(sched2.get_last_lr(), sched.get_last_lr());
    assert_eq!(sched2.last_epoch(), 6);
    let (s1, s2) = (opt.state_dict(), opt2.state_dict());
    for (i, st) in &s1.state {
        for (k, v) in st {
            match (v, &s2.state[i][k]) {
                (StateValue::Tensor(a), StateValue::Tensor(b)) => assert_same(k, b, a),
                (StateValue::Scalar(a), StateValue::Scalar(b)) => assert_eq!(a, b, "{k}"),
                _ => panic!("state {k} changed kind"),
            }
        }
    }
}

fn assert_checkpoints_equal(got: &Checkpoint, want: &Checkpoint) {
    assert_same_maps(&got.model, &want.model);
    assert_same_maps(&got.ema, &want.ema);
    assert_eq!(got.epoch, want.epoch);
    assert_eq!(got.step, want.step);
    assert_eq!(got.extra, want.extra);
    assert_eq!(got.rng, want.rng);
    assert_eq!(got.scheduler_extra, want.scheduler_extra);
    let (gs, ws) = (
        got.scheduler.as_ref().unwrap(),
        want.scheduler.as_ref().unwrap(),
    );
    assert_eq!(
        (&gs.base_lrs, gs.last_epoch, &gs.last_lr),
        (&ws.base_lrs, ws.last_epoch, &ws.last_lr)
    );
    let (go, wo) = (
        got.optimizer.as_ref().unwrap(),
        want.optimizer.as_ref().unwrap(),
    );
    assert_eq!(go.param_groups.len(), wo.param_groups.len());
    for (g, w) in go.param_groups.iter().zip(&wo.param_groups) {
        assert_eq!(
            (g.lr.to_bits(), &g.options, &g.params),
            (w.lr.to_bits(), &w.options, &w.params)
        );
    }
    assert_eq!(
        go.state.keys().collect::<Vec<_>>(),
        wo.state.keys().collect::<Vec<_>>()
    );
    for (i, ws) in &wo.state {
        assert_eq!(
            go.state[i].keys().collect::<Vec<_>>(),
            ws.keys().collect::<Vec<_>>()
        );
        for (k, v) in ws {
            match (&go.state[i][k], v) {
                (StateValue::Tensor(a), StateValue::Tensor(b)) => assert_same(k, a, b),
                (StateValue::Scalar(a), StateValue::Scalar(b)) => {
                    assert_eq!(a.to_bits(), b.to_bits(), "{k}")
                }
                _ => panic!("state {k} changed kind"),
            }
        }
    }
}

#[test]
fn sgd_momentum_checkpoint_resumes_bit_identically() {
    resume_is_bit_identical(
        |p| {
            Box::new(
                SGD::new(
                    p,
                    SgdOptions {
                        lr: 0.1,
                        momentum: 0.9,
                        weight_decay: 1e-3,
                        ..Default::default()
                    },
                )
                .unwrap(),
            )
        },
        "sgd",
    );
}

#[test]
fn adam_checkpoint_resumes_bit_identically() {
    resume_is_bit_identical(
        |p| {
            Box::new(
                Adam::new(
                    p,
                    AdamOptions {
                        lr: 0.01,
                        amsgrad: true,
                        ..Default::default()
                    },
                )
                .unwrap(),
            )
        },
        "adam",
    );
}

#[test]
fn checkpoint_model_tensors_are_a_plain_prefixed_state_dict() {
    let dir = scratch("ckpt-plain");
    let path = dir.join("ckpt.safetensors");
    let model = mlp();
    let ckpt = Checkpoint {
        model: model.state_dict(),
        ..Default::default()
    };
    save_checkpoint(&path, &ckpt).unwrap();
    let (tensors, meta) = load_safetensors_with_metadata(&path).unwrap();
    assert_eq!(meta["format"], "tinytorch.checkpoint");
    assert!(tensors.keys().all(|k| k.starts_with("model.")));
    assert_same(
        "0.weight",
        &tensors["model.0.weight"],
        &model.state_dict()["0.weight"],
    );
    let back = load_checkpoint(&path).unwrap();
    assert!(back.optimizer.is_none() && back.scheduler.is_none() && back.rng.is_empty());
    assert_eq!((back.epoch, back.step), (0, 0));
}

#[test]
fn checkpoint_errors_name_the_file_and_the_problem() {
    let dir = scratch("ckpt-errors");
    // A plain state dict is not a checkpoint.
    let plain = dir.join("plain.safetensors");
    save_safetensors(&plain, &expected()).unwrap();
    let msg = err_text(load_checkpoint(&plain));
    assert!(
        msg.contains("not a TinyTorch checkpoint") && msg.contains("plain.safetensors"),
        "{msg}"
    );
    // Checkpoint metadata with fields missing.
    let partial = dir.join("partial.safetensors");
    let meta = BTreeMap::from([
        ("format".to_string(), "tinytorch.checkpoint".to_string()),
        ("version".to_string(), "1".to_string()),
        (
            "checkpoint".to_string(),
            r#"{"optimizer": null}"#.to_string(),
        ),
    ]);
    save_safetensors_with_metadata(&partial, &BTreeMap::new(), &meta).unwrap();
    let msg = err_text(load_checkpoint(&partial));
    assert!(
        msg.contains("missing field") && msg.contains("partial.safetensors"),
        "{msg}"
    );
    // Unparseable checkpoint JSON, and an unknown layout version.
    for (key, value, want) in [
        ("checkpoint", "{not json", "corrupt checkpoint metadata"),
        ("version", "99", "version 99"),
    ] {
        let mut m = meta.clone();
        m.insert(key.to_string(), value.to_string());
        save_safetensors_with_metadata(&partial, &BTreeMap::new(), &m).unwrap();
        let msg = err_text(load_checkpoint(&partial));
        assert!(msg.contains(want), "{msg}");
    }
    // Tensors outside the checkpoint layout.
    let good = Checkpoint::default();
    save_checkpoint(&partial, &good).unwrap();
    let (mut tensors, meta) = load_safetensors_with_metadata(&partial).unwrap();
    tensors.insert("stray".to_string(), Tensor::scalar(1.0f32));
    save_safetensors_with_metadata(&partial, &tensors, &meta).unwrap();
    let msg = err_text(load_checkpoint(&partial));
    assert!(msg.contains("unexpected tensor 'stray'"), "{msg}");
    // A truncated checkpoint.
    save_checkpoint(&partial, &good).unwrap();
    let bytes = std::fs::read(&partial).unwrap();
    std::fs::write(&partial, &bytes[..bytes.len() / 2]).unwrap();
    let msg = err_text(load_checkpoint(&partial));
    assert!(msg.contains("truncated"), "{msg}");
}

#[test]
fn plateau_scheduler_state_travels_in_scheduler_extra() {
    let dir = scratch("plateau");
    let path = dir.join("ckpt.safetensors");
    let w = Tensor::from_slice(&[1.0f32, 2.0])
        .requires_grad_(true)
        .unwrap();
    let make = |w: &Tensor| {
        let opt = SGD::new(
            vec![w.clone()],
            SgdOptions {
                lr: 1.0,
                ..Default::default()
            },
        )
        .unwrap();
        let opts = PlateauOptions {
            patience: 1,
            factor: 0.5,
            cooldown: 1,
            ..Default::default()
        };
        let plateau = ReduceLROnPlateau::new(&opt, opts).unwrap();
        (opt, plateau)
    };
    let (mut opt, mut plateau) = make(&w);
    for m in [1.0, 1.0, 1.0] {
        plateau.step(&mut opt, m).unwrap();
    }
    let ckpt = Checkpoint {
        optimizer: Some(opt.state_dict()),
        scheduler_extra: plateau.state_dict(),
        ..Default::default()
    };
    save_checkpoint(&path, &ckpt).unwrap();
    let metrics = [0.9, 0.95, 0.95, 0.95, 0.95];
    let mut want = Vec::new();
    for m in metrics {
        plateau.step(&mut opt, m).unwrap();
        want.push(opt.lrs()[0]);
    }

    let back = load_checkpoint(&path).unwrap();
    let (mut opt2, mut plateau2) = make(&w);
    opt2.load_state_dict(back.optimizer.as_ref().unwrap())
        .unwrap();
    plateau2.load_state_dict(&back.scheduler_extra).unwrap();
    // Restored after the first reduction (1.0 -> 0.5), before stepping again.
    assert_eq!(plateau2.get_last_lr(), vec![0.5]);
    assert!(want.iter().any(|&lr| lr < 0.5), "{want:?}");
    let mut got = Vec::new();
    for m in metrics {
        plateau2.step(&mut opt2, m).unwrap();
        got.push(opt2.lrs()[0]);
    }
    assert_eq!(got, want);
    // A state map without the plateau's entries is refused.
    let msg = err_text(plateau2.load_state_dict(&BTreeMap::new()));
    assert!(msg.contains("missing"), "{msg}");
}

#[test]
fn scheduler_state_for_other_group_count_is_refused() {
    let w = Tensor::from_slice(&[1.0f32]).requires_grad_(true).unwrap();
    let mut opt = SGD::new(vec![w], SgdOptions::default()).unwrap();
    let mut sched = StepLR::new(&mut opt, 2, 0.5).unwrap();
    let mut state = sched.state_dict();
    state.base_lrs.push(0.1);
    state.last_lr.push(0.1);
    let msg = err_text(sched.load_state_dict(&state));
    assert!(msg.contains("2 param groups"), "{msg}");
}
