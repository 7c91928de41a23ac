//! The training-loop pieces: steps, epochs with a step limit, evaluation, metrics files and
//! the curves PNG.

mod common;
use common::sgd_momentum;

use tinytorch::nn::{Linear, Module, ReLU, Sequential};
use tinytorch::optim::{SgdOptions, SGD};
use tinytorch::train::{
    evaluate, plot_curves, train_epoch, EpochMetrics, EpochTotals, MetricsLog, Progress, StepLimit,
};
use tinytorch::{manual_seed, DType, Device, Result, Tensor};

/// Two Gaussian blobs in 4-d, labelled by which blob they come from: linearly separable.
fn blobs(n: usize) -> Result<Vec<Result<(Tensor, Tensor)>>> {
    let y = Tensor::randint(0, 2, &[n], Device::Cpu)?;
    let shift = y
        .to_dtype(DType::F32)?
        .mul_scalar(4.0)?
        .sub_scalar(2.0)?
        .unsqueeze(1)?;
    let x = Tensor::randn(&[n, 4], DType::F32, Device::Cpu)?.add(&shift)?;
    let batches = (0..n / 16)
        .map(|b| {
            Ok((
                x.narrow(0, (b * 16) as isize, 16)?.contiguous()?,
                y.narrow(0, (b * 16) as isize, 16)?.contiguous()?,
            ))
        })
        .collect();
    Ok(batches)
}

fn model() -> Result<Sequential> {
    Ok(Sequential::new(vec![
        Box::new(Linear::new(4, 16, true)?),
        Box::new(ReLU::new()),
        Box::new(Linear::new(16, 2, true)?),
    ]))
}

/// One `train_epoch` of `m` with `opt` over `batches`, within `limit`, without a progress bar.
fn quiet_epoch(
    m: &mut Sequential,
    opt: &mut SGD,
    batches: Vec<Result<(Tensor, Tensor)>>,
    limit: &mut StepLimit,
) -> Result<EpochTotals> {
    train_epoch(m, opt, batches, limit, &Progress::hidden())
}

fn cloned(b: &[Result<(Tensor, Tensor)>]) -> Vec<Result<(Tensor, Tensor)>> {
    b.iter()
        .map(|r| Ok(r.as_ref().expect("batch").clone()))
        .collect()
}

#[test]
fn an_epoch_learns_and_evaluate_agrees() -> Result<()> {
    manual_seed(3);
    let data = blobs(512)?;
    let mut m = model()?;
    let mut opt = sgd_momentum(m.parameters(), 0.1, 0.0)?;
    let (loss0, _) = evaluate(&mut m, cloned(&data))?;
    let mut limit = StepLimit(None);
    let totals = quiet_epoch(&mut m, &mut opt, cloned(&data), &mut limit)?;
    assert_eq!(totals.steps, 32);
    assert_eq!(totals.samples, 512);
    assert_eq!(totals.timed_samples, 31 * 16, "the first step is not timed");
    let (loss1, acc1) = evaluate(&mut m, cloned(&data))?;
    assert!(loss1 < loss0 * 0.5, "loss {loss0} -> {loss1}");
    assert!(acc1 > 0.95, "accuracy {acc1}");
    assert!(!m.is_training(), "evaluate leaves the model in eval mode");
    Ok(())
}

#[test]
fn the_step_limit_stops_mid_epoch() -> Result<()> {
    manual_seed(4);
    let data = blobs(256)?;
    let mut m = model()?;
    let mut opt = SGD::new(m.parameters(), SgdOptions::default())?;
    let mut limit = StepLimit(Some(5));
    let totals = quiet_epoch(&mut m, &mut opt, cloned(&data), &mut limit)?;
    assert_eq!(totals.steps, 5);
    assert!(limit.exhausted());
    let again = quiet_epoch(&mut m, &mut opt, cloned(&data), &mut limit)?;
    assert_eq!(again.steps, 0);
    Ok(())
}

#[test]
fn a_bad_batch_is_an_error_not_a_panic() -> Result<()> {
    let mut m = model()?;
    let mut opt = SGD::new(m.parameters(), SgdOptions::default())?;
    let x = Tensor::zeros(&[3, 5], DType::F32, Device::Cpu)?;
    let y = Tensor::zeros(&[3], DType::I64, Device::Cpu)?;
    let err = quiet_epoch(&mut m, &mut opt, vec![Ok((x, y))], &mut StepLimit(None)).unwrap_err();
    assert!(err.to_string().contains("[3, 5]"), "{err}");
    Ok(())
}

fn history() -> Vec<EpochMetrics> {
    (1..=3)
        .map(|e| EpochMetrics {
            epoch: e,
            steps: 100 * e as u64,
            train_loss: 1.0 / e as f64,
            train_acc: 0.5 + 0.1 * e as f64,
            test_loss: (e != 2).then_some(1.2 / e as f64),
            test_acc: (e != 2).then_some(0.45 + 0.1 * e as f64),
            lr: 0.05,
            train_s: 2.5,
            samples_per_s: 1000.0,
        })
        .collect()
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tinytorch-train-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn metrics_are_written_as_csv_and_json_lines_and_read_back() -> Result<()> {
    let dir = temp_dir("metrics");
    let h = history();
    {
        let mut log = MetricsLog::open(&dir)?;
        log.write(&h[0])?;
    }
    // A resumed run appends without a second header.
    let mut log = MetricsLog::open(&dir)?;
    log.write(&h[1])?;
    log.write(&h[2])?;
    let csv = std::fs::read_to_string(dir.join("metrics.csv"))?;
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 4);
    assert!(lines[0].starts_with("epoch,steps,train_loss"));
    assert_eq!(lines[2], "2,200,0.5,0.7,,,0.05,2.5,1000");
    assert_eq!(MetricsLog::read_jsonl(&dir.join("metrics.jsonl"))?, h);
    std::fs::write(dir.join("bad.jsonl"), "{\"epoch\": 1}\n")?;
    let err = MetricsLog::read_jsonl(&dir.join("bad.jsonl")).unwrap_err();
    assert!(err.to_string().contains("bad.jsonl:1"), "{err}");
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

#[test]
fn curves_are_drawn_to_a_png() -> Result<()> {
    let dir = temp_dir("plot");
    let path = dir.join("curves.png");
    match plot_curves(&path, &history()) {
        Ok(()) => {
            let bytes = std::fs::read(&path)?;
            assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
            // Width and height from the IHDR chunk.
            assert_eq!(u32::from_be_bytes(bytes[16..20].try_into().unwrap()), 1000);
            assert_eq!(u32::from_be_bytes(bytes[20..24].try_into().unwrap()), 400);
        }
        // Machines without the DejaVu font get a clear error instead of a picture.
        Err(e) => assert!(e.to_string().contains("fonts-dejavu-core"), "{e}"),
    }
    assert!(plot_curves(&path, &[]).is_err());
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
