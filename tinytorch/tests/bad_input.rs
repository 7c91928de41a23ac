//! The bad-input matrix of the Rust API: one table of calls a careless or hostile caller
//! makes — wrong shapes, dtypes and devices, out-of-range and negative indices, NaN and
//! infinite values where they matter, zero-size tensors, empty data sets, conflicting
//! options, corrupt files — each of which must return an `Err` whose message names the
//! operation and the offending values. A panic, a hang or an `Ok` fails the row.
//! (tests/errors.rs checks the error kinds of the core ops in more detail.)

mod common;

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use tinytorch::data::{DataLoader, DataLoaderOptions, TensorDataset};
use tinytorch::io::{deserialize_checkpoint, deserialize_safetensors, load_safetensors};
use tinytorch::nn::functional::{cross_entropy, embedding, layer_norm, mse_loss, nll_loss};
use tinytorch::nn::{Conv2d, Embedding, Linear, Module, Reduction};
use tinytorch::ops::ConvPadding;
use tinytorch::optim::{clip_grad_norm_, Adam, AdamOptions, SgdOptions, SGD};
use tinytorch::text::{tokenizer_from_json, BpeTokenizer, CharTokenizer, Tokenizer};
use tinytorch::train::{cross_entropy_loss, StepOptions, Trainer};
use tinytorch::{DType, Device, Result, Tensor};

/// One row: what is tried, the words its error must contain, and the call.
struct Row {
    what: &'static str,
    needles: &'static [&'static str],
    call: Box<dyn Fn() -> Result<()>>,
}

fn row<T>(
    what: &'static str,
    needles: &'static [&'static str],
    call: impl Fn() -> Result<T> + 'static,
) -> Row {
    Row {
        what,
        needles,
        call: Box::new(move || call().map(drop)),
    }
}

/// Whether a CUDA device is present (rows that need one are skipped without it).
fn gpu_present() -> bool {
    #[cfg(feature = "cuda")]
    return tinytorch::backend::cuda::device::is_available();
    #[cfg(not(feature = "cuda"))]
    false
}

/// The Mistral fixture's `tokenizer.json` (a byte-level BPE with Metaspace), parsed.
fn mistral_tokenizer_json() -> Result<serde_json::Value> {
    Ok(common::load_json_fixture(
        "llm_families/mistral/tokenizer.json",
    ))
}

fn f32s(shape: &[usize]) -> Tensor {
    let n = shape.iter().product::<usize>();
    Tensor::from_vec(
        (0..n).map(|i| i as f32 * 0.25 - 1.0).collect::<Vec<_>>(),
        shape,
    )
    .unwrap()
}

fn i64s(values: &[i64]) -> Tensor {
    Tensor::from_slice(values)
}

fn sgd(params: Vec<Tensor>, lr: f64) -> Result<SGD> {
    SGD::new(
        params,
        SgdOptions {
            lr,
            ..Default::default()
        },
    )
}

fn rows() -> Vec<Row> {
    vec![
        // ---- shapes ---------------------------------------------------------------------
        row("matmul inner dims", &["matmul", "[2, 3]", "[4, 5]"], || {
            f32s(&[2, 3]).matmul(&f32s(&[4, 5]))
        }),
        row(
            "bmm batch sizes",
            &["bmm", "[2, 3, 4]", "[3, 4, 5]"],
            || f32s(&[2, 3, 4]).bmm(&f32s(&[3, 4, 5])),
        ),
        row("add without broadcast", &["[2, 3]", "[4]"], || {
            f32s(&[2, 3]).add(&f32s(&[4]))
        }),
        row(
            "reshape element count",
            &["reshape", "[7]", "[2, 3]"],
            || f32s(&[2, 3]).reshape(&[7]),
        ),
        row("reshape two -1", &["reshape", "-1"], || {
            f32s(&[2, 3]).reshape(&[-1, -1])
        }),
        row("cat mismatched dims", &["cat", "[2, 3]", "[2, 4]"], || {
            Tensor::cat(&[&f32s(&[2, 3]), &f32s(&[2, 4])], 0)
        }),
        row("cat nothing", &["cat"], || Tensor::cat(&[], 0)),
        row("expand to a smaller size", &["expand", "[2, 3]"], || {
            f32s(&[2, 3]).expand(&[2, 2])
        }),
        row("Linear in_features", &["linear", "[4, 5]", "3"], || {
            Linear::new(3, 2, true)?.forward(&f32s(&[4, 5]))
        }),
        row("Conv2d in_channels", &["conv2d", "3", "4"], || {
            Conv2d::new(
                3,
                8,
                [3, 3],
                [1, 1],
                ConvPadding::Explicit(0, 0),
                [1, 1],
                1,
                true,
            )?
            .forward(&f32s(&[1, 4, 8, 8]))
        }),
        row("conv2d kernel larger than input", &["conv2d", "5"], || {
            f32s(&[1, 1, 3, 3]).conv2d(
                &f32s(&[1, 1, 5, 5]),
                None,
                [1, 1],
                ConvPadding::Explicit(0, 0),
                [1, 1],
                1,
            )
        }),
        row("conv2d zero stride", &["conv2d", "stride"], || {
            f32s(&[1, 1, 4, 4]).conv2d(
                &f32s(&[1, 1, 3, 3]),
                None,
                [0, 1],
                ConvPadding::Explicit(0, 0),
                [1, 1],
                1,
            )
        }),
        row("layer_norm shape", &["layer_norm", "[5]", "[2, 3]"], || {
            layer_norm(&f32s(&[2, 3]), &[5], None, None, 1e-5)
        }),
        row(
            "cross_entropy batch sizes",
            &["cross_entropy", "[4, 10]", "[3]"],
            || {
                cross_entropy(
                    &f32s(&[4, 10]),
                    &i64s(&[1, 2, 3]),
                    None,
                    -100,
                    Reduction::Mean,
                    0.0,
                )
            },
        ),
        row("mse_loss shapes", &["mse_loss", "[2, 3]", "[3, 2]"], || {
            mse_loss(&f32s(&[2, 3]), &f32s(&[3, 2]), Reduction::Mean)
        }),
        // ---- dtypes ---------------------------------------------------------------------
        row(
            "matmul f32 x f64",
            &["matmul", "float32", "float64"],
            || f32s(&[2, 2]).matmul(&f32s(&[2, 2]).to_dtype(DType::F64)?),
        ),
        row(
            "index_select float index",
            &["index_select", "float32"],
            || f32s(&[3, 2]).index_select(0, &f32s(&[2])),
        ),
        row("embedding float ids", &["embedding", "float32"], || {
            embedding(&f32s(&[2]), &f32s(&[4, 3]), None)
        }),
        row(
            "cross_entropy integer logits",
            &["cross_entropy", "int64"],
            || {
                cross_entropy(
                    &i64s(&[1, 2]).reshape(&[1, 2])?,
                    &i64s(&[0]),
                    None,
                    -100,
                    Reduction::Mean,
                    0.0,
                )
            },
        ),
        row("softmax of integers", &["softmax", "int64"], || {
            i64s(&[1, 2]).softmax(0)
        }),
        // ---- devices --------------------------------------------------------------------
        row("a CUDA tensor without a GPU", &["CUDA"], || {
            if gpu_present() {
                return Err(tinytorch::Error::invalid(
                    "cuda",
                    "GPU present: row not applicable",
                ));
            }
            f32s(&[2]).to_device(Device::Cuda(0))
        }),
        row("a device index past the GPUs", &["CUDA"], || {
            f32s(&[2]).to_device(Device::Cuda(7))
        }),
        // ---- indices --------------------------------------------------------------------
        row(
            "index_select past the end",
            &["index_select", "7", "3"],
            || f32s(&[3, 2]).index_select(0, &i64s(&[7])),
        ),
        row(
            "index_select negative",
            &["index_select", "-4", "3"],
            || f32s(&[3, 2]).index_select(0, &i64s(&[-4])),
        ),
        row("select dim out of range", &["select", "5"], || {
            f32s(&[3, 2]).select(5, 0)
        }),
        row("select negative index", &["select", "-4", "3"], || {
            f32s(&[3, 2]).select(0, -4)
        }),
        row("narrow past the end", &["narrow", "2", "3"], || {
            f32s(&[3, 2]).narrow(0, 2, 3)
        }),
        row("gather past the end", &["gather", "9"], || {
            f32s(&[2, 3]).gather(1, &Tensor::from_vec(vec![0i64, 9], &[2, 1])?)
        }),
        row("scatter past the end", &["scatter", "5"], || {
            f32s(&[2, 3]).scatter(
                1,
                &Tensor::from_vec(vec![5i64, 0], &[2, 1])?,
                &f32s(&[2, 1]),
            )
        }),
        row("transpose dim", &["transpose", "3"], || {
            f32s(&[2, 3]).transpose(0, 3)
        }),
        row("permute repeated dim", &["permute", "[0, 0]"], || {
            f32s(&[2, 3]).permute(&[0, 0])
        }),
        row(
            "embedding id past the table",
            &["embedding", "10", "4"],
            || Embedding::new(4, 3, None)?.forward(&i64s(&[1, 10])),
        ),
        row("embedding negative id", &["embedding", "-1"], || {
            embedding(&i64s(&[-1]), &f32s(&[4, 3]), None)
        }),
        row(
            "cross_entropy class past the logits",
            &["cross_entropy", "10"],
            || {
                cross_entropy(
                    &f32s(&[2, 10]),
                    &i64s(&[1, 10]),
                    None,
                    -100,
                    Reduction::Mean,
                    0.0,
                )
            },
        ),
        row(
            "cross_entropy negative class",
            &["cross_entropy", "-5"],
            || {
                cross_entropy(
                    &f32s(&[2, 10]),
                    &i64s(&[1, -5]),
                    None,
                    -100,
                    Reduction::Mean,
                    0.0,
                )
            },
        ),
        row("nll_loss class past the input", &["nll_loss", "3"], || {
            nll_loss(&f32s(&[2, 3]), &i64s(&[0, 3]), None, -100, Reduction::Mean)
        }),
        row("item of a vector", &["item", "[2]"], || {
            f32s(&[2]).item::<f32>()
        }),
        // ---- NaN and infinities ----------------------------------------------------------
        row(
            "NaN loss stops a training step",
            &["loss is NaN", "step 0"],
            || {
                let model = Linear::new(2, 2, true)?;
                let mut opt = sgd(model.parameters(), 0.1)?;
                let mut trainer = Trainer::new(&opt);
                let x = Tensor::from_vec(vec![f32::NAN, 1.0], &[1, 2])?;
                trainer.step(&model, &mut opt, &x, &i64s(&[0]), &cross_entropy_loss)
            },
        ),
        row("NaN learning rate", &["SGD", "NaN"], || {
            sgd(vec![f32s(&[1])], f64::NAN)
        }),
        row("negative learning rate", &["SGD", "-1"], || {
            sgd(vec![f32s(&[1])], -1.0)
        }),
        row("Adam beta out of range", &["Adam", "1.5"], || {
            Adam::new(
                vec![f32s(&[1])],
                AdamOptions {
                    betas: (1.5, 0.999),
                    ..Default::default()
                },
            )
        }),
        row(
            "clip_grad_norm_ NaN norm type",
            &["clip_grad_norm_", "NaN"],
            || clip_grad_norm_(&[f32s(&[1])], 1.0, f64::NAN),
        ),
        // ---- zero-size tensors ----------------------------------------------------------
        row("max of an empty tensor", &["max", "[0]"], || {
            f32s(&[0]).max_all()
        }),
        row("argmax of an empty tensor", &["argmax", "[0, 3]"], || {
            f32s(&[0, 3]).argmax(None, false)
        }),
        row("item of an empty tensor", &["item", "[0]"], || {
            f32s(&[0]).item::<f32>()
        }),
        row(
            "softmax over an empty dim is fine, a missing dim is not",
            &["softmax", "2"],
            || f32s(&[0, 3]).softmax(2),
        ),
        // ---- data -----------------------------------------------------------------------
        row("TensorDataset sizes", &["TensorDataset", "4", "3"], || {
            TensorDataset::new(f32s(&[4, 2]), i64s(&[0, 1, 2]))
        }),
        row(
            "batch size zero",
            &["DataLoader", "batch_size", "0"],
            || {
                let ds = TensorDataset::new(f32s(&[4, 2]), i64s(&[0, 1, 2, 3]))?;
                DataLoader::new(Arc::new(ds), DataLoaderOptions::default().batch_size(0))
            },
        ),
        row(
            "Trainer accumulation over more micro-batches than samples",
            &["Trainer::step", "2", "3"],
            || {
                let model = Linear::new(2, 2, true)?;
                let mut opt = sgd(model.parameters(), 0.1)?;
                let mut trainer = Trainer::new(&opt);
                trainer.options = StepOptions {
                    accumulate: 3,
                    ..Default::default()
                };
                trainer.step(
                    &model,
                    &mut opt,
                    &f32s(&[2, 2]),
                    &i64s(&[0, 1]),
                    &cross_entropy_loss,
                )
            },
        ),
        // ---- files ----------------------------------------------------------------------
        row(
            "missing safetensors file",
            &["load_safetensors", "/nonexistent/w.safetensors"],
            || load_safetensors("/nonexistent/w.safetensors"),
        ),
        row(
            "truncated safetensors",
            &["load_safetensors", "truncated"],
            || deserialize_safetensors(&[8, 0, 0]),
        ),
        row(
            "a safetensors file that is not a checkpoint",
            &["load_checkpoint", "not a TinyTorch checkpoint"],
            || {
                let bytes = tinytorch::io::serialize_safetensors(
                    &BTreeMap::from([("w".to_string(), f32s(&[2]))]),
                    &BTreeMap::new(),
                )?;
                deserialize_checkpoint(&bytes)
            },
        ),
        row(
            "IDX file with a bad magic",
            &["read_idx", "bad magic"],
            || {
                let dir = std::env::temp_dir().join(format!("tt_bad_input_{}", std::process::id()));
                std::fs::create_dir_all(&dir)?;
                let path = dir.join("bad-idx3-ubyte");
                std::fs::write(&path, [1, 2, 3, 4, 5])?;
                let r = tinytorch::data::idx::read_idx(&path);
                std::fs::remove_dir_all(&dir)?;
                r
            },
        ),
        row("CIFAR-10 label past 9", &["label 12"], || {
            let mut rec = vec![12u8];
            rec.extend([0u8; 3072]);
            tinytorch::data::cifar10::parse_cifar10_batch(&rec)
                .map_err(|m| tinytorch::Error::invalid("cifar10", m))
        }),
        row("gzip bomb past its trailer", &["trailer declares"], || {
            use std::io::Write;
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            gz.write_all(&vec![0u8; 3073 * 100])?;
            let mut bytes = gz.finish()?;
            let n = bytes.len();
            bytes[n - 4..].copy_from_slice(&3073u32.to_le_bytes());
            tinytorch::data::cifar10::parse_cifar10_batch(&bytes)
                .map_err(|m| tinytorch::Error::invalid("cifar10", m))
        }),
        // ---- tokenizers -----------------------------------------------------------------
        row("BPE vocabulary training below 256", &["256"], || {
            BpeTokenizer::train("abc", 100)
        }),
        row(
            "BPE merge that doubles past the bound",
            &["tokenizer", "bytes"],
            || {
                let merges: Vec<String> = (0..40)
                    .map(|i| {
                        if i == 0 {
                            "[97,97]".to_string()
                        } else {
                            format!("[{0},{0}]", 255 + i)
                        }
                    })
                    .collect();
                tokenizer_from_json(&format!(
                    "{{\"kind\":\"bpe\",\"merges\":[{}]}}",
                    merges.join(",")
                ))
            },
        ),
        row(
            "tokenizer.json template naming an undefined special token",
            &["HfTokenizer::from_bytes", "[CLSx]"],
            || {
                let mut json = common::load_json_fixture("tiny_bert/tokenizer.json");
                json["post_processor"]["single"] = serde_json::json!([
                    {"SpecialToken": {"id": "[CLSx]", "type_id": 0}},
                    {"Sequence": {"id": "A", "type_id": 0}}
                ]);
                tinytorch::text::hf_tokenizer::HfTokenizer::from_bytes(json.to_string().as_bytes())
            },
        ),
        row(
            "tokenizer.json BPE merge making a token outside the vocabulary",
            &["HfTokenizer::from_bytes", "merge 27", "\"▁quick▁quick\""],
            || {
                let mut json = mistral_tokenizer_json()?;
                let merges = json["model"]["merges"].as_array_mut().expect("merges");
                merges.insert(26, serde_json::json!(["▁quick", "▁quick"]));
                tinytorch::text::hf_tokenizer::HfTokenizer::from_bytes(json.to_string().as_bytes())
            },
        ),
        row(
            "tokenizer.json BPE merge shorter than the subword prefix",
            &[
                "HfTokenizer::from_bytes",
                "shorter than the continuing-subword prefix",
            ],
            || {
                let mut json = mistral_tokenizer_json()?;
                json["model"]["continuing_subword_prefix"] = serde_json::json!("#####");
                tinytorch::text::hf_tokenizer::HfTokenizer::from_bytes(json.to_string().as_bytes())
            },
        ),
        row(
            "unknown tokenizer kind",
            &["tokenizer", "wordpiece"],
            || tokenizer_from_json("{\"kind\":\"wordpiece\"}"),
        ),
        row(
            "character outside the vocabulary",
            &["encode", "'z'"],
            || CharTokenizer::fit("abc").encode("abz"),
        ),
        row(
            "token id past the vocabulary",
            &["decode", "99", "3"],
            || CharTokenizer::fit("abc").decode(&[0, 99]),
        ),
    ]
}

#[test]
fn every_bad_input_is_a_clear_error() {
    let mut failures = Vec::new();
    let rows = rows();
    for r in &rows {
        match catch_unwind(AssertUnwindSafe(|| (r.call)())) {
            Err(_) => failures.push(format!("{}: panicked", r.what)),
            Ok(Ok(())) => failures.push(format!("{}: returned Ok", r.what)),
            Ok(Err(e)) => {
                let msg = e.to_string();
                let missing: Vec<_> = r.needles.iter().filter(|n| !msg.contains(*n)).collect();
                if !missing.is_empty() {
                    failures.push(format!("{}: message {msg:?} lacks {missing:?}", r.what));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}
