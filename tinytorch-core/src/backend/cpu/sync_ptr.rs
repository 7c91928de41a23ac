//! `SyncPtr`: a destination pointer that parallel tasks writing disjoint elements share.

/// A raw pointer into one output buffer, copied into tasks that each write their own,
/// disjoint, elements of it (rayon closures cannot share a `&mut` slice that way).
#[derive(Clone, Copy)]
pub(crate) struct SyncPtr<T>(pub(crate) *mut T);
// SAFETY: the tasks holding copies write disjoint elements (see the callers).
unsafe impl<T: Send> Send for SyncPtr<T> {}
unsafe impl<T: Send> Sync for SyncPtr<T> {}

impl<T> SyncPtr<T> {
    /// The pointer `count` elements further (a method, so closures capture the whole
    /// wrapper rather than its raw field).
    ///
    /// # Safety
    /// As `pointer::add`.
    pub(crate) unsafe fn add(self, count: usize) -> *mut T {
        self.0.add(count)
    }
}
