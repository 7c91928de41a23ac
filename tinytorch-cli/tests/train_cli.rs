//! `tinytorch train`, `eval`, `profile`, `distill`, `prune` and `quantize` end to end,
//! through the binary: outputs, the final JSON line, bit-identical resume from the middle of
//! an epoch, one-line errors, and a short Fashion-MNIST run that must clear an accuracy floor.

mod common;

use common::{last_json, synthetic_mnist, temp_dir, tinytorch, train_args};
use std::path::Path;
use tinytorch::io::load_checkpoint;

#[test]
fn train_writes_outputs_and_a_final_json_line() {
    let dir = temp_dir("cli-outputs");
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    synthetic_mnist(&data);
    let out = dir.join("run");
    let mut args = train_args(data.to_str().unwrap(), out.to_str().unwrap());
    args.extend(["--epochs", "3"]);
    let summary = last_json(&tinytorch(&args));
    for key in [
        "train_loss",
        "train_acc",
        "test_loss",
        "test_acc",
        "epochs",
        "steps",
        "wall_s",
        "samples_per_s",
    ] {
        assert!(summary.get(key).is_some(), "missing {key} in {summary}");
    }
    assert_eq!(summary["epochs"], 3);
    assert_eq!(summary["steps"], 3 * 16);
    assert!(summary["test_acc"].as_f64().unwrap() > 0.9, "{summary}");
    assert!(summary["samples_per_s"].as_f64().unwrap() > 0.0);
    let csv = std::fs::read_to_string(out.join("metrics.csv")).unwrap();
    assert_eq!(csv.lines().count(), 4, "{csv}");
    assert!(out.join("metrics.jsonl").exists());
    assert!(out.join("checkpoint.safetensors").exists());

    let ckpt = out.join("checkpoint.safetensors");
    check_eval(&ckpt, &summary);
    check_profile(&ckpt);
    check_distill(&dir, &ckpt, &summary);
    check_prune(&dir, &ckpt);
    check_quantize(&dir, &ckpt, &summary);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `eval` reproduces the final test accuracy from the checkpoint alone.
fn check_eval(ckpt: &Path, summary: &serde_json::Value) {
    let eval = last_json(&tinytorch(&[
        "eval",
        "--checkpoint",
        ckpt.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(eval["test_acc"], summary["test_acc"]);
    assert_eq!(eval["steps"], 48);
}

/// `profile` takes the model, its weights and the optimizer from the checkpoint.
fn check_profile(ckpt: &Path) {
    let profile = last_json(&tinytorch(&[
        "profile",
        "--checkpoint",
        ckpt.to_str().unwrap(),
        "--batch-size",
        "4",
        "--json",
    ]));
    assert_eq!(profile["model"], "mlp");
    assert_eq!(
        profile["total"]["parameters"],
        784 * 128 + 128 + 128 * 10 + 10
    );
    assert_eq!(profile["total"]["flops"], 2 * 4 * (784 * 128 + 128 * 10));
    let names: Vec<&str> = profile["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap_or("-"))
        .collect();
    assert_eq!(names, ["1", "-", "3"], "{profile}");
    assert!(profile["phases"]["step"]["ms"].as_f64().is_some());
}

/// `distill` trains the student twice from the same start: alone and from the teacher.
fn check_distill(dir: &Path, ckpt: &Path, summary: &serde_json::Value) {
    let student = dir.join("student.safetensors");
    let distill = last_json(&tinytorch(&[
        "distill",
        "--teacher",
        ckpt.to_str().unwrap(),
        "--student",
        "lenet5",
        "--epochs",
        "1",
        "--batch-size",
        "16",
        "--out",
        student.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(distill["teacher"], "mlp");
    assert_eq!(distill["student"], "lenet5");
    assert_eq!(distill["teacher_test_acc"], summary["test_acc"]);
    assert_eq!(distill["steps"], 16);
    for key in ["student_alone_test_acc", "distilled_test_acc"] {
        let acc = distill[key].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&acc), "{distill}");
    }
    let eval = last_json(&tinytorch(&[
        "eval",
        "--checkpoint",
        student.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(eval["test_acc"], distill["distilled_test_acc"]);
}

/// `prune`: half the hidden features go, the outputs stay the masked model's, and the
/// smaller model is a checkpoint eval reads.
fn check_prune(dir: &Path, ckpt: &Path) {
    let pruned = dir.join("pruned.safetensors");
    let prune = last_json(&tinytorch(&[
        "prune",
        "--checkpoint",
        ckpt.to_str().unwrap(),
        "--method",
        "ln-structured",
        "--amount",
        "0.5",
        "--finetune-epochs",
        "1",
        "--out",
        pruned.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(prune["widths"], serde_json::json!([64]));
    assert_eq!(prune["parameters_after"], 784 * 64 + 64 + 64 * 10 + 10);
    assert!(prune["max_output_diff"].as_f64().unwrap() < 1e-5, "{prune}");
    let eval = last_json(&tinytorch(&[
        "eval",
        "--checkpoint",
        pruned.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(eval["test_acc"], prune["test_acc_after"]);
    let global = last_json(&tinytorch(&[
        "prune",
        "--checkpoint",
        ckpt.to_str().unwrap(),
        "--method",
        "global",
        "--amount",
        "0.75",
        "--rounds",
        "2",
        "--json",
    ]));
    assert!(
        (global["global_sparsity"].as_f64().unwrap() - 0.75).abs() < 1e-3,
        "{global}"
    );
}

/// `quantize`: dynamic (no calibration) and static (calibrated on 64 images); the int8 file
/// is about 4x smaller and eval runs it, with latency and memory.
fn check_quantize(dir: &Path, ckpt: &Path, summary: &serde_json::Value) {
    for (calibrate, scheme) in [(None, "dynamic"), (Some("64"), "static (64")] {
        let q = dir.join("model.int8.safetensors");
        let mut args = vec![
            "quantize",
            "--checkpoint",
            ckpt.to_str().unwrap(),
            "--out",
            q.to_str().unwrap(),
            "--json",
        ];
        if let Some(n) = calibrate {
            args.extend(["--calibrate", n]);
        }
        let out = last_json(&tinytorch(&args));
        assert!(out["scheme"].as_str().unwrap().starts_with(scheme), "{out}");
        assert_eq!(out["float_acc"], summary["test_acc"]);
        let (f, i) = (
            out["float_acc"].as_f64().unwrap(),
            out["int8_acc"].as_f64().unwrap(),
        );
        assert!((f - i).abs() <= 0.05, "{out}");
        let ratio = out["float_bytes"].as_f64().unwrap() / out["int8_bytes"].as_f64().unwrap();
        assert!(ratio > 3.5, "{out}");
        let eval = last_json(&tinytorch(&[
            "eval",
            "--checkpoint",
            q.to_str().unwrap(),
            "--json",
            "--latency",
        ]));
        assert_eq!(eval["test_acc"], out["int8_acc"]);
        assert_eq!(eval["parameters"], 784 * 128 + 128 + 128 * 10 + 10);
        assert!(
            eval["latency_b64"]["mean_ms"].as_f64().unwrap() > 0.0,
            "{eval}"
        );
        assert!(eval["peak_bytes_b64"].as_u64().unwrap() > 0, "{eval}");
    }
    let refused = tinytorch(&[
        "quantize",
        "--checkpoint",
        ckpt.to_str().unwrap(),
        "--calibrate",
        "0",
        "--out",
        dir.join("x").to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && stderr.contains("at least one image"),
        "{stderr}"
    );
}

/// A run stopped at an epoch's end, resumed, stopped inside an epoch and resumed again ends
/// bit for bit where the uninterrupted run ends (weights and metrics).
#[test]
fn resuming_reproduces_the_uninterrupted_run_bit_for_bit() {
    let dir = temp_dir("cli-resume");
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    synthetic_mnist(&data);
    let (full, cut) = (dir.join("full"), dir.join("cut"));
    let data_s = data.to_str().unwrap();

    let mut args = train_args(data_s, full.to_str().unwrap());
    args.extend(["--epochs", "3"]);
    let whole = last_json(&tinytorch(&args));

    // 16 steps make an epoch: stop at the end of the first, then 5 steps into the third.
    let mut args = train_args(data_s, cut.to_str().unwrap());
    args.extend(["--epochs", "3", "--max-steps", "16"]);
    let part = last_json(&tinytorch(&args));
    assert_eq!(
        (part["steps"].as_u64(), part["epochs"].as_u64()),
        (Some(16), Some(1))
    );
    let ckpt = cut.join("checkpoint.safetensors");
    let resume = |extra: &[&str]| {
        let mut args = vec!["train", "--resume", ckpt.to_str().unwrap(), "--epochs", "3"];
        args.extend(["--out", cut.to_str().unwrap(), "--json"]);
        args.extend(extra);
        last_json(&tinytorch(&args))
    };
    let part = resume(&["--max-steps", "37"]);
    assert_eq!(
        (part["steps"].as_u64(), part["epochs"].as_u64()),
        (Some(37), Some(2))
    );
    let resumed = resume(&[]);
    assert_eq!(resumed["steps"], 48);
    for key in ["train_loss", "train_acc", "test_loss", "test_acc"] {
        assert_eq!(resumed[key], whole[key], "{key}");
    }
    let a = load_checkpoint(full.join("checkpoint.safetensors")).unwrap();
    let b = load_checkpoint(&ckpt).unwrap();
    assert_eq!(a.model.len(), b.model.len());
    for (name, t) in &a.model {
        let (x, y) = (t.to_vec_f64().unwrap(), b.model[name].to_vec_f64().unwrap());
        assert!(
            x.iter().zip(&y).all(|(p, q)| p.to_bits() == q.to_bits()),
            "{name} differs"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A short real run: one epoch of the MLP on Fashion-MNIST must reach 76% test accuracy
/// (PyTorch 2.15 reaches 80.2% with this configuration). CI installs the data set
/// (scripts/install/install_deps.sh); elsewhere the test is skipped when it is missing.
#[test]
fn mlp_learns_fashion_mnist() {
    let dir = Path::new("/usr/share/datasets/fashion-mnist");
    if !dir.join("train-images-idx3-ubyte.gz").exists() {
        assert!(
            std::env::var("CI").is_err(),
            "CI must install dataset-fashion-mnist (scripts/install/install_deps.sh)"
        );
        eprintln!("skipped: {} is missing", dir.display());
        return;
    }
    let out_dir = temp_dir("cli-fmnist");
    let summary = last_json(&tinytorch(&[
        "train",
        "--model",
        "mlp",
        "--epochs",
        "1",
        "--lr",
        "0.05",
        "--batch-size",
        "64",
        "--seed",
        "0",
        "--out",
        out_dir.to_str().unwrap(),
        "--json",
    ]));
    let acc = summary["test_acc"].as_f64().unwrap();
    assert!(acc > 0.76, "test accuracy {acc} after one epoch");
    std::fs::remove_dir_all(&out_dir).unwrap();
}
