//! `tinytorch train` with a whole recipe: every option at once resumes bit for bit from the
//! middle of an epoch, `--config FILE` sets flags that the command line overrides, early
//! stopping ends a run for good, and the ResNet-20 recipe runs on files in CIFAR-10's
//! binary format.

mod common;

use common::{last_json, synthetic_mnist, temp_dir, tinytorch, train_args};
use std::path::Path;
use tinytorch::io::load_checkpoint;

/// Every recipe option of `train` on top of [`train_args`].
fn recipe_args<'a>(data: &'a str, out: &'a str) -> Vec<&'a str> {
    let mut args = train_args(data, out);
    args.extend([
        "--weight-decay",
        "1e-4",
        "--epochs",
        "2",
        "--augment-crop",
        "2",
        "--augment-flip",
        "--normalize-mean",
        "0.15",
        "--normalize-std",
        "0.3",
        "--lr-schedule",
        "cosine",
        "--warmup-epochs",
        "0.5",
        "--clip-grad-norm",
        "1.0",
        "--accumulate",
        "2",
        "--amp",
        "bf16",
        "--ema",
        "0.9",
        "--early-stopping",
        "3",
    ]);
    args
}

fn same_bits(
    a: &std::collections::BTreeMap<String, tinytorch::Tensor>,
    b: &std::collections::BTreeMap<String, tinytorch::Tensor>,
) {
    assert_eq!(a.len(), b.len());
    for (name, t) in a {
        let (x, y) = (t.to_vec_f64().unwrap(), b[name].to_vec_f64().unwrap());
        assert!(
            x.iter().zip(&y).all(|(p, q)| p.to_bits() == q.to_bits()),
            "{name} differs"
        );
    }
}

#[test]
fn every_recipe_option_resumes_bit_for_bit_mid_epoch() {
    let dir = temp_dir("recipe-resume");
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    synthetic_mnist(&data);
    let data_s = data.to_str().unwrap();
    let (full, cut) = (dir.join("full"), dir.join("cut"));

    let whole = last_json(&tinytorch(&recipe_args(data_s, full.to_str().unwrap())));
    assert_eq!(whole["steps"], 32);
    assert!(
        whole["test_acc"].as_f64().unwrap() > 0.5,
        "the recipe learns: {whole}"
    );

    let mut args = recipe_args(data_s, cut.to_str().unwrap());
    args.extend(["--max-steps", "21"]);
    assert_eq!(last_json(&tinytorch(&args))["steps"], 21);
    let ckpt = cut.join("checkpoint.safetensors");
    let resumed = last_json(&tinytorch(&[
        "train",
        "--resume",
        ckpt.to_str().unwrap(),
        "--epochs",
        "2",
        "--out",
        cut.to_str().unwrap(),
        "--json",
    ]));
    for key in ["steps", "train_loss", "train_acc", "test_loss", "test_acc"] {
        assert_eq!(resumed[key], whole[key], "{key}");
    }
    let a = load_checkpoint(full.join("checkpoint.safetensors")).unwrap();
    let b = load_checkpoint(&ckpt).unwrap();
    same_bits(&a.model, &b.model);
    assert!(!a.ema.is_empty(), "the average is saved");
    same_bits(&a.ema, &b.ema);
    assert_eq!(a.extra["ema.updates"], "32");
    // The learning rates the schedule set are part of the optimizer state.
    assert_eq!(
        a.optimizer.as_ref().unwrap().param_groups[0].lr,
        b.optimizer.as_ref().unwrap().param_groups[0].lr
    );

    // eval scores the average, as training did after its last epoch.
    let eval = last_json(&tinytorch(&[
        "eval",
        "--checkpoint",
        ckpt.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(eval["ema"], true);
    assert_eq!(eval["test_acc"], whole["test_acc"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_config_file_sets_flags_and_the_command_line_wins() {
    let dir = temp_dir("recipe-config");
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    synthetic_mnist(&data);
    let recipe = dir.join("recipe.toml");
    std::fs::write(
        &recipe,
        format!(
            "dataset = \"mnist\"\ndata = \"{}\"\nmodel = \"mlp\"\nbatch_size = 32\nlr = 0.5\n\
             lr-schedule = \"one-cycle\"\naugment-flip = true\nepochs = 1\n",
            data.display()
        ),
    )
    .unwrap();
    let out = dir.join("run");
    let summary = last_json(&tinytorch(&[
        "train",
        "--config",
        recipe.to_str().unwrap(),
        "--lr",
        "0.2",
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(summary["steps"], 8, "256 samples in batches of 32");
    let ckpt = load_checkpoint(out.join("checkpoint.safetensors")).unwrap();
    let config: serde_json::Value = serde_json::from_str(&ckpt.extra["config"]).unwrap();
    assert_eq!(config["lr"], 0.2, "the command line wins");
    assert_eq!(config["batch_size"], 32);
    assert_eq!(config["recipe"]["lr_schedule"], "one-cycle");
    assert_eq!(config["recipe"]["flip"], true);
    // One-cycle ends at lr / (25 * 1e4) on its last step.
    let lr = ckpt.optimizer.as_ref().unwrap().param_groups[0].lr;
    assert!((lr - 0.2 / 25.0 / 1e4).abs() < 1e-15, "{lr}");

    for (text, needle) in [
        ("lr = \"fast\"\n", "invalid value 'fast'"),
        ("learning_rate = 0.1\n", "--learning-rate"),
        ("[optimizer]\nlr = 1\n", "holds a table"),
    ] {
        std::fs::write(&recipe, text).unwrap();
        let out = tinytorch(&["train", "--config", recipe.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains(needle),
            "{needle}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn early_stopping_ends_the_run_and_a_resume_keeps_it_ended() {
    let dir = temp_dir("recipe-early");
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    synthetic_mnist(&data);
    let out = dir.join("run");
    let common = [
        "train",
        "--dataset",
        "mnist",
        "--data",
        data.to_str().unwrap(),
        "--model",
        "mlp",
        "--out",
        out.to_str().unwrap(),
        "--json",
    ];
    // No later epoch can beat the first by 100: the second is the last.
    let mut args = common.to_vec();
    args.extend([
        "--epochs",
        "6",
        "--early-stopping",
        "1",
        "--min-delta",
        "100",
    ]);
    let run = tinytorch(&args);
    let stdout = String::from_utf8_lossy(&run.stdout).to_string();
    assert!(
        stdout.contains("early stopping: no better test loss for 1 epochs"),
        "{stdout}"
    );
    assert_eq!(last_json(&run)["epochs"], 2);
    let ckpt = out.join("checkpoint.safetensors");
    let again = tinytorch(&[
        "train",
        "--resume",
        ckpt.to_str().unwrap(),
        "--epochs",
        "6",
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("early stopping had ended this run"));
    // Flags that define the run cannot change it on resume (they were silently ignored).
    let changed = tinytorch(&[
        "train",
        "--resume",
        ckpt.to_str().unwrap(),
        "--model",
        "seed-cnn",
        "--lr",
        "0.3",
    ]);
    let stderr = String::from_utf8_lossy(&changed.stderr);
    assert!(!changed.status.success(), "{stderr}");
    assert!(
        stderr.contains("--model, --lr cannot change a resumed run"),
        "{stderr}"
    );
    assert!(stderr.contains("(mlp)"), "{stderr}");
    assert_eq!(last_json(&again)["epochs"], 2);

    let mut args = common.to_vec();
    args.extend(["--early-stopping", "2", "--no-eval"]);
    let out = tinytorch(&args);
    assert!(String::from_utf8_lossy(&out.stderr).contains("drop --no-eval"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `n` records of CIFAR-10's binary format: a label byte, then 3x32x32 pixel bytes (red,
/// green, blue planes); the label picks which quarter of the image is bright.
fn cifar_batch(path: &Path, n: usize, seed: usize) {
    let mut bytes = Vec::with_capacity(n * 3073);
    for i in 0..n {
        let label = (i * 7 + seed) % 10;
        bytes.push(label as u8);
        for c in 0..3 {
            for y in 0..32 {
                for x in 0..32 {
                    let bright = (y / 16) * 2 + x / 16 == label % 4;
                    let noise = (((i * 131 + c * 1024 + y * 32 + x + seed) * 2654435761usize) >> 24)
                        as u8
                        / 8;
                    bytes.push(if bright {
                        180 + noise
                    } else {
                        noise + (label as u8) * 4
                    });
                }
            }
        }
    }
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn the_resnet20_recipe_runs_on_cifar10_files() {
    let dir = temp_dir("recipe-cifar");
    let data = dir.join("cifar-10-batches-bin");
    std::fs::create_dir_all(&data).unwrap();
    for b in 1..=5 {
        cifar_batch(&data.join(format!("data_batch_{b}.bin")), 8, b);
    }
    cifar_batch(&data.join("test_batch.bin"), 8, 0);
    let recipe = Path::new(env!("CARGO_MANIFEST_DIR")).join("../recipes/resnet20.toml");
    let out = dir.join("run");
    let summary = last_json(&tinytorch(&[
        "train",
        "--config",
        recipe.to_str().unwrap(),
        "--dataset",
        "cifar10",
        "--data",
        data.to_str().unwrap(),
        "--normalize-mean",
        "0.4914,0.4822,0.4465",
        "--normalize-std",
        "0.2470,0.2435,0.2616",
        "--batch-size",
        "8",
        "--epochs",
        "2",
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(
        summary["steps"], 10,
        "40 images in batches of 8, two epochs"
    );
    assert!(
        summary["test_loss"].as_f64().unwrap().is_finite(),
        "{summary}"
    );
    let ckpt = load_checkpoint(out.join("checkpoint.safetensors")).unwrap();
    let config: serde_json::Value = serde_json::from_str(&ckpt.extra["config"]).unwrap();
    assert_eq!(config["model"], "resnet20");
    assert_eq!(config["recipe"]["lr_schedule"], "cosine");
    assert_eq!(
        config["recipe"]["normalize_mean"].as_array().unwrap().len(),
        3
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
