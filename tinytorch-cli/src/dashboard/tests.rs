//! The data endpoints, over a log directory of hand-written run files: served on a free
//! port and fetched with plain HTTP/1.1 requests.

use super::router;
use super::runs::LogDir;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A log directory with two good runs and one whose files are corrupt.
fn logdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tt_dash_api_{tag}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    for run in ["a", "b", "broken"] {
        std::fs::create_dir_all(d.join(run)).unwrap();
    }
    let mut steps = String::new();
    for s in 1..=6u64 {
        let v = json!({"step": s * 10, "epoch": 1 + (s - 1) / 3, "epoch_progress": s as f64 / 3.0,
                       "loss": 2.0 / s as f64, "acc": 0.1 * s as f64, "lr": 0.1, "samples_per_s": 500.0});
        steps.push_str(&format!("{v}\n"));
    }
    let mut epochs = String::new();
    for e in 1..=2u64 {
        let v = json!({"epoch": e, "steps": e * 30, "train_loss": 1.0, "train_acc": 0.5,
                       "test_loss": 1.0 / e as f64, "test_acc": 0.4 + 0.1 * e as f64, "lr": 0.1,
                       "train_s": 1.0, "samples_per_s": 500.0});
        epochs.push_str(&format!("{v}\n"));
    }
    std::fs::write(d.join("a/steps.jsonl"), &steps).unwrap();
    std::fs::write(d.join("a/metrics.jsonl"), &epochs).unwrap();
    std::fs::write(d.join("b/metrics.jsonl"), &epochs).unwrap();
    let hist = |step: u64| {
        json!({"step": step, "name": "0.weight", "shape": [2, 2],
               "weight": {"min": -1.0, "max": 1.0, "counts": [1, 2, 1], "nonfinite": 0, "norm": 1.5},
               "grad": {"min": -0.1, "max": 0.1, "counts": [2, 0, 2], "nonfinite": 0, "norm": 0.2}})
    };
    std::fs::write(
        d.join("a/histograms.jsonl"),
        format!("{}\n{}\n", hist(10), hist(20)),
    )
    .unwrap();
    let eval = json!({"epoch": 2, "step": 60, "classes": ["x", "y"], "image_shape": [1, 2, 2],
                      "samples": 4, "confusion": [[1, 1], [0, 2]],
                      "misclassified": [{"index": 1, "true": 0, "pred": 1, "confidence": 0.7, "pixels_hex": "00ff7f10"}],
                      "gallery": [{"index": 0, "true": 0, "pred": 0, "confidence": 0.9, "pixels_hex": "00ff7f10"}]});
    std::fs::write(d.join("a/eval.json"), eval.to_string()).unwrap();
    std::fs::write(
        d.join("b/samples.jsonl"),
        "{\"step\": 200, \"val_loss\": 1.5, \"text\": \"hello\"}\n",
    )
    .unwrap();
    // Corrupt: a line of garbage between good lines, an eval.json cut short.
    std::fs::write(
        d.join("broken/metrics.jsonl"),
        format!(
            "{}garbage\n",
            epochs.lines().next().unwrap().to_owned() + "\n"
        ),
    )
    .unwrap();
    std::fs::write(d.join("broken/eval.json"), "{\"epoch\": 1, \"confu").unwrap();
    d
}

/// Serve `dir` on a free port in a background runtime.
fn serve(dir: &Path) -> SocketAddr {
    let logdir = LogDir::open(dir).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            axum::serve(listener, router(logdir)).await.unwrap();
        });
    });
    rx.recv().unwrap()
}

/// GET `path`: status and body.
fn get(addr: SocketAddr, path: &str) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let mut body = raw[split + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = dechunk(&body);
    }
    (status, body)
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let eol = b.windows(2).position(|w| w == b"\r\n").unwrap();
        let n = usize::from_str_radix(std::str::from_utf8(&b[..eol]).unwrap().trim(), 16).unwrap();
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&b[eol + 2..eol + 2 + n]);
        b = &b[eol + 4 + n..];
    }
}

fn get_json(addr: SocketAddr, path: &str) -> (u16, Value) {
    let (status, body) = get(addr, path);
    (status, serde_json::from_slice(&body).unwrap())
}

#[test]
fn runs_list_every_run_with_its_errors_and_the_others_stay_whole() {
    let d = logdir("runs");
    let addr = serve(&d);
    let (status, v) = get_json(addr, "/api/runs");
    assert_eq!(status, 200);
    let runs = v["runs"].as_array().unwrap();
    let ids: Vec<&str> = runs.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["a", "b", "broken"]);
    assert_eq!(runs[0]["errors"], json!([]));
    assert_eq!(runs[0]["last_step"], 60);
    assert_eq!(runs[1]["kind"], "language model");
    let errors = runs[2]["errors"].as_array().unwrap();
    assert!(
        errors[0]
            .as_str()
            .unwrap()
            .starts_with("metrics.jsonl line 2"),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.as_str().unwrap().starts_with("eval.json")),
        "{errors:?}"
    );
    assert_eq!(
        runs[2]["epochs"], 1,
        "the good line of the broken run still counts"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn charts_draw_every_logged_point_of_the_chosen_runs() {
    let d = logdir("chart");
    let addr = serve(&d);
    let (status, v) = get_json(
        addr,
        "/api/chart?metric=loss&x=step&runs=a,b,broken,nope&smooth=0.5",
    );
    assert_eq!(status, 200);
    let series: Vec<(String, String, u64)> = v["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["run"].as_str().unwrap().into(),
                s["label"].as_str().unwrap().into(),
                s["points"].as_u64().unwrap(),
            )
        })
        .collect();
    let want = [
        ("a", "train", 6),
        ("a", "test", 2),
        ("b", "train (per epoch)", 2),
        ("b", "validation", 2),
        ("broken", "train (per epoch)", 1),
        ("broken", "test", 1),
    ];
    assert_eq!(series.len(), want.len(), "{series:?}");
    for (got, want) in series.iter().zip(want) {
        assert_eq!((got.0.as_str(), got.1.as_str(), got.2), want);
    }
    let errors: Vec<&str> = v["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("broken: metrics.jsonl line 2")),
        "{errors:?}"
    );
    assert!(errors.contains(&"no run 'nope'"), "{errors:?}");
    let svg = v["svg"].as_str().unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("a train") && svg.contains("b validation"));
    // The epoch axis, and bad parameters.
    let (status, v) = get_json(addr, "/api/chart?metric=accuracy&x=epoch&runs=a");
    assert_eq!(status, 200);
    assert_eq!(v["series"][0]["points"], 6);
    for bad in [
        "/api/chart?metric=nope&runs=a",
        "/api/chart?metric=loss&x=time&runs=a",
        "/api/chart?metric=loss&smooth=1.5&runs=a",
        "/api/chart?metric=loss&smooth=x&runs=a",
    ] {
        let (status, v) = get_json(addr, bad);
        assert_eq!(status, 400, "{bad}");
        assert!(v["error"].is_string(), "{bad}");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn paths_outside_the_log_directory_are_refused() {
    let d = logdir("traversal");
    // A run outside the log directory, linked into it, is not a run of it.
    let outside = d.with_extension("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("metrics.jsonl"), "").unwrap();
    std::fs::write(outside.join("model.json"), "{\"secret\": 1}").unwrap();
    std::os::unix::fs::symlink(&outside, d.join("linked")).unwrap();
    let addr = serve(&d);
    let (_, v) = get_json(addr, "/api/runs");
    assert!(!v.to_string().contains("linked"));
    for run in [
        "linked",
        "../a",
        "a/..",
        "..%2Fa",
        "%2Fetc",
        "a%2F..%2F..",
        "",
    ] {
        let (status, v) = get_json(addr, &format!("/api/model?run={run}"));
        assert_eq!(status, 404, "run={run}: {v}");
        assert!(!v.to_string().contains("secret"));
    }
    for path in [
        "/../../etc/passwd",
        "/app.js/../../etc/passwd",
        "/api/../Cargo.toml",
    ] {
        let (status, body) = get(addr, path);
        assert!(status == 404 || status == 400, "{path}: {status}");
        assert!(!String::from_utf8_lossy(&body).contains("root:"));
    }
    std::fs::remove_dir_all(&d).unwrap();
    std::fs::remove_dir_all(&outside).unwrap();
}

#[test]
fn evaluation_images_histograms_and_samples() {
    let d = logdir("eval");
    let addr = serve(&d);
    let (status, v) = get_json(addr, "/api/eval?run=a");
    assert_eq!(status, 200);
    let svg = v["confusion_svg"].as_str().unwrap().replace('\n', "");
    assert!(svg.contains(">2</text>"), "{svg}");
    assert_eq!(v["misclassified"][0]["pred"], 1);
    assert!(v["misclassified"][0].get("pixels_hex").is_none());
    let (status, png) = get(addr, "/api/image.png?run=a&set=misclassified&i=0");
    assert_eq!(status, 200);
    assert_eq!(&png[1..4], b"PNG");
    assert_eq!(
        get(addr, "/api/image.png?run=a&set=misclassified&i=5").0,
        404
    );
    assert_eq!(get(addr, "/api/image.png?run=a&set=secrets&i=0").0, 400);
    assert_eq!(get(addr, "/api/image.png?run=a&set=gallery&i=-1").0, 400);
    // A corrupt eval.json is that run's error, not the server's.
    let (status, v) = get_json(addr, "/api/eval?run=broken");
    assert_eq!(status, 422);
    assert!(v["error"].as_str().unwrap().starts_with("eval.json"), "{v}");
    assert_eq!(get(addr, "/api/eval?run=b").0, 404);
    // No checkpoint: feature maps say so.
    let (status, v) = get_json(addr, "/api/features?run=a&i=0");
    assert_eq!(status, 404);
    assert!(
        v["error"].as_str().unwrap().contains("no checkpoint"),
        "{v}"
    );

    let (status, v) = get_json(addr, "/api/histograms?run=a&param=0.weight");
    assert_eq!(status, 200);
    assert_eq!(v["parameters"], json!(["0.weight"]));
    assert!(v["weight_svg"].as_str().unwrap().contains("<rect"));
    assert!(v["grad_norms_svg"].as_str().unwrap().contains("log scale"));
    let (_, v) = get_json(addr, "/api/samples?run=b");
    assert_eq!(v["samples"][0]["text"], "hello");
    assert_eq!(get_json(addr, "/api/model?run=a").1, Value::Null);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn the_event_stream_reports_a_run_whose_files_change() {
    let d = logdir("events");
    let addr = serve(&d);
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    write!(
        s,
        "GET /api/events HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n"
    )
    .unwrap();
    // Let the stream take its first snapshot, then append a step to run b.
    std::thread::sleep(Duration::from_millis(300));
    let line = json!({"step": 70, "epoch_progress": 2.5, "loss": 0.1}).to_string() + "\n";
    std::fs::write(d.join("b/steps.jsonl"), line).unwrap();
    let started = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while started.elapsed() < Duration::from_secs(10) {
        if let Ok(n) = s.read(&mut buf) {
            got.extend_from_slice(&buf[..n]);
        }
        let text = String::from_utf8_lossy(&got);
        if text.contains("event: change") && text.contains("\"b\"") {
            std::fs::remove_dir_all(&d).unwrap();
            return;
        }
    }
    panic!(
        "no change event for run b within 10 s: {}",
        String::from_utf8_lossy(&got)
    );
}
