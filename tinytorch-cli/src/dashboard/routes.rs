//! The dashboard's HTTP interface: the page and its script, JSON data endpoints, SVG charts,
//! PNG images and a server-sent event stream that says when a run's files changed. Runs are
//! named by id in the query string and looked up among the log directory's runs; nothing
//! else in a request becomes a path.

use super::charts::{self, css_color, HistogramRow, Series, Style, YScale};
use super::features::{feature_maps, LayerMaps};
use super::images::{decode_hex, planar_png};
use super::runs::{curves, read_json, read_lines, smooth, LogDir, Metric, Run, XAxis};
use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures_util::stream::Stream;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const STYLE_CSS: &str = include_str!("assets/style.css");

/// How often the event stream looks at the runs' files.
const POLL: Duration = Duration::from_millis(500);

/// Feature maps computed for (run id, gallery image, checkpoint time).
struct CachedMaps {
    run: String,
    image: usize,
    checkpoint_time: SystemTime,
    maps: Arc<Vec<LayerMaps>>,
}

/// What the handlers share.
pub struct App {
    logdir: LogDir,
    /// The last feature maps computed: recomputed when the run, image or checkpoint changes.
    features: Mutex<Option<CachedMaps>>,
}

/// The router over `logdir`.
pub fn router(logdir: LogDir) -> Router {
    let app = Arc::new(App {
        logdir,
        features: Mutex::new(None),
    });
    Router::new()
        .route(
            "/",
            get(|| async { page(INDEX_HTML, "text/html; charset=utf-8") }),
        )
        .route("/app.js", get(|| async { page(APP_JS, "text/javascript") }))
        .route("/style.css", get(|| async { page(STYLE_CSS, "text/css") }))
        .route("/api/runs", get(runs))
        .route("/api/chart", get(chart))
        .route("/api/model", get(model))
        .route("/api/histograms", get(histograms))
        .route("/api/eval", get(eval))
        .route("/api/image.png", get(image))
        .route("/api/features", get(features))
        .route("/api/feature.png", get(feature_png))
        .route("/api/samples", get(samples))
        .route("/api/events", get(events))
        .with_state(app)
}

fn page(body: &'static str, mime: &'static str) -> Response {
    ([(header::CONTENT_TYPE, mime)], body).into_response()
}

/// An error as `{"error": ...}` with its status.
struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, axum::Json(json!({ "error": self.1 }))).into_response()
    }
}

impl From<tinytorch::Error> for ApiError {
    fn from(e: tinytorch::Error) -> ApiError {
        ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
    }
}

type Api<T> = std::result::Result<T, ApiError>;
type Params = Query<HashMap<String, String>>;

fn bad(msg: impl Into<String>) -> ApiError {
    ApiError(StatusCode::BAD_REQUEST, msg.into())
}

fn param<'a>(q: &'a Params, key: &str) -> Api<&'a str> {
    q.get(key)
        .map(String::as_str)
        .ok_or_else(|| bad(format!("missing query parameter '{key}'")))
}

fn find_run(app: &App, id: &str) -> Api<Run> {
    app.logdir.run(id).ok_or_else(|| {
        ApiError(
            StatusCode::NOT_FOUND,
            format!("no run '{id}' in the log directory"),
        )
    })
}

fn json_of(v: Value) -> Response {
    axum::Json(v).into_response()
}

/// Every run: id, colour, which files it has, epochs and steps so far, and its errors.
async fn runs(State(app): State<Arc<App>>) -> Response {
    let list: Vec<Value> = app
        .logdir
        .runs()
        .iter()
        .enumerate()
        .map(|(i, run)| {
            let epochs = read_lines(run, "metrics.jsonl");
            let steps = read_lines(run, "steps.jsonl");
            let mut errors: Vec<String> =
                [epochs.error, steps.error].into_iter().flatten().collect();
            for doc in ["model.json", "eval.json"] {
                if let Err(e) = read_json(run, doc) {
                    errors.push(e);
                }
            }
            let last_step = steps
                .rows
                .last()
                .and_then(|r| r["step"].as_u64())
                .or_else(|| epochs.rows.last().and_then(|r| r["steps"].as_u64()));
            let files: Vec<&str> = super::runs::RUN_FILES
                .iter()
                .copied()
                .filter(|f| run.file(f).is_some())
                .collect();
            json!({
                "id": run.id,
                "color": css_color(i),
                "kind": if run.is_language_model() { "language model" } else { "classifier" },
                "files": files,
                "epochs": epochs.rows.len(),
                "last_step": last_step,
                "errors": errors,
            })
        })
        .collect();
    json_of(json!({ "logdir": app.logdir.root().display().to_string(), "runs": list }))
}

/// `?metric=loss|accuracy|lr|samples_per_s&x=step|epoch&runs=a,b&smooth=0.6`: the chart as
/// SVG, with the series drawn (run, label, number of points) and the errors met.
async fn chart(State(app): State<Arc<App>>, q: Params) -> Api<Response> {
    let metric = Metric::parse(param(&q, "metric")?).ok_or_else(|| bad("unknown metric"))?;
    let x = match q.get("x").map(String::as_str).unwrap_or("step") {
        "step" => XAxis::Step,
        "epoch" => XAxis::Epoch,
        other => return Err(bad(format!("unknown x axis '{other}'"))),
    };
    let weight: f64 = match q.get("smooth") {
        Some(s) => s.parse().map_err(|_| bad("smooth must be a number"))?,
        None => 0.0,
    };
    if !(0.0..1.0).contains(&weight) {
        return Err(bad("smooth must be in [0, 1)"));
    }
    let wanted: Vec<&str> = q
        .get("runs")
        .map(|r| r.split(',').filter(|s| !s.is_empty()).collect())
        .unwrap_or_default();
    let all = app.logdir.runs();
    let mut series = Vec::new();
    let mut drawn = Vec::new();
    let mut errors = Vec::new();
    for id in wanted {
        let Some(color) = all.iter().position(|r| r.id == id) else {
            errors.push(format!("no run '{id}'"));
            continue;
        };
        let (cs, errs) = curves(&all[color], metric, x);
        errors.extend(errs.into_iter().map(|e| format!("{id}: {e}")));
        for c in cs {
            let name = Some(format!("{id} {}", c.label));
            drawn.push(json!({"run": id, "label": c.label, "points": c.points.len()}));
            if c.per_step && weight > 0.0 && c.points.len() > 1 {
                series.push(Series {
                    name: None,
                    color,
                    style: Style::Faint,
                    points: c.points.clone(),
                });
                series.push(Series {
                    name,
                    color,
                    style: Style::Line,
                    points: smooth(&c.points, weight),
                });
            } else {
                let style = if c.per_step {
                    Style::Line
                } else {
                    Style::Markers
                };
                series.push(Series {
                    name,
                    color,
                    style,
                    points: c.points,
                });
            }
        }
    }
    let x_label = if x == XAxis::Step { "step" } else { "epoch" };
    // Rates of runs as different as an MLP and a CNN (or a learning rate decayed by 1000x)
    // share a chart only on a log scale.
    let scale = match metric {
        Metric::LearningRate | Metric::SamplesPerSecond => YScale::Log,
        Metric::Loss | Metric::Accuracy => YScale::Linear,
    };
    let svg = charts::line_chart(metric.title(), x_label, metric.title(), &series, scale)?;
    Ok(json_of(
        json!({ "svg": svg, "series": drawn, "errors": errors }),
    ))
}

/// `?run=ID`: model.json (the profiler's layer table), or null.
async fn model(State(app): State<Arc<App>>, q: Params) -> Api<Response> {
    let run = find_run(&app, param(&q, "run")?)?;
    let doc =
        read_json(&run, "model.json").map_err(|e| ApiError(StatusCode::UNPROCESSABLE_ENTITY, e))?;
    Ok(json_of(json!(doc)))
}

/// `?run=ID[&param=NAME]`: the parameters with histograms and, for `param`, SVG heat maps
/// of its values and gradients over time; always the chart of every parameter's gradient
/// norm over time.
async fn histograms(State(app): State<Arc<App>>, q: Params) -> Api<Response> {
    let run = find_run(&app, param(&q, "run")?)?;
    let color = app
        .logdir
        .runs()
        .iter()
        .position(|r| r.id == run.id)
        .unwrap_or(0);
    let lines = read_lines(&run, "histograms.jsonl");
    let mut names: Vec<String> = Vec::new();
    let mut norms: Vec<Series> = Vec::new();
    for r in &lines.rows {
        let (Some(name), Some(step)) = (r["name"].as_str(), r["step"].as_f64()) else {
            continue;
        };
        let i = match names.iter().position(|n| n == name) {
            Some(i) => i,
            None => {
                names.push(name.to_string());
                norms.push(Series {
                    name: Some(name.to_string()),
                    color: names.len() - 1,
                    style: Style::Line,
                    points: vec![],
                });
                names.len() - 1
            }
        };
        if let Some(n) = r["grad"]["norm"].as_f64() {
            norms[i].points.push((step, n));
        }
    }
    let title = "gradient L2 norm per parameter";
    let norm_svg = charts::line_chart(title, "step", "norm", &norms, YScale::Log)?;
    let mut out = json!({
        "parameters": names,
        "grad_norms_svg": norm_svg,
        "error": lines.error,
    });
    if let Some(p) = q.get("param") {
        let rows_of = |kind: &str| -> Vec<HistogramRow> {
            lines
                .rows
                .iter()
                .filter(|r| r["name"].as_str() == Some(p.as_str()))
                .filter_map(|r| {
                    let h = &r[kind];
                    Some(HistogramRow {
                        step: r["step"].as_f64()?,
                        min: h["min"].as_f64()?,
                        max: h["max"].as_f64()?,
                        counts: h["counts"]
                            .as_array()?
                            .iter()
                            .map(|c| c.as_f64().unwrap_or(0.0))
                            .collect(),
                    })
                })
                .collect()
        };
        out["weight_svg"] = json!(charts::histogram_heatmap(
            &format!("{p}: values"),
            &rows_of("weight"),
            color
        )?);
        out["grad_svg"] = json!(charts::histogram_heatmap(
            &format!("{p}: gradients"),
            &rows_of("grad"),
            color
        )?);
    }
    Ok(json_of(out))
}

fn eval_doc(run: &Run) -> Api<Value> {
    read_json(run, "eval.json")
        .map_err(|e| ApiError(StatusCode::UNPROCESSABLE_ENTITY, e))?
        .ok_or_else(|| {
            ApiError(
                StatusCode::NOT_FOUND,
                format!("run {} has no eval.json yet", run.id),
            )
        })
}

/// `?run=ID`: the latest evaluation: confusion matrix (SVG), the mistakes and the gallery
/// (labels, without their pixels: those come from /api/image.png).
async fn eval(State(app): State<Arc<App>>, q: Params) -> Api<Response> {
    let run = find_run(&app, param(&q, "run")?)?;
    let doc = eval_doc(&run)?;
    let classes: Vec<String> = serde_json::from_value(doc["classes"].clone()).unwrap_or_default();
    let confusion: Vec<Vec<u64>> =
        serde_json::from_value(doc["confusion"].clone()).map_err(|e| {
            ApiError(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!("eval.json confusion: {e}"),
            )
        })?;
    let title = format!("confusion matrix after epoch {}", doc["epoch"]);
    let svg = charts::confusion_matrix(&title, &classes, &confusion)?;
    let strip = |key: &str| -> Vec<Value> {
        doc[key]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|e| {
                        let mut e = e.clone();
                        if let Some(o) = e.as_object_mut() {
                            o.remove("pixels_hex");
                        }
                        e
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    Ok(json_of(json!({
        "epoch": doc["epoch"],
        "step": doc["step"],
        "samples": doc["samples"],
        "classes": classes,
        "confusion_svg": svg,
        "misclassified": strip("misclassified"),
        "gallery": strip("gallery"),
    })))
}

fn index_param(q: &Params) -> Api<usize> {
    param(q, "i")?
        .parse()
        .map_err(|_| bad("i must be a non-negative integer"))
}

/// `?run=ID&set=misclassified|gallery&i=K`: that test image as a PNG.
async fn image(State(app): State<Arc<App>>, q: Params) -> Api<Response> {
    let run = find_run(&app, param(&q, "run")?)?;
    let set = param(&q, "set")?;
    if set != "misclassified" && set != "gallery" {
        return Err(bad("set must be misclassified or gallery"));
    }
    let i = index_param(&q)?;
    let doc = eval_doc(&run)?;
    let entry = doc[set]
        .as_array()
        .and_then(|a| a.get(i))
        .ok_or_else(|| ApiError(StatusCode::NOT_FOUND, format!("no {set} image {i}")))?;
    let shape: [usize; 3] = serde_json::from_value(doc["image_shape"].clone()).map_err(|e| {
        ApiError(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("eval.json image_shape: {e}"),
        )
    })?;
    let pixels = decode_hex(entry["pixels_hex"].as_str().unwrap_or_default())?;
    let png = planar_png(&pixels, shape)?;
    Ok(([(header::CONTENT_TYPE, "image/png")], png).into_response())
}

/// The feature maps of gallery image `i`, computed once per checkpoint.
async fn maps_for(app: Arc<App>, run: Run, i: usize) -> Api<Arc<Vec<LayerMaps>>> {
    let ckpt_time = run
        .file("checkpoint.safetensors")
        .and_then(|p| std::fs::metadata(p).ok()?.modified().ok())
        .ok_or_else(|| {
            ApiError(
                StatusCode::NOT_FOUND,
                format!("run {} has no checkpoint yet", run.id),
            )
        })?;
    if let Some(c) = &*app.features.lock().unwrap_or_else(|e| e.into_inner()) {
        if c.run == run.id && c.image == i && c.checkpoint_time == ckpt_time {
            return Ok(c.maps.clone());
        }
    }
    let doc = eval_doc(&run)?;
    let id = run.id.clone();
    let maps = tokio::task::spawn_blocking(move || feature_maps(&run, &doc, i))
        .await
        .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
        .map_err(|e| ApiError(StatusCode::UNPROCESSABLE_ENTITY, e.to_string()))?;
    let maps = Arc::new(maps);
    *app.features.lock().unwrap_or_else(|e| e.into_inner()) = Some(CachedMaps {
        run: id,
        image: i,
        checkpoint_time: ckpt_time,
        maps: maps.clone(),
    });
    Ok(maps)
}

/// `?run=ID&i=K`: the convolutions of the latest checkpoint and their output shapes for
/// gallery image K (the maps themselves from /api/feature.png).
async fn features(State(app): State<Arc<App>>, q: Params) -> Api<Response> {
    let run = find_run(&app, param(&q, "run")?)?;
    let i = index_param(&q)?;
    let maps = maps_for(app, run, i).await?;
    let layers: Vec<Value> = maps
        .iter()
        .enumerate()
        .map(|(k, m)| json!({"layer": m.layer, "index": k, "shape": m.shape}))
        .collect();
    Ok(json_of(json!({ "layers": layers })))
}

/// `?run=ID&i=K&layer=L`: layer L's feature maps for gallery image K as a PNG grid.
async fn feature_png(State(app): State<Arc<App>>, q: Params) -> Api<Response> {
    let run = find_run(&app, param(&q, "run")?)?;
    let i = index_param(&q)?;
    let layer: usize = param(&q, "layer")?
        .parse()
        .map_err(|_| bad("layer must be an index"))?;
    let maps = maps_for(app, run, i).await?;
    let m = maps
        .get(layer)
        .ok_or_else(|| ApiError(StatusCode::NOT_FOUND, format!("no convolution {layer}")))?;
    Ok(([(header::CONTENT_TYPE, "image/png")], m.png.clone()).into_response())
}

/// `?run=ID`: a language model's sampled texts, one per checkpoint.
async fn samples(State(app): State<Arc<App>>, q: Params) -> Api<Response> {
    let run = find_run(&app, param(&q, "run")?)?;
    let lines = read_lines(&run, "samples.jsonl");
    Ok(json_of(
        json!({ "samples": lines.rows, "error": lines.error }),
    ))
}

/// A change event whenever any run's files change (or runs come and go): `data` lists the
/// ids of the runs that changed. Checked every [`POLL`].
async fn events(State(app): State<Arc<App>>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    type Prints = HashMap<String, Vec<(&'static str, u64, SystemTime)>>;
    let snapshot = |app: &App| -> Prints {
        app.logdir
            .runs()
            .iter()
            .map(|r| (r.id.clone(), r.fingerprint()))
            .collect()
    };
    let first = snapshot(&app);
    let stream = futures_util::stream::unfold((app, first), move |(app, before)| async move {
        loop {
            tokio::time::sleep(POLL).await;
            let a = app.clone();
            let now = tokio::task::spawn_blocking(move || snapshot(&a))
                .await
                .unwrap_or_default();
            let mut changed: Vec<&String> = now
                .iter()
                .filter(|(id, print)| before.get(*id) != Some(print))
                .map(|(id, _)| id)
                .collect();
            changed.extend(before.keys().filter(|id| !now.contains_key(*id)));
            if !changed.is_empty() {
                let event = Event::default()
                    .event("change")
                    .data(json!({ "runs": changed }).to_string());
                return Some((Ok(event), (app, now)));
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}
