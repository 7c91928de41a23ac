//! Creating tensors: from host data, constant fills, ranges and identity matrices.

use super::layout::{numel, storage_numel};
use super::{DType, Device, Layout, Scalar, Tensor};
use crate::backend::CpuElement;
use crate::backend::{CpuStorage, Storage};
use crate::error::{Error, Result};

/// Host data that can become a tensor: Vecs and slices of element types.
pub trait IntoTensorData {
    /// The data as a host buffer.
    fn into_cpu_storage(self) -> CpuStorage;
}
impl<T: CpuElement> IntoTensorData for Vec<T> {
    fn into_cpu_storage(self) -> CpuStorage {
        CpuStorage::from_vec(self)
    }
}
impl<T: CpuElement> IntoTensorData for &[T] {
    fn into_cpu_storage(self) -> CpuStorage {
        CpuStorage::from_vec(self.to_vec())
    }
}
impl<T: CpuElement, const N: usize> IntoTensorData for [T; N] {
    fn into_cpu_storage(self) -> CpuStorage {
        CpuStorage::from_vec(self.to_vec())
    }
}

impl Tensor {
    /// A CPU tensor of `shape` holding `data` in row-major order (`torch.tensor(data).reshape(shape)`).
    pub fn from_vec(data: impl IntoTensorData, shape: &[usize]) -> Result<Tensor> {
        let s = data.into_cpu_storage();
        use crate::backend::BackendStorage;
        if s.len() != numel(shape) {
            return Err(Error::shape(
                "from_vec",
                format!(
                    "{} elements cannot fill shape {shape:?} ({} elements)",
                    s.len(),
                    numel(shape)
                ),
            ));
        }
        Ok(Tensor::from_contiguous(Storage::Cpu(s), shape))
    }

    /// A CPU tensor over host memory another library owns, without copying it (as
    /// `torch.from_numpy`): writes through either side show on the other. `strides` count
    /// elements, as [`Tensor::stride`]; `owner` is held, keeping the memory alive, until the
    /// last tensor or view of it drops.
    ///
    /// Errors (naming `op`) when `ptr` is not aligned for `dtype`, or when a bool buffer holds a
    /// byte other than 0 or 1 (Rust's bool has no other values).
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of every element the shape and strides
    /// address, for as long as `owner` lives, and nothing may free or move that memory
    /// while `owner` is held.
    pub unsafe fn from_foreign_cpu(
        op: &'static str,
        ptr: *mut u8,
        dtype: DType,
        shape: &[usize],
        strides: &[usize],
        owner: Box<dyn Send + Sync>,
    ) -> Result<Tensor> {
        if shape.len() != strides.len() {
            return Err(Error::shape(
                op,
                format!("{} strides for shape {shape:?}", strides.len()),
            ));
        }
        // The elements the view can reach: one past the farthest.
        let len = if numel(shape) == 0 {
            0
        } else {
            1 + shape
                .iter()
                .zip(strides)
                .map(|(&n, &s)| (n - 1) * s)
                .sum::<usize>()
        };
        if len > 0 && !(ptr as usize).is_multiple_of(dtype.size_in_bytes()) {
            return Err(Error::invalid(
                op,
                format!("the buffer at {ptr:p} is not aligned for {dtype}"),
            ));
        }
        if dtype == DType::Bool && len > 0 {
            // SAFETY: the caller vouches for `len` readable bytes at `ptr`.
            let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
            if let Some(b) = bytes.iter().find(|&&b| b > 1) {
                return Err(Error::invalid(
                    op,
                    format!("a bool buffer holds the byte {b}; bools must be 0 or 1"),
                ));
            }
        }
        // SAFETY: aligned (checked), valid for `len` elements (the caller), bools checked.
        let storage = unsafe { CpuStorage::foreign(ptr, dtype, len, owner) };
        let layout = Layout::from_parts(shape.to_vec(), strides.to_vec(), 0);
        Ok(Tensor::from_storage(Storage::Cpu(storage), layout))
    }

    /// A CPU tensor of `shape` from little-endian element bytes, row-major (as safetensors
    /// files and NumPy buffers store them); a bool is any non-zero byte, as NumPy and PyTorch
    /// read them. Errors unless the byte count fits the shape and dtype.
    pub fn from_le_bytes(raw: &[u8], shape: &[usize], dtype: DType) -> Result<Tensor> {
        use half::{bf16, f16};
        let want = numel(shape) * dtype.size_in_bytes();
        if raw.len() != want {
            return Err(Error::shape(
                "from_le_bytes",
                format!(
                    "{} bytes for {shape:?} of {dtype}, which needs {want}",
                    raw.len()
                ),
            ));
        }
        fn le<T, const N: usize>(raw: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
            raw.chunks_exact(N)
                .map(|c| f(c.try_into().expect("chunks_exact gives N bytes")))
                .collect()
        }
        match dtype {
            DType::Bool => Tensor::from_vec(le(raw, |[b]: [u8; 1]| b != 0), shape),
            DType::U8 => Tensor::from_vec(raw.to_vec(), shape),
            DType::I32 => Tensor::from_vec(le(raw, i32::from_le_bytes), shape),
            DType::I64 => Tensor::from_vec(le(raw, i64::from_le_bytes), shape),
            DType::F16 => {
                Tensor::from_vec(le(raw, |b| f16::from_bits(u16::from_le_bytes(b))), shape)
            }
            DType::BF16 => {
                Tensor::from_vec(le(raw, |b| bf16::from_bits(u16::from_le_bytes(b))), shape)
            }
            DType::F32 => Tensor::from_vec(le(raw, f32::from_le_bytes), shape),
            DType::F64 => Tensor::from_vec(le(raw, f64::from_le_bytes), shape),
        }
    }

    /// A 1-D CPU tensor of `data`.
    pub fn from_slice<T: CpuElement>(data: &[T]) -> Tensor {
        Tensor::from_contiguous(
            Storage::Cpu(CpuStorage::from_vec(data.to_vec())),
            &[data.len()],
        )
    }

    /// A 0-d CPU tensor holding `value`.
    pub fn scalar<T: CpuElement>(value: T) -> Tensor {
        Tensor::from_contiguous(Storage::Cpu(CpuStorage::from_vec(vec![value])), &[])
    }

    /// A tensor of `shape` filled with `value` (converted to `dtype`).
    pub fn full(shape: &[usize], value: f64, dtype: DType, device: Device) -> Result<Tensor> {
        let n = storage_numel("full", shape, dtype)?;
        let mut s = Storage::zeros(device, dtype, n)?;
        if value != 0.0 {
            s.fill(&Layout::contiguous(&[n]), value)?;
        }
        Ok(Tensor::from_contiguous(s, shape))
    }

    /// A tensor of zeros.
    pub fn zeros(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
        Tensor::full(shape, 0.0, dtype, device)
    }

    /// A tensor of ones.
    pub fn ones(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
        Tensor::full(shape, 1.0, dtype, device)
    }

    /// Zeros with this tensor's shape, dtype and device.
    pub fn zeros_like(&self) -> Result<Tensor> {
        Tensor::zeros(self.shape(), self.dtype(), self.device())
    }

    /// Ones with this tensor's shape, dtype and device.
    pub fn ones_like(&self) -> Result<Tensor> {
        Tensor::ones(self.shape(), self.dtype(), self.device())
    }

    /// `value` everywhere, with this tensor's shape, dtype and device.
    pub fn full_like(&self, value: f64) -> Result<Tensor> {
        Tensor::full(self.shape(), value, self.dtype(), self.device())
    }

    /// Values `start, start + step, ...` below `end` (`torch.arange`). Integer dtypes are
    /// exact; the element count is `ceil((end - start) / step)`.
    pub fn arange(start: f64, end: f64, step: f64, dtype: DType, device: Device) -> Result<Tensor> {
        if step == 0.0 || !step.is_finite() || !start.is_finite() || !end.is_finite() {
            return Err(Error::invalid(
                "arange",
                format!("invalid range start={start} end={end} step={step}"),
            ));
        }
        if (end - start) * step < 0.0 {
            return Err(Error::invalid(
                "arange",
                format!("upper bound and larger bound inconsistent with step sign (start={start}, end={end}, step={step})"),
            ));
        }
        let n = ((end - start) / step).ceil().max(0.0) as usize;
        let s = Storage::arange(device, dtype, n, start, step)?;
        Ok(Tensor::from_contiguous(s, &[n]))
    }

    /// `steps` values evenly spaced from `start` to `end` inclusive (`torch.linspace`).
    pub fn linspace(
        start: f64,
        end: f64,
        steps: usize,
        dtype: DType,
        device: Device,
    ) -> Result<Tensor> {
        let values: Vec<f64> = match steps {
            0 => vec![],
            1 => vec![start],
            _ => {
                let step = (end - start) / (steps - 1) as f64;
                // PyTorch fills the second half backwards from `end` so that it lands exactly.
                let half = steps / 2;
                (0..steps)
                    .map(|i| {
                        if i < half {
                            start + step * i as f64
                        } else {
                            end - step * (steps - 1 - i) as f64
                        }
                    })
                    .collect()
            }
        };
        Tensor::from_f64_values(values, &[steps], dtype, device)
    }

    /// The `n x m` identity matrix (`torch.eye(n, m)`).
    pub fn eye(n: usize, m: usize, dtype: DType, device: Device) -> Result<Tensor> {
        let mut v = vec![0.0; n * m];
        for i in 0..n.min(m) {
            v[i * m + i] = 1.0;
        }
        Tensor::from_f64_values(v, &[n, m], dtype, device)
    }

    /// A 0-d tensor of `dtype` on `device` holding `value` converted as PyTorch converts a
    /// scalar argument: integers go through i64 exactly (so `-1` in u8 wraps to 255).
    pub fn scalar_tensor(value: impl Into<Scalar>, dtype: DType, device: Device) -> Result<Tensor> {
        use crate::backend::BackendStorage;
        let cpu = match value.into() {
            Scalar::Int(i) => CpuStorage::I64(vec![i].into()),
            Scalar::Bool(b) => CpuStorage::Bool(vec![b].into()),
            Scalar::Float(f) => CpuStorage::F64(vec![f].into()),
        };
        let cpu = if cpu.dtype() == dtype {
            cpu
        } else {
            cpu.to_dtype(&Layout::contiguous(&[1]), dtype)?
        };
        let host = Tensor::from_contiguous(Storage::Cpu(cpu), &[]);
        if device.is_cpu() {
            return Ok(host);
        }
        // On a GPU, a fill kernel rather than a copy from pageable host memory (which the
        // driver may stage synchronously, and which a training step should not make): exact,
        // since the value is already in `dtype`, except i64 past 2^53.
        let v = host.item_f64()?;
        if dtype == DType::I64 && v.abs() > (1u64 << 53) as f64 {
            return host.to_device(device);
        }
        Tensor::full(&[], v, dtype, device)
    }

    /// A tensor of `dtype` on `device` from f64 values (exact for integers up to 2^53).
    pub(crate) fn from_f64_values(
        values: Vec<f64>,
        shape: &[usize],
        dtype: DType,
        device: Device,
    ) -> Result<Tensor> {
        let cpu = CpuStorage::F64(values.into());
        let cpu = if dtype == DType::F64 {
            cpu
        } else {
            use crate::backend::BackendStorage;
            cpu.to_dtype(&Layout::contiguous(&[numel(shape)]), dtype)?
        };
        Ok(Tensor::from_contiguous(
            Storage::from_cpu(cpu, device)?,
            shape,
        ))
    }
}
