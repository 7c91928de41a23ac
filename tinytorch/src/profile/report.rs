//! A profile as a table for people (`Display`) and as JSON for tools (`Profile::to_json`).

use super::{LayerRow, Phase, Profile};
use serde_json::{json, Value};
use std::fmt;

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

/// `12,345,678`.
fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn row_name(r: &LayerRow) -> &str {
    match r.name.as_deref() {
        None => "-",
        Some("") => "(model)",
        Some(n) => n,
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name_w = self
            .rows
            .iter()
            .map(|r| row_name(r).len())
            .max()
            .unwrap_or(5)
            .max(5);
        let kind_w = self
            .rows
            .iter()
            .map(|r| r.kind.len())
            .max()
            .unwrap_or(4)
            .max(4);
        let shape_w = self
            .rows
            .iter()
            .map(|r| format!("{:?}", r.output_shape).len())
            .max()
            .unwrap_or(12)
            .max(12);
        writeln!(
            f,
            "{:<name_w$}  {:<kind_w$}  {:<shape_w$}  {:>11}  {:>15}  {:>9}  {:>9}  {:>9}  {:>7}",
            "layer",
            "type",
            "output shape",
            "params",
            "FLOPs",
            "fwd ms",
            "bwd ms",
            "act MiB",
            "bound"
        )?;
        for r in &self.rows {
            writeln!(
                f,
                "{:<name_w$}  {:<kind_w$}  {:<shape_w$}  {:>11}  {:>15}  {:>9.3}  {:>9.3}  {:>9.3}  {:>7}",
                row_name(r),
                r.kind,
                format!("{:?}", r.output_shape),
                grouped(r.parameters as u64),
                grouped(r.flops),
                ms(r.forward),
                ms(r.backward),
                mib(r.activation_bytes),
                r.bound.name()
            )?;
        }
        let fwd: f64 = self.rows.iter().map(|r| ms(r.forward)).sum();
        let bwd: f64 = self.rows.iter().map(|r| ms(r.backward)).sum();
        writeln!(
            f,
            "{:<name_w$}  {:<kind_w$}  {:<shape_w$}  {:>11}  {:>15}  {:>9.3}  {:>9.3}",
            "total",
            "",
            "",
            grouped(self.total_parameters as u64),
            grouped(self.total_flops()),
            fwd,
            bwd
        )?;
        writeln!(
            f,
            "\nFLOPs: torch.utils.flop_counter's convention (2 per multiply-add; matmul, conv, attention); \
             multiply-adds: {}",
            grouped(self.total_macs())
        )?;
        let phase = |f: &mut fmt::Formatter<'_>, name: &str, p: &Phase| {
            writeln!(
                f,
                "{name:<9} {:>9.3} ms   peak {:>9.2} MiB   live after {:>9.2} MiB",
                ms(p.time),
                mib(p.peak_bytes),
                mib(p.end_bytes)
            )
        };
        writeln!(
            f,
            "\nphase on {} (tensor memory live before: {:.2} MiB)",
            self.device,
            mib(self.start_bytes)
        )?;
        phase(f, "forward", &self.forward)?;
        phase(f, "backward", &self.backward)?;
        if let Some(s) = &self.step {
            phase(f, "step", s)?;
        }
        write!(
            f,
            "\nroofline of {}: peak {:.1} GFLOP/s (f32 matmul), {:.1} GB/s (add); ridge {:.2} FLOPs/byte",
            self.device,
            self.machine.peak_flops / 1e9,
            self.machine.peak_bandwidth / 1e9,
            self.machine.ridge()
        )
    }
}

impl Profile {
    /// The profile as one JSON object: `rows`, `total`, `phases` and `machine`.
    pub fn to_json(&self) -> Value {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                json!({
                    "name": r.name,
                    "type": r.kind,
                    "output_shape": r.output_shape,
                    "parameters": r.parameters,
                    "macs": r.macs,
                    "flops": r.flops,
                    "bytes": r.bytes,
                    "forward_ms": ms(r.forward),
                    "backward_ms": ms(r.backward),
                    "activation_bytes": r.activation_bytes,
                    "bound": r.bound.name(),
                })
            })
            .collect();
        let phase = |p: &Phase| json!({"ms": ms(p.time), "peak_bytes": p.peak_bytes, "end_bytes": p.end_bytes});
        json!({
            "device": self.device.to_string(),
            "rows": rows,
            "total": {
                "parameters": self.total_parameters,
                "macs": self.total_macs(),
                "flops": self.total_flops(),
            },
            "phases": {
                "start_bytes": self.start_bytes,
                "forward": phase(&self.forward),
                "backward": phase(&self.backward),
                "step": self.step.as_ref().map(phase),
            },
            "machine": {
                "peak_flops": self.machine.peak_flops,
                "peak_bandwidth": self.machine.peak_bandwidth,
                "ridge": self.machine.ridge(),
            },
        })
    }
}
