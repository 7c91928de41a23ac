//! Rows of u8 pixels gathered and scaled to f32 in [0, 1] in one pass
//! (`Storage::gather_rows_scaled`; CPU: `cpu/pixels.rs`). Other devices answer `None`, and
//! the op layer composes `index_select`, the cast and the division.

use super::{host, Span};
use crate::backend::cpu::pixels as cpu;
use crate::backend::Storage;
use crate::base::DType;
use crate::error::{Error, Result};

const OP: &str = "gather_rows_scaled";

impl Storage {
    /// Rows `rows` of the u8 operand `x` (rows of `row_len` elements), each pixel divided by
    /// 255 into a new f32 buffer; an error for a row index past the operand's rows,
    /// `Ok(None)` where the device or dtype has no kernel.
    pub fn gather_rows_scaled(
        x: Span<'_>,
        row_len: usize,
        rows: &[usize],
    ) -> Result<Option<Storage>> {
        if !matches!(x.storage, Storage::Cpu(_)) || x.dtype() != DType::U8 {
            return Ok(None);
        }
        let pixels = x.cpu_or_err::<u8>(OP, "input")?;
        // Rows of no elements read nothing, whatever their index.
        if let Some(count) = x.len.checked_div(row_len) {
            if let Some(&bad) = rows.iter().find(|&&i| i >= count) {
                return Err(Error::index(
                    OP,
                    format!("row {bad} is out of range for {count} rows"),
                ));
            }
        }
        Ok(Some(host(cpu::gather_rows_scaled(pixels, row_len, rows))))
    }
}
