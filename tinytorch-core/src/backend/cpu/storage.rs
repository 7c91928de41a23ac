//! `CpuStorage` (one typed [`Buffer`] per dtype) and `CpuElement` (the Rust types that live
//! in it): the leaf of the CPU backend, which the walkers (`strided.rs`, `rows.rs`) and every
//! kernel family build on.

use super::allocator;
use super::buffer::Buffer;
use crate::base::{DType, Element};
use half::{bf16, f16};

/// A host buffer: one [`Buffer`] of the dtype's Rust type.
#[derive(Debug, Clone, PartialEq)]
pub enum CpuStorage {
    Bool(Buffer<bool>),
    U8(Buffer<u8>),
    I32(Buffer<i32>),
    I64(Buffer<i64>),
    F16(Buffer<f16>),
    BF16(Buffer<bf16>),
    F32(Buffer<f32>),
    F64(Buffer<f64>),
}

/// Run `$body` with `$v` bound to the typed `Buffer` inside a `CpuStorage`, for every
/// dtype. The body must produce the same type for each.
#[macro_export]
#[doc(hidden)]
macro_rules! with_cpu_storage {
    ($s:expr, $v:ident => $body:expr) => {
        match $s {
            $crate::backend::CpuStorage::Bool($v) => $body,
            $crate::backend::CpuStorage::U8($v) => $body,
            $crate::backend::CpuStorage::I32($v) => $body,
            $crate::backend::CpuStorage::I64($v) => $body,
            $crate::backend::CpuStorage::F16($v) => $body,
            $crate::backend::CpuStorage::BF16($v) => $body,
            $crate::backend::CpuStorage::F32($v) => $body,
            $crate::backend::CpuStorage::F64($v) => $body,
        }
    };
}

/// An element type that can live in a `CpuStorage`.
pub trait CpuElement: Element {
    /// The typed slice, when the storage has this dtype.
    fn slice(s: &CpuStorage) -> Option<&[Self]>;
    /// The typed mutable slice, when the storage has this dtype.
    fn slice_mut(s: &mut CpuStorage) -> Option<&mut [Self]>;
    /// Wrap a Vec of this type.
    fn into_storage(v: Vec<Self>) -> CpuStorage;
    /// Unwrap the Vec (a copy for foreign memory), when the storage has this dtype (else the
    /// storage back).
    fn from_storage(s: CpuStorage) -> std::result::Result<Vec<Self>, CpuStorage>;
}

macro_rules! impl_cpu_element {
    ($t:ty, $variant:ident) => {
        impl CpuElement for $t {
            fn slice(s: &CpuStorage) -> Option<&[Self]> {
                match s {
                    CpuStorage::$variant(v) => Some(&v[..]),
                    _ => None,
                }
            }
            fn slice_mut(s: &mut CpuStorage) -> Option<&mut [Self]> {
                match s {
                    CpuStorage::$variant(v) => Some(&mut v[..]),
                    _ => None,
                }
            }
            fn into_storage(v: Vec<Self>) -> CpuStorage {
                CpuStorage::$variant(v.into())
            }
            fn from_storage(s: CpuStorage) -> std::result::Result<Vec<Self>, CpuStorage> {
                match s {
                    CpuStorage::$variant(v) => Ok(v.into_vec()),
                    other => Err(other),
                }
            }
        }
    };
}
impl_cpu_element!(bool, Bool);
impl_cpu_element!(u8, U8);
impl_cpu_element!(i32, I32);
impl_cpu_element!(i64, I64);
impl_cpu_element!(f16, F16);
impl_cpu_element!(bf16, BF16);
impl_cpu_element!(f32, F32);
impl_cpu_element!(f64, F64);

impl CpuStorage {
    /// A zero-filled buffer, or [`Error::OutOfMemory`](crate::Error::OutOfMemory) when the
    /// system has no room for it.
    pub fn zeros(dtype: DType, n: usize) -> crate::Result<CpuStorage> {
        Ok(match dtype {
            DType::Bool => CpuStorage::Bool(allocator::try_zeros(n)?.into()),
            DType::U8 => CpuStorage::U8(allocator::try_zeros(n)?.into()),
            DType::I32 => CpuStorage::I32(allocator::try_zeros(n)?.into()),
            DType::I64 => CpuStorage::I64(allocator::try_zeros(n)?.into()),
            DType::F16 => CpuStorage::F16(allocator::try_zeros(n)?.into()),
            DType::BF16 => CpuStorage::BF16(allocator::try_zeros(n)?.into()),
            DType::F32 => CpuStorage::F32(allocator::try_zeros(n)?.into()),
            DType::F64 => CpuStorage::F64(allocator::try_zeros(n)?.into()),
        })
    }

    /// A buffer of `len` elements of `dtype` at `ptr`, in memory another library owns
    /// (zero-copy interop); `owner` is held, keeping that memory alive, until the buffer
    /// drops.
    ///
    /// # Safety
    /// As [`Buffer::foreign`]: `ptr` aligned for `dtype` and valid for reads and writes of
    /// `len` initialised elements while `owner` lives (for bool: every byte 0 or 1).
    pub unsafe fn foreign(
        ptr: *mut u8,
        dtype: DType,
        len: usize,
        owner: Box<dyn Send + Sync>,
    ) -> CpuStorage {
        // SAFETY: forwarded to the caller.
        unsafe {
            match dtype {
                DType::Bool => CpuStorage::Bool(Buffer::foreign(ptr.cast(), len, owner)),
                DType::U8 => CpuStorage::U8(Buffer::foreign(ptr, len, owner)),
                DType::I32 => CpuStorage::I32(Buffer::foreign(ptr.cast(), len, owner)),
                DType::I64 => CpuStorage::I64(Buffer::foreign(ptr.cast(), len, owner)),
                DType::F16 => CpuStorage::F16(Buffer::foreign(ptr.cast(), len, owner)),
                DType::BF16 => CpuStorage::BF16(Buffer::foreign(ptr.cast(), len, owner)),
                DType::F32 => CpuStorage::F32(Buffer::foreign(ptr.cast(), len, owner)),
                DType::F64 => CpuStorage::F64(Buffer::foreign(ptr.cast(), len, owner)),
            }
        }
    }

    /// Wrap a typed Vec.
    pub fn from_vec<T: CpuElement>(v: Vec<T>) -> CpuStorage {
        T::into_storage(v)
    }

    /// The typed slice, when the dtype is `T`'s.
    pub fn as_slice<T: CpuElement>(&self) -> Option<&[T]> {
        T::slice(self)
    }

    /// Every element as f64, in buffer order (for tests, printing and host-side logic).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        with_cpu_storage!(self, v => v.iter().map(|x| x.to_f64()).collect())
    }
}
