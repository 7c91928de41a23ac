//! Loss and accuracy curves as a PNG (plotters, bitmap backend, text through ab_glyph).

use super::EpochMetrics;
use crate::error::{Error, Result};
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};
use std::path::Path;
use std::sync::OnceLock;

/// Fonts tried in order; the ab_glyph text backend needs the bytes of a TrueType file.
const FONT_PATHS: [&str; 3] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
];

/// Register a TrueType font under the name "sans-serif" for plotters' text, once per
/// process: the file `TINYTORCH_FONT` names if set, else the first of [`FONT_PATHS`] found
/// (DejaVu Sans, Debian's `fonts-dejavu-core`); an error names the paths tried. Every chart
/// with text needs it, the bitmap and the SVG backends alike (plotters measures text
/// through it).
pub fn register_plot_font() -> Result<()> {
    static FONT: OnceLock<bool> = OnceLock::new();
    let from_env = std::env::var("TINYTORCH_FONT").ok();
    let ok = *FONT.get_or_init(|| {
        let mut paths: Vec<&str> = from_env.iter().map(String::as_str).collect();
        paths.extend(FONT_PATHS);
        paths.iter().any(|p| match std::fs::read(p) {
            // plotters keeps a &'static reference; the font lives as long as the process.
            Ok(bytes) => register_font("sans-serif", FontStyle::Normal, bytes.leak()).is_ok(),
            Err(_) => false,
        })
    });
    if ok {
        Ok(())
    } else {
        let tried = match &from_env {
            Some(p) => format!("TINYTORCH_FONT={p}, {}", FONT_PATHS.join(", ")),
            None => FONT_PATHS.join(", "),
        };
        Err(Error::invalid(
            "plot",
            format!(
                "no TrueType font found (looked for {tried}); install the Debian package \
                 fonts-dejavu-core or set TINYTORCH_FONT to a .ttf file"
            ),
        ))
    }
}

fn plot_err(e: impl std::fmt::Display) -> Error {
    Error::invalid("plot_curves", e.to_string())
}

/// One curve of a panel: its label, colour and (epoch, value) points.
type Series<'a> = (&'a str, RGBColor, Vec<(f64, f64)>);

/// One panel: `series` (label, colour, points) against the epoch.
fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    epochs: usize,
    series: &[Series<'_>],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let values = series
        .iter()
        .flat_map(|(_, _, pts)| pts.iter().map(|p| p.1));
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    let pad = ((hi - lo) * 0.05).max(1e-3);
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(0.5f64..epochs as f64 + 0.5, (lo - pad)..(hi + pad))
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("epoch")
        .x_labels(epochs.min(12))
        .x_label_formatter(&|x| format!("{x:.0}"))
        .draw()
        .map_err(plot_err)?;
    for (label, color, pts) in series {
        let color = *color;
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .map_err(plot_err)?
            .label(*label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(plot_err)
}

/// Draw the training and test loss (left) and accuracy in percent (right) of `history` into
/// a 1000x400 PNG at `path`.
pub fn plot_curves(path: &Path, history: &[EpochMetrics]) -> Result<()> {
    if history.is_empty() {
        return Err(Error::invalid("plot_curves", "no epochs to plot"));
    }
    register_plot_font()?;
    let root = BitMapBackend::new(path, (1000, 400)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let (left, right) = root.split_horizontally(500);
    let curve = |f: &dyn Fn(&EpochMetrics) -> Option<f64>| -> Vec<(f64, f64)> {
        history
            .iter()
            .filter_map(|m| f(m).map(|v| (m.epoch as f64, v)))
            .collect()
    };
    let with_test = |train: Vec<(f64, f64)>, test: Vec<(f64, f64)>| {
        let mut s = vec![("train", BLUE, train)];
        if !test.is_empty() {
            s.push(("test", RED, test));
        }
        s
    };
    let epochs = history.iter().map(|m| m.epoch).max().unwrap_or(1);
    panel(
        &left,
        "loss",
        epochs,
        &with_test(curve(&|m| Some(m.train_loss)), curve(&|m| m.test_loss)),
    )?;
    panel(
        &right,
        "accuracy (%)",
        epochs,
        &with_test(
            curve(&|m| Some(m.train_acc * 100.0)),
            curve(&|m| m.test_acc.map(|a| a * 100.0)),
        ),
    )?;
    root.present().map_err(plot_err)
}
