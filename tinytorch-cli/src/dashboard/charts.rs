//! The dashboard's charts, drawn on the server by plotters as SVG: curves of several runs
//! against step or epoch, a parameter's histograms over time as a heat map, and the
//! confusion matrix.

use plotters::coord::Shift;
use plotters::prelude::*;
use tinytorch::{Error, Result};

/// Chart size in SVG pixels (the page scales it to its column).
const SIZE: (u32, u32) = (640, 360);

/// Matplotlib's tab10 colours: run `i` of the log directory is drawn in `PALETTE[i % 10]`.
pub const PALETTE: [(u8, u8, u8); 10] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
];

/// The CSS colour of run number `i`.
pub fn css_color(i: usize) -> String {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    format!("#{r:02x}{g:02x}{b:02x}")
}

fn chart_err(e: impl std::fmt::Display) -> Error {
    Error::invalid("dashboard chart", e.to_string())
}

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// A solid line (a smoothed or dense curve).
    Line,
    /// The raw curve behind its smoothed one: thin and faint.
    Faint,
    /// Per-epoch points: a dashed line with a marker at every point.
    Markers,
}

/// One series of a line chart.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend text (None: not in the legend).
    pub name: Option<String>,
    /// Index into [`PALETTE`].
    pub color: usize,
    /// How to draw it.
    pub style: Style,
    /// (x, y) points, sorted by x.
    pub points: Vec<(f64, f64)>,
}

fn range_of(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values.fold(None, |acc, v| match acc {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

/// Pad a range so that flat curves and single points are visible.
fn padded((lo, hi): (f64, f64)) -> (f64, f64) {
    let pad = ((hi - lo) * 0.05)
        .max(hi.abs().max(lo.abs()) * 0.05)
        .max(1e-9);
    (lo - pad, hi + pad)
}

/// A chart's frame: its title and room for the axis labels.
fn framed<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    title: &str,
) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut b = ChartBuilder::on(root);
    b.caption(title, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(34)
        .y_label_area_size(64);
    b
}

fn empty_chart(root: &DrawingArea<SVGBackend<'_>, Shift>, title: &str, note: &str) -> Result<()> {
    root.fill(&WHITE).map_err(chart_err)?;
    root.draw(&Text::new(
        title.to_string(),
        (16, 16),
        ("sans-serif", 18).into_font(),
    ))
    .map_err(chart_err)?;
    root.draw(&Text::new(
        note.to_string(),
        (SIZE.0 as i32 / 2 - 60, SIZE.1 as i32 / 2),
        ("sans-serif", 15)
            .into_font()
            .color(&RGBColor(120, 120, 120)),
    ))
    .map_err(chart_err)
}

/// The y axis of a line chart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum YScale {
    /// Linear.
    Linear,
    /// Base-10 logarithmic, where every value is positive (else linear): for quantities that
    /// vanish or explode, such as gradient norms.
    Log,
}

/// A line chart of `series` with the given titles, as an SVG document.
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    scale: YScale,
) -> Result<String> {
    tinytorch::train::register_plot_font()?;
    let log = scale == YScale::Log
        && series.iter().flat_map(|s| &s.points).all(|p| p.1 > 0.0)
        && series.iter().any(|s| !s.points.is_empty());
    // A log axis is a linear one over log10(y), labelled with y.
    let logged: Vec<Series>;
    let series = if log {
        logged = series
            .iter()
            .map(|s| Series {
                points: s.points.iter().map(|&(x, y)| (x, y.log10())).collect(),
                ..s.clone()
            })
            .collect();
        &logged[..]
    } else {
        series
    };
    let y_tick = move |v: &f64| short_number(if log { 10f64.powf(*v) } else { *v });
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        let all = || series.iter().flat_map(|s| s.points.iter());
        let (Some(xr), Some(yr)) = (range_of(all().map(|p| p.0)), range_of(all().map(|p| p.1)))
        else {
            empty_chart(&root, title, "no data yet")?;
            root.present().map_err(chart_err)?;
            drop(root);
            return Ok(svg);
        };
        root.fill(&WHITE).map_err(chart_err)?;
        let (x0, x1) = if xr.0 == xr.1 { padded(xr) } else { xr };
        let (y0, y1) = padded(yr);
        let mut chart = framed(&root, title)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(chart_err)?;
        chart
            .configure_mesh()
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .x_desc(x_label)
            .y_desc(if log {
                format!("{y_label} (log scale)")
            } else {
                y_label.to_string()
            })
            .light_line_style(RGBColor(235, 235, 235))
            .y_label_formatter(&y_tick)
            .x_label_formatter(&|v| short_number(*v))
            .draw()
            .map_err(chart_err)?;
        for s in series {
            let (r, g, b) = PALETTE[s.color % PALETTE.len()];
            let color = RGBColor(r, g, b);
            let drawn = match s.style {
                Style::Faint => chart.draw_series(LineSeries::new(
                    s.points.clone(),
                    color.mix(0.25).stroke_width(1),
                )),
                Style::Line => {
                    chart.draw_series(LineSeries::new(s.points.clone(), color.stroke_width(2)))
                }
                Style::Markers => chart.draw_series(
                    LineSeries::new(s.points.clone(), color.stroke_width(2)).point_size(4),
                ),
            }
            .map_err(chart_err)?;
            if let Some(name) = &s.name {
                drawn
                    .label(name.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
            }
        }
        if series.iter().any(|s| s.name.is_some()) {
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.85))
                .border_style(RGBColor(200, 200, 200))
                .label_font(("sans-serif", 13))
                .draw()
                .map_err(chart_err)?;
        }
        root.present().map_err(chart_err)?;
    }
    Ok(svg)
}

/// A compact tick label: 3 significant digits, scientific outside [1e-3, 1e5); rounding
/// noise around zero (a tick at -5e-17) is 0.
fn short_number(v: f64) -> String {
    let a = v.abs();
    if a < 1e-12 {
        "0".into()
    } else if !(1e-3..1e5).contains(&a) {
        format!("{v:.1e}")
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// One logged histogram: the step and its bins over [min, max].
pub struct HistogramRow {
    /// Optimizer step.
    pub step: f64,
    /// Lowest finite value.
    pub min: f64,
    /// Highest finite value.
    pub max: f64,
    /// Counts of equal bins from min to max.
    pub counts: Vec<f64>,
}

/// A parameter's histograms over time: one column per logged step, the value on the y
/// axis, each bin shaded by its share of that step's values (darker: more).
pub fn histogram_heatmap(title: &str, rows: &[HistogramRow], color: usize) -> Result<String> {
    tinytorch::train::register_plot_font()?;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        let yr = range_of(rows.iter().flat_map(|r| [r.min, r.max]));
        let xr = range_of(rows.iter().map(|r| r.step));
        let (Some(yr), Some(xr)) = (yr, xr) else {
            empty_chart(&root, title, "no histograms logged")?;
            root.present().map_err(chart_err)?;
            drop(root);
            return Ok(svg);
        };
        root.fill(&WHITE).map_err(chart_err)?;
        // Each column spans to the next logged step (the last one as wide as the one before).
        let gap = if rows.len() > 1 {
            (xr.1 - xr.0) / (rows.len() - 1) as f64
        } else {
            1.0
        };
        let (y0, y1) = padded(yr);
        let mut chart = framed(&root, title)
            .build_cartesian_2d(xr.0..xr.1 + gap, y0..y1)
            .map_err(chart_err)?;
        chart
            .configure_mesh()
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .x_desc("step")
            .y_desc("value")
            .disable_x_mesh()
            .disable_y_mesh()
            .x_label_formatter(&|v| short_number(*v))
            .y_label_formatter(&|v| short_number(*v))
            .draw()
            .map_err(chart_err)?;
        let (r, g, b) = PALETTE[color % PALETTE.len()];
        let mut cells = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            let next = rows.get(i + 1).map_or(row.step + gap, |n| n.step);
            let total: f64 = row.counts.iter().sum();
            let bins = row.counts.len().max(1) as f64;
            let width = (row.max - row.min) / bins;
            for (k, &c) in row.counts.iter().enumerate() {
                if c <= 0.0 || total <= 0.0 {
                    continue;
                }
                // Shade by the bin's share, scaled so that a uniform spread is still visible.
                let alpha = (c / total * bins / 4.0).clamp(0.08, 1.0);
                let lo = row.min + k as f64 * width;
                let hi = if width > 0.0 {
                    lo + width
                } else {
                    lo + (y1 - y0) / 200.0
                };
                cells.push(Rectangle::new(
                    [(row.step, lo), (next, hi)],
                    RGBColor(r, g, b).mix(alpha).filled(),
                ));
            }
        }
        chart.draw_series(cells).map_err(chart_err)?;
        root.present().map_err(chart_err)?;
    }
    Ok(svg)
}

/// The confusion matrix: rows the true class, columns the predicted one, each cell shaded by
/// its share of the row and labelled with its count.
pub fn confusion_matrix(title: &str, classes: &[String], counts: &[Vec<u64>]) -> Result<String> {
    tinytorch::train::register_plot_font()?;
    let n = classes.len();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (640, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_err)?;
        let labels: Vec<String> = classes.to_vec();
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(130)
            .build_cartesian_2d(0f64..n as f64, n as f64..0f64)
            .map_err(chart_err)?;
        let name = |v: &f64| {
            let i = v.floor() as usize;
            if (*v - i as f64 - 0.5).abs() < 1e-6 && i < n {
                labels[i].clone()
            } else {
                String::new()
            }
        };
        let index = |v: &f64| {
            let i = v.floor() as usize;
            if (*v - i as f64 - 0.5).abs() < 1e-6 && i < n {
                i.to_string()
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .disable_mesh()
            .x_desc("predicted class (numbered as the rows)")
            .y_desc("true class")
            .x_labels(2 * n + 1)
            .y_labels(2 * n + 1)
            .x_label_formatter(&index)
            .y_label_formatter(&|v| {
                let s = name(v);
                if s.is_empty() {
                    s
                } else {
                    format!("{} {s}", v.floor())
                }
            })
            .draw()
            .map_err(chart_err)?;
        let mut cells = Vec::new();
        let mut texts = Vec::new();
        for (t, row) in counts.iter().enumerate().take(n) {
            let total: u64 = row.iter().sum();
            for (p, &c) in row.iter().enumerate().take(n) {
                let share = if total > 0 {
                    c as f64 / total as f64
                } else {
                    0.0
                };
                let color = if t == p {
                    RGBColor(44, 160, 44)
                } else {
                    RGBColor(214, 39, 40)
                };
                let (x, y) = (p as f64, t as f64);
                cells.push(Rectangle::new(
                    [(x, y), (x + 1.0, y + 1.0)],
                    color.mix(share.max(0.03)).filled(),
                ));
                if c > 0 {
                    let ink = if share > 0.5 { WHITE } else { BLACK };
                    texts.push(Text::new(
                        c.to_string(),
                        (x + 0.3, y + 0.6),
                        ("sans-serif", 12).into_font().color(&ink),
                    ));
                }
            }
        }
        chart.draw_series(cells).map_err(chart_err)?;
        chart.draw_series(texts).map_err(chart_err)?;
        root.present().map_err(chart_err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_chart_draws_every_point_of_every_series() {
        let series = vec![
            Series {
                name: Some("a train".into()),
                color: 0,
                style: Style::Line,
                points: (0..7).map(|i| (i as f64, 1.0 / (i + 1) as f64)).collect(),
            },
            Series {
                name: Some("a test".into()),
                color: 0,
                style: Style::Markers,
                points: vec![(3.0, 0.4), (6.0, 0.3)],
            },
        ];
        let svg = line_chart("loss", "step", "loss", &series, YScale::Linear).unwrap();
        let polylines: Vec<usize> = svg
            .split("<polyline")
            .skip(1)
            .map(|p| {
                let pts = p
                    .split("points=\"")
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap();
                pts.split_whitespace().count()
            })
            .collect();
        assert!(polylines.contains(&7), "{polylines:?}");
        assert!(polylines.contains(&2), "{polylines:?}");
        // The markers of the test points.
        assert!(svg.matches("<circle").count() >= 2);
    }

    #[test]
    fn empty_charts_say_so() {
        let svg = line_chart("loss", "step", "loss", &[], YScale::Log).unwrap();
        assert!(svg.contains("no data yet"));
        let svg = histogram_heatmap("w", &[], 0).unwrap();
        assert!(svg.contains("no histograms logged"));
    }

    #[test]
    fn confusion_cells_carry_their_counts() {
        let classes = vec!["a".to_string(), "b".to_string()];
        let svg = confusion_matrix("c", &classes, &[vec![5, 1], vec![0, 7]]).unwrap();
        let svg = svg.replace('\n', "");
        for c in ["5", "1", "7"] {
            assert!(svg.contains(&format!(">{c}</text>")), "{c}");
        }
    }
}
