//! `Buffer<T>`: the typed host memory inside a `CpuStorage`. Usually a `Vec<T>` TinyTorch
//! owns; for zero-copy interop (`torch.from_numpy`) it can instead borrow memory another
//! library owns, kept alive by a handle on its owner for as long as the buffer lives.
//!
//! Kernels see a buffer only as a slice (`Deref<Target = [T]>`), so they never know which
//! kind they read. The difference shows where memory is made or given back: a foreign buffer
//! never enters the caching allocator (its memory is not Rust's to free), and taking its
//! `Vec` out copies.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// Typed host memory: owned, or borrowed from a foreign owner (see the module docs).
pub struct Buffer<T> {
    memory: Memory<T>,
}

enum Memory<T> {
    Owned(Vec<T>),
    Foreign {
        ptr: NonNull<T>,
        len: usize,
        /// Keeps the memory alive; dropped (releasing it) with the buffer.
        _owner: Box<dyn Send + Sync>,
    },
}

// SAFETY: a foreign buffer is read and written only through `&self`/`&mut self`, exactly as
// the `Vec` of an owned one, and its owner (itself `Send + Sync`) keeps the memory valid
// wherever the buffer goes.
unsafe impl<T: Send> Send for Buffer<T> {}
unsafe impl<T: Sync> Sync for Buffer<T> {}

impl<T> Buffer<T> {
    /// Borrow `len` elements at `ptr`, keeping `owner` alive until the buffer drops.
    ///
    /// # Safety
    /// `ptr` must be non-null, aligned for `T`, and valid for reads and writes of `len`
    /// initialised elements for as long as `owner` lives; nothing may free or move that
    /// memory while `owner` is held.
    pub unsafe fn foreign(ptr: *mut T, len: usize, owner: Box<dyn Send + Sync>) -> Buffer<T> {
        let ptr = NonNull::new(ptr).unwrap_or(NonNull::dangling());
        Buffer {
            memory: Memory::Foreign {
                ptr,
                len,
                _owner: owner,
            },
        }
    }

    /// Whether the memory belongs to a foreign owner.
    pub fn is_foreign(&self) -> bool {
        matches!(self.memory, Memory::Foreign { .. })
    }

    /// Elements the allocation has room for (a foreign buffer: its length).
    pub fn capacity(&self) -> usize {
        match &self.memory {
            Memory::Owned(v) => v.capacity(),
            Memory::Foreign { len, .. } => *len,
        }
    }

    /// The elements as a slice.
    pub fn as_slice(&self) -> &[T] {
        self
    }

    /// The elements as a mutable slice.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        self
    }
}

impl<T: Clone> Buffer<T> {
    /// The owned `Vec`: moved out of an owned buffer, copied out of a foreign one.
    pub fn into_vec(self) -> Vec<T> {
        match self.memory {
            Memory::Owned(v) => v,
            Memory::Foreign { .. } => self.to_vec(),
        }
    }
}

impl<T> Deref for Buffer<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match &self.memory {
            Memory::Owned(v) => v,
            // SAFETY: `foreign`'s contract: valid, aligned, initialised for `len` elements
            // while the owner lives, and the owner lives as long as `self`.
            Memory::Foreign { ptr, len, .. } => unsafe {
                std::slice::from_raw_parts(ptr.as_ptr(), *len)
            },
        }
    }
}

impl<T> DerefMut for Buffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match &mut self.memory {
            Memory::Owned(v) => v,
            // SAFETY: as in `deref`; `&mut self` makes this the only access through TinyTorch.
            Memory::Foreign { ptr, len, .. } => unsafe {
                std::slice::from_raw_parts_mut(ptr.as_ptr(), *len)
            },
        }
    }
}

impl<T> From<Vec<T>> for Buffer<T> {
    fn from(v: Vec<T>) -> Self {
        Buffer {
            memory: Memory::Owned(v),
        }
    }
}

impl<T> FromIterator<T> for Buffer<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        Vec::from_iter(iter).into()
    }
}

/// A clone is always owned: copying foreign memory makes it TinyTorch's.
impl<T: Clone> Clone for Buffer<T> {
    fn clone(&self) -> Self {
        self.to_vec().into()
    }
}

impl<T: PartialEq> PartialEq for Buffer<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: fmt::Debug> fmt::Debug for Buffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// An owner that records when it is dropped.
    struct Owner(Arc<AtomicBool>, #[allow(dead_code)] Vec<f32>);
    impl Drop for Owner {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_foreign_buffer_reads_and_writes_the_owners_memory_and_releases_it_on_drop() {
        let dropped = Arc::new(AtomicBool::new(false));
        let mut data = vec![1.0f32, 2.0, 3.0];
        let ptr = data.as_mut_ptr();
        let owner = Owner(dropped.clone(), data);
        let mut b = unsafe { Buffer::foreign(ptr, 3, Box::new(owner)) };
        assert!(b.is_foreign());
        assert_eq!(&b[..], &[1.0, 2.0, 3.0]);
        b[1] = 7.0;
        // SAFETY: the owner still holds the memory.
        assert_eq!(unsafe { *ptr.add(1) }, 7.0);
        let copy = b.clone();
        assert!(!copy.is_foreign());
        assert_eq!(b.clone().into_vec(), vec![1.0, 7.0, 3.0]);
        assert!(!dropped.load(Ordering::SeqCst));
        drop(b);
        assert!(dropped.load(Ordering::SeqCst));
        assert_eq!(&copy[..], &[1.0, 7.0, 3.0]);
    }

    #[test]
    fn an_empty_foreign_buffer_may_have_a_null_pointer() {
        let b = unsafe { Buffer::<f64>::foreign(std::ptr::null_mut(), 0, Box::new(())) };
        assert!(b.is_empty());
    }
}
