//! Seed corpora for the fuzz targets in `fuzz/`: small valid files of every format, written
//! by TinyTorch's own writers (IDX, CIFAR-10 records, safetensors, checkpoints, tokenizers)
//! or copied from the committed test fixtures (Hugging Face tokenizer.json and config.json
//! files). The fuzzers start from these and mutate them.
//!
//! Run: cargo run -p tinytorch --example fuzz_seeds -- fuzz/corpus

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use tinytorch::data::idx::encode_idx_u8;
use tinytorch::io::{save_checkpoint, serialize_safetensors, Checkpoint};
use tinytorch::nn::{Linear, Module};
use tinytorch::optim::{Optimizer, SgdOptions, SGD};
use tinytorch::tensor::get_rng_state;
use tinytorch::text::{BpeTokenizer, CharTokenizer, Tokenizer};
use tinytorch::{manual_seed, DType, Device, Result, Tensor};

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).expect("in-memory write");
    gz.finish().expect("in-memory write")
}

fn write(dir: &Path, target: &str, name: &str, bytes: &[u8]) -> Result<()> {
    let dir = dir.join(target);
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join(name), bytes)?;
    Ok(())
}

/// A small checkpoint of a real (one-step) SGD run, with a stored tokenizer.
fn checkpoint_bytes(dir: &Path) -> Result<Vec<u8>> {
    manual_seed(0);
    let model = Linear::new(3, 2, true)?;
    let mut opt = SGD::new(
        model.parameters(),
        SgdOptions {
            lr: 0.1,
            momentum: 0.9,
            ..Default::default()
        },
    )?;
    let x = Tensor::randn(&[4, 3], DType::F32, Device::Cpu)?;
    model.forward(&x)?.sum_all()?.backward()?;
    opt.step()?;
    let ckpt = Checkpoint {
        model: model.state_dict().into_iter().collect(),
        optimizer: Some(opt.state_dict()),
        rng: BTreeMap::from([("global".to_string(), get_rng_state())]),
        epoch: 1,
        step: 1,
        extra: BTreeMap::from([(
            "tokenizer".to_string(),
            CharTokenizer::fit("hello world").to_json(),
        )]),
        ..Default::default()
    };
    let path = dir.join("seed.ckpt.tmp");
    save_checkpoint(&path, &ckpt)?;
    let bytes = std::fs::read(&path)?;
    std::fs::remove_file(&path)?;
    Ok(bytes)
}

fn main() -> Result<()> {
    let out = PathBuf::from(std::env::args().nth(1).unwrap_or("fuzz/corpus".into()));
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");

    let images = encode_idx_u8(
        &(0..2 * 4 * 4).map(|i| i as u8).collect::<Vec<_>>(),
        &[2, 4, 4],
    );
    let labels = encode_idx_u8(&[3, 7], &[2]);
    let mut f32_idx = vec![0, 0, 0x0D, 1, 0, 0, 0, 2];
    f32_idx.extend_from_slice(&1.5f32.to_be_bytes());
    f32_idx.extend_from_slice(&(-2.0f32).to_be_bytes());
    for (name, bytes) in [("images", &images), ("labels", &labels), ("f32", &f32_idx)] {
        write(&out, "idx", name, bytes)?;
        write(&out, "idx", &format!("{name}.gz"), &gzip(bytes))?;
    }

    let mut record = vec![7u8];
    record.extend((0..3072).map(|i| (i % 251) as u8));
    write(&out, "cifar10", "one_record", &record)?;
    write(&out, "cifar10", "one_record.gz", &gzip(&record))?;

    let tensors = BTreeMap::from([
        ("w".to_string(), Tensor::from_slice(&[1.0f32, -2.0, 3.5])),
        ("b".to_string(), Tensor::from_slice(&[1i64, 2])),
        (
            "h".to_string(),
            Tensor::from_slice(&[0.5f64]).to_dtype(DType::BF16)?,
        ),
    ]);
    let meta = BTreeMap::from([("format".to_string(), "pt".to_string())]);
    write(
        &out,
        "safetensors",
        "written",
        &serialize_safetensors(&tensors, &meta)?,
    )?;
    for name in ["torch_dtypes", "torch_model_io"] {
        let bytes = std::fs::read(fixtures.join(format!("io/{name}.safetensors")))?;
        write(&out, "safetensors", name, &bytes)?;
    }

    write(&out, "checkpoint", "sgd_run", &checkpoint_bytes(&out)?)?;

    let text = "the cat sat on the mat; the cat ate the rat";
    write(
        &out,
        "bpe_json",
        "bpe",
        BpeTokenizer::train(text, 270)?.to_json().as_bytes(),
    )?;
    write(
        &out,
        "bpe_json",
        "char",
        CharTokenizer::fit(text).to_json().as_bytes(),
    )?;

    for (name, file) in [
        ("wordpiece", "tiny_bert/tokenizer.json"),
        ("byte_bpe", "llm_families/mistral/tokenizer.json"),
    ] {
        write(
            &out,
            "hf_tokenizer",
            name,
            &std::fs::read(fixtures.join(file))?,
        )?;
    }
    for (name, file) in [
        ("llama", "llama/options/config.json"),
        ("mistral", "llm_families/mistral/config.json"),
        ("qwen2", "llm_families/qwen2/config.json"),
        ("bert", "tiny_bert/config.json"),
    ] {
        write(
            &out,
            "hf_config",
            name,
            &std::fs::read(fixtures.join(file))?,
        )?;
    }
    println!("seed corpora written under {}", out.display());
    Ok(())
}
