//! PyTorch-style printing: `format!("{t}")` gives what `print(t)` shows in PyTorch with the
//! default print options (precision 4, threshold 1000, edge items 3, line width 80), e.g.
//! `tensor([[1.0000, 2.5000],\n        [3.0000, 4.0000]], dtype=torch.float64)`.
//! The rules follow `torch/_tensor_str.py`: one formatter for the whole tensor (fixed or
//! scientific notation, integral floats printed as `1.`), padded to a common width; above
//! 1000 elements only the first and last 3 entries of each long dim are shown, and the
//! formatter looks at those entries only. Names of `grad_fn` are built from the op names
//! of this crate (`mul` -> `MulBackward0`), which match PyTorch's for most ops but not all.

use super::{DType, Device, Tensor};
use crate::backend::CpuStorage;
use crate::tensor::Element;
use crate::with_cpu_storage;
use std::fmt;

const PRECISION: usize = 4;
const THRESHOLD: usize = 1000;
const EDGE_ITEMS: usize = 3;
const LINE_WIDTH: usize = 80;
const PREFIX: &str = "tensor(";

/// The indices printed along a dim of `size` (all of them, or the edges when summarising).
fn shown_indices(size: usize, summarize: bool) -> Vec<usize> {
    if summarize && size > 2 * EDGE_ITEMS {
        (0..EDGE_ITEMS).chain(size - EDGE_ITEMS..size).collect()
    } else {
        (0..size).collect()
    }
}

/// The printed elements, row-major over the shown indices, as (value, exact integer).
fn gather(
    cpu: &CpuStorage,
    shape: &[usize],
    strides: &[usize],
    offset: usize,
    summarize: bool,
) -> Vec<(f64, i64)> {
    let shown: Vec<Vec<usize>> = shape.iter().map(|&d| shown_indices(d, summarize)).collect();
    let mut offsets = vec![offset];
    for (idx, &stride) in shown.iter().zip(strides) {
        offsets = offsets
            .iter()
            .flat_map(|&o| idx.iter().map(move |&i| o + i * stride))
            .collect();
    }
    with_cpu_storage!(cpu, v => offsets.iter().map(|&o| (v[o].to_f64(), v[o].to_i64())).collect())
}

/// Python's `{:.Ne}` (`1.2346e+08`), from Rust's (`1.2346e8`).
fn python_sci(value: f64) -> String {
    let s = format!("{value:.PRECISION$e}");
    match s.split_once('e') {
        Some((mantissa, exp)) => {
            let exp: i32 = exp.parse().unwrap_or(0);
            let sign = if exp < 0 { '-' } else { '+' };
            format!("{mantissa}e{sign}{:02}", exp.abs())
        }
        None => s,
    }
}

/// Non-finite floats as Python prints them.
fn non_finite(value: f64) -> Option<String> {
    if value.is_nan() {
        Some("nan".into())
    } else if value.is_infinite() {
        Some(if value > 0.0 { "inf" } else { "-inf" }.into())
    } else {
        None
    }
}

/// How every element of one tensor is printed (PyTorch's `_Formatter`).
struct Formatter {
    dtype: DType,
    int_mode: bool,
    sci_mode: bool,
    width: usize,
}

impl Formatter {
    fn new(dtype: DType, values: &[(f64, i64)]) -> Formatter {
        let mut f = Formatter {
            dtype,
            int_mode: true,
            sci_mode: false,
            width: 1,
        };
        if !dtype.is_float() {
            f.width = values
                .iter()
                .map(|&v| f.format_raw(v).len())
                .max()
                .unwrap_or(1);
            return f;
        }
        let finite: Vec<f64> = values
            .iter()
            .map(|v| v.0)
            .filter(|x| x.is_finite() && *x != 0.0)
            .collect();
        if finite.is_empty() {
            return f;
        }
        let max = finite.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let min = finite.iter().fold(f64::INFINITY, |m, x| m.min(x.abs()));
        f.int_mode = finite.iter().all(|x| x.ceil() == *x);
        f.sci_mode = max / min > 1000.0 || max > 1.0e8 || min < 1.0e-4;
        // Zeros and non-finite values do not count towards the width, as in PyTorch.
        f.width = finite
            .iter()
            .map(|&x| f.format_raw((x, 0)).len())
            .max()
            .unwrap_or(1);
        f
    }

    /// One element without padding.
    fn format_raw(&self, (value, int): (f64, i64)) -> String {
        match self.dtype {
            DType::Bool => if int != 0 { "True" } else { "False" }.into(),
            DType::U8 | DType::I32 | DType::I64 => int.to_string(),
            _ => {
                if self.sci_mode {
                    return non_finite(value).unwrap_or_else(|| python_sci(value));
                }
                if let Some(s) = non_finite(value) {
                    return s;
                }
                if self.int_mode {
                    format!("{value:.0}.")
                } else {
                    format!("{value:.PRECISION$}")
                }
            }
        }
    }

    /// One element, right-aligned to the common width.
    fn format(&self, value: (f64, i64)) -> String {
        format!("{:>w$}", self.format_raw(value), w = self.width)
    }
}

/// Renders the gathered elements of one tensor as nested brackets.
struct Printer<'a> {
    /// The full shape.
    shape: &'a [usize],
    /// How many entries are shown along each dim.
    shown: Vec<usize>,
    summarize: bool,
    values: &'a [(f64, i64)],
    formatter: Formatter,
}

impl Printer<'_> {
    /// The block at `dim` starting at element `start` of `values`.
    fn block(&self, dim: usize, start: usize, indent: usize) -> String {
        let nd = self.shape.len();
        if nd == 0 {
            return self.formatter.format(self.values[0]);
        }
        let elided = self.summarize && self.shape[dim] > 2 * EDGE_ITEMS;
        let inner: usize = self.shown[dim + 1..].iter().product();
        if dim == nd - 1 {
            let mut items: Vec<String> = (0..self.shown[dim])
                .map(|i| self.formatter.format(self.values[start + i]))
                .collect();
            if elided {
                items.insert(EDGE_ITEMS, " ...".into());
            }
            let per_line =
                ((LINE_WIDTH.saturating_sub(indent)) / (self.formatter.width + 2)).max(1);
            let lines: Vec<String> = items.chunks(per_line).map(|c| c.join(", ")).collect();
            return format!(
                "[{}]",
                lines.join(&format!(",\n{}", " ".repeat(indent + 1)))
            );
        }
        let mut slices: Vec<String> = (0..self.shown[dim])
            .map(|i| self.block(dim + 1, start + i * inner, indent + 1))
            .collect();
        if elided {
            slices.insert(EDGE_ITEMS, "...".into());
        }
        let sep = format!(",{}{}", "\n".repeat(nd - dim - 1), " ".repeat(indent + 1));
        format!("[{}]", slices.join(&sep))
    }
}

/// PyTorch's CamelCase backward-node name for an op name (`mul` -> `MulBackward0`).
pub fn grad_fn_display(name: &str) -> String {
    let base = match name {
        "to_dtype" => "ToCopy".to_string(),
        _ => name
            .split('_')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let mut c = p.chars();
                c.next()
                    .map(|f| f.to_uppercase().chain(c).collect::<String>())
                    .unwrap_or_default()
            })
            .collect(),
    };
    format!("{base}Backward0")
}

/// Appends `, suffix` (or a new line when the line would pass the width), then `)`.
fn add_suffixes(body: &str, suffixes: &[String]) -> String {
    let mut out = body.to_string();
    // As PyTorch computes it (2 more than the length when there is no newline).
    let mut last_line = match body.rfind('\n') {
        Some(p) => body.len() - p + 1,
        None => body.len() + 2,
    };
    for s in suffixes {
        if last_line + s.len() + 2 > LINE_WIDTH {
            out.push_str(&format!(",\n{}{s}", " ".repeat(PREFIX.len())));
            last_line = PREFIX.len() + s.len();
        } else {
            out.push_str(&format!(", {s}"));
            last_line += s.len() + 2;
        }
    }
    out.push(')');
    out
}

/// Python's tuple formatting of a shape: `(2, 0)`.
fn py_tuple(shape: &[usize]) -> String {
    let items: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("({})", items.join(", "))
}

impl Tensor {
    /// The bracketed contents (without prefix and suffixes).
    fn contents_str(&self) -> Result<String, fmt::Error> {
        if self.numel() == 0 {
            return Ok("[]".into());
        }
        let summarize = self.numel() > THRESHOLD;
        let storage = self.storage();
        let layout = self.layout();
        let values = match storage.as_cpu() {
            Some(cpu) => gather(
                cpu,
                layout.shape(),
                layout.strides(),
                layout.offset(),
                summarize,
            ),
            None => {
                let cpu = storage.to_cpu(layout).map_err(|_| fmt::Error)?;
                let strides = super::layout::contiguous_strides(layout.shape());
                gather(&cpu, layout.shape(), &strides, 0, summarize)
            }
        };
        let shown: Vec<usize> = self
            .shape()
            .iter()
            .map(|&d| shown_indices(d, summarize).len())
            .collect();
        let formatter = Formatter::new(self.dtype(), &values);
        let printer = Printer {
            shape: self.shape(),
            shown,
            summarize,
            values: &values,
            formatter,
        };
        Ok(printer.block(0, 0, PREFIX.len()))
    }
}

impl fmt::Display for Tensor {
    /// Prints like PyTorch's `repr(tensor)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut suffixes = Vec::new();
        if let Device::Cuda(i) = self.device() {
            suffixes.push(format!("device='cuda:{i}'"));
        }
        let default_dtype = matches!(self.dtype(), DType::F32 | DType::I64 | DType::Bool);
        if self.numel() == 0 {
            if self.ndim() != 1 {
                suffixes.push(format!("size={}", py_tuple(self.shape())));
            }
            if self.dtype() != DType::F32 {
                suffixes.push(format!("dtype=torch.{}", self.dtype().torch_name()));
            }
        } else if !default_dtype {
            suffixes.push(format!("dtype=torch.{}", self.dtype().torch_name()));
        }
        if let Some(name) = self.grad_fn_name() {
            suffixes.push(format!("grad_fn=<{}>", grad_fn_display(name)));
        } else if self.requires_grad() {
            suffixes.push("requires_grad=True".into());
        }
        let body = format!("{PREFIX}{}", self.contents_str()?);
        f.write_str(&add_suffixes(&body, &suffixes))
    }
}
