//! `Tensor`: a cheap, clonable handle to a strided view of shared storage, with its autograd
//! state. Cloning a `Tensor` clones an `Arc`; views share the storage and differ in layout.

mod create;
mod display;
mod hooks;
pub mod memory;
pub(crate) mod node;
pub use display::grad_fn_display;
mod random;

// The base types live in `crate::base`; their old paths under `tensor` stay.
pub use crate::base::{dtype, layout, scalar};
pub use crate::base::{DType, Device, Element, FloatElement, Layout, ResultType, Scalar};
pub use create::IntoTensorData;
pub use hooks::TensorHook;
pub use random::{get_rng_state, manual_seed, set_rng_state, Generator, GeneratorState};

use crate::backend::CpuElement;
use crate::backend::Storage;
use crate::base::Dim;
use crate::error::{Error, Result};
use node::Node;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// A unique id per tensor handle created (views and detached copies get their own).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TensorId(u64);

impl TensorId {
    fn next() -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        TensorId(COUNTER.fetch_add(1, Ordering::Relaxed))
    }
}

/// A buffer shared by a tensor and all its views.
#[derive(Debug)]
pub struct StorageCell {
    data: RwLock<Storage>,
    /// The version counter of every handle on this buffer that has none of its own (see
    /// [`VersionCounter`]): kept here so that a new tensor costs no allocation for it.
    version: AtomicU64,
    /// The storage's device, readable without the lock (`Tensor::move_to_` changes it).
    device: AtomicUsize,
    /// The bytes counted for it in the memory statistics (`memory.rs`), on `device`.
    bytes: usize,
}

/// `Device` as one word for `StorageCell::device`: `usize::MAX` is the CPU.
fn encode_device(d: Device) -> usize {
    match d {
        Device::Cpu => usize::MAX,
        Device::Cuda(i) => i,
    }
}

fn decode_device(v: usize) -> Device {
    if v == usize::MAX {
        Device::Cpu
    } else {
        Device::Cuda(v)
    }
}

impl StorageCell {
    fn new(storage: Storage) -> Arc<Self> {
        let (device, bytes) = (
            storage.device(),
            storage.len() * storage.dtype().size_in_bytes(),
        );
        memory::allocated(device, bytes);
        Arc::new(StorageCell {
            device: AtomicUsize::new(encode_device(device)),
            data: RwLock::new(storage),
            version: AtomicU64::new(0),
            bytes,
        })
    }
}

impl Drop for StorageCell {
    /// A dying buffer goes back to its device's cache (`Storage::release`).
    fn drop(&mut self) {
        memory::freed(decode_device(*self.device.get_mut()), self.bytes);
        self.data
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .release();
    }
}

/// Where a tensor handle's version counter (PyTorch's `_version`) lives.
#[derive(Clone)]
enum VersionCounter {
    /// The storage's: shared by the tensor, its views and `detach()`ed handles, so that a
    /// backward rule that saved any of them sees a write through any other.
    Storage,
    /// One of its own, shared only with its own views and detached handles: `.data` (as in
    /// PyTorch, writes through it are not seen by autograd's checks).
    Own(Arc<AtomicU64>),
}

pub(crate) struct TensorInner {
    id: TensorId,
    storage: Arc<StorageCell>,
    layout: Layout,
    dtype: DType,
    /// The op that produced this tensor: set right after the op ran, and replaced when an
    /// in-place op rebases the tensor's history (see `ops/inplace.rs`).
    pub(crate) node: RwLock<Option<Arc<Node>>>,
    /// True once `node` is set (it is never unset): every op asks whether its inputs are in
    /// the graph, and this answers without taking the lock.
    in_graph: AtomicBool,
    /// The version counter, bumped by every in-place write.
    version: VersionCounter,
    /// For a view (`make_view`): the tensor whose storage it views, itself no view (PyTorch's
    /// `_base`). An in-place op on a view rebases the base's history.
    pub(crate) view_base: Option<Tensor>,
    requires_grad: AtomicBool,
    grad: Mutex<Option<Tensor>>,
    /// Hooks run after backward accumulated this leaf's `.grad` (see
    /// [`Tensor::register_post_accumulate_grad_hook`]), with their handles' ids.
    grad_hooks: Mutex<Vec<(u64, PostAccumulateGradHook)>>,
    /// True while `grad_hooks` is not empty: the backward engine asks on every leaf it
    /// meets, so that question costs no lock.
    has_grad_hooks: AtomicBool,
    /// Hooks run on this tensor's gradient when backward computes it, each of which may
    /// replace it (see [`Tensor::register_hook`]), with their handles' ids.
    pub(crate) tensor_hooks: Mutex<Vec<(u64, hooks::TensorHook)>>,
    /// True while `tensor_hooks` is not empty or `.grad` is retained (`retain_grad`): the
    /// engine asks on every tensor it meets, so that question costs no lock.
    pub(crate) has_tensor_hooks: AtomicBool,
    /// Set by [`Tensor::retain_grad`]: a non-leaf keeps its gradient in `.grad`.
    pub(crate) retains_grad: AtomicBool,
}

/// A hook run after backward accumulated a leaf's gradient, given the leaf (PyTorch's
/// `register_post_accumulate_grad_hook`); an error stops the backward pass.
pub type PostAccumulateGradHook = Arc<dyn Fn(&Tensor) -> Result<()> + Send + Sync>;

/// Removes a hook registered with [`Tensor::register_post_accumulate_grad_hook`] or
/// [`Tensor::register_hook`] (`RemovableHandle.remove()`).
pub struct HookHandle {
    pub(crate) tensor: std::sync::Weak<TensorInner>,
    pub(crate) id: u64,
    /// True for a [`Tensor::register_hook`] hook, false for a post-accumulate-grad hook.
    pub(crate) gradient_hook: bool,
}

impl HookHandle {
    /// Unregister the hook; nothing happens when the tensor is gone or it was removed.
    pub fn remove(&self) {
        let Some(inner) = self.tensor.upgrade() else {
            return;
        };
        if self.gradient_hook {
            hooks::remove_tensor_hook(&inner, self.id);
            return;
        }
        let mut hooks = inner.grad_hooks.lock().unwrap_or_else(|e| e.into_inner());
        hooks.retain(|(id, _)| *id != self.id);
        inner
            .has_grad_hooks
            .store(!hooks.is_empty(), Ordering::Release);
    }
}

/// The next id of a hook handle (unique per process).
pub(crate) fn next_hook_id() -> u64 {
    static NEXT_ID: AtomicU64 = AtomicU64::new(0);
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// An n-dimensional array with a dtype, a device and (optionally) a place in the autograd
/// graph. See the crate docs for an overview.
#[derive(Clone)]
pub struct Tensor {
    pub(crate) inner: Arc<TensorInner>,
}

impl Tensor {
    /// A tensor owning a new buffer laid out by `layout`.
    pub(crate) fn from_storage(storage: Storage, layout: Layout) -> Tensor {
        let dtype = storage.dtype();
        Tensor::from_cell(StorageCell::new(storage), layout, dtype)
    }

    /// A tensor owning a new contiguous buffer of `shape`.
    pub(crate) fn from_contiguous(storage: Storage, shape: &[usize]) -> Tensor {
        debug_assert_eq!(storage.len(), layout::numel(shape));
        Tensor::from_storage(storage, Layout::contiguous(shape))
    }

    fn from_cell(storage: Arc<StorageCell>, layout: Layout, dtype: DType) -> Tensor {
        Tensor::from_parts(storage, layout, dtype, VersionCounter::Storage, None)
    }

    fn from_parts(
        storage: Arc<StorageCell>,
        layout: Layout,
        dtype: DType,
        version: VersionCounter,
        view_base: Option<Tensor>,
    ) -> Tensor {
        Tensor {
            inner: Arc::new(TensorInner {
                id: TensorId::next(),
                storage,
                layout,
                dtype,
                node: RwLock::new(None),
                in_graph: AtomicBool::new(false),
                version,
                view_base,
                requires_grad: AtomicBool::new(false),
                grad: Mutex::new(None),
                grad_hooks: Mutex::new(Vec::new()),
                has_grad_hooks: AtomicBool::new(false),
                tensor_hooks: Mutex::new(Vec::new()),
                has_tensor_hooks: AtomicBool::new(false),
                retains_grad: AtomicBool::new(false),
            }),
        }
    }

    /// A new handle on the same storage with another layout and the same version counter,
    /// outside the autograd graph. View ops record their node on the result.
    pub(crate) fn view_with_layout(&self, layout: Layout) -> Tensor {
        Tensor::from_parts(
            self.inner.storage.clone(),
            layout,
            self.dtype(),
            self.inner.version.clone(),
            None,
        )
    }

    /// A view of `self` under `layout` that knows its base (`self`'s base when `self` is a
    /// view itself), so that an in-place op on it can rebase the base's history.
    pub(crate) fn view_of_base(&self, layout: Layout) -> Tensor {
        // A view made a leaf that requires grad (`t.reshape(...).requires_grad_()`) is the
        // base of its own views, as in PyTorch: autograd sees it, not the buffer below.
        let base = match self.view_base() {
            Some(b) if !(self.is_leaf() && self.requires_grad()) => b,
            _ => self.clone(),
        };
        Tensor::from_parts(
            self.inner.storage.clone(),
            layout,
            self.dtype(),
            self.inner.version.clone(),
            Some(base),
        )
    }

    /// The tensor this view was made from (PyTorch's `_base`), `None` when not a view.
    pub fn view_base(&self) -> Option<Tensor> {
        self.inner.view_base.clone()
    }

    /// A handle on the same memory with its own version counter, outside the graph
    /// (PyTorch's `.data`): writes through it are not seen by autograd's checks.
    pub fn data_alias(&self) -> Tensor {
        Tensor::from_parts(
            self.inner.storage.clone(),
            self.layout().clone(),
            self.dtype(),
            VersionCounter::Own(Arc::new(AtomicU64::new(0))),
            None,
        )
    }

    /// Attach an autograd node to a freshly created tensor.
    pub(crate) fn set_node(self, node: Node) -> Tensor {
        let mut slot = self.inner.node.write().unwrap_or_else(|e| e.into_inner());
        assert!(
            slot.is_none(),
            "set_node on a tensor that already has a node"
        );
        *slot = Some(Arc::new(node));
        drop(slot);
        self.inner.in_graph.store(true, Ordering::Release);
        self
    }

    /// Replace this tensor's place in the graph by `node` (an in-place op rebasing history;
    /// `None` cannot occur: once in the graph, a tensor stays in it).
    pub(crate) fn rebase_history(&self, node: Arc<Node>) {
        *self.inner.node.write().unwrap_or_else(|e| e.into_inner()) = Some(node);
        self.inner.in_graph.store(true, Ordering::Release);
    }

    /// This handle's unique id.
    pub fn id(&self) -> TensorId {
        self.inner.id
    }
    /// The size of each dimension.
    pub fn shape(&self) -> &[usize] {
        self.inner.layout.shape()
    }
    /// The size of dimension `dim` (negative counts from the end).
    pub fn size(&self, dim: impl Dim) -> Result<usize> {
        let dim = dim.to_isize();
        let d = layout::normalize_dim("size", dim, self.ndim())?;
        Ok(self.shape().get(d).copied().unwrap_or(1))
    }
    /// Number of dimensions (0 for a scalar).
    pub fn ndim(&self) -> usize {
        self.inner.layout.ndim()
    }
    /// Alias of [`Tensor::ndim`], as `Tensor.dim()` in PyTorch.
    pub fn dim(&self) -> usize {
        self.ndim()
    }
    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.inner.layout.numel()
    }
    /// Strides in elements.
    pub fn stride(&self) -> &[usize] {
        self.inner.layout.strides()
    }
    /// Offset of the first element in the storage, in elements.
    pub fn storage_offset(&self) -> usize {
        self.inner.layout.offset()
    }
    /// The layout (shape, strides, offset).
    pub fn layout(&self) -> &Layout {
        &self.inner.layout
    }
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.inner.dtype
    }
    /// The device holding the storage.
    pub fn device(&self) -> Device {
        decode_device(self.inner.storage.device.load(Ordering::Acquire))
    }

    /// Move the whole storage of this tensor (and so of every view sharing it) to `device`,
    /// in place, with its gradient: what `module.to(device)` does to parameters and buffers.
    /// Handles, layouts and autograd identity stay; the values are copied.
    pub fn move_to_(&self, device: Device) -> Result<()> {
        if let Some(g) = self.grad() {
            g.move_to_(device)?;
        }
        if self.device() == device {
            return Ok(());
        }
        let mut s = self.storage_mut();
        let host = s.to_cpu(&Layout::contiguous(&[s.len()]))?;
        *s = Storage::from_cpu(host, device)?;
        let bytes = self.inner.storage.bytes;
        memory::freed(self.device(), bytes);
        memory::allocated(device, bytes);
        self.inner
            .storage
            .device
            .store(encode_device(device), Ordering::Release);
        Ok(())
    }
    /// True when the elements are row-major without gaps.
    pub fn is_contiguous(&self) -> bool {
        self.inner.layout.is_contiguous()
    }
    /// True when this handle is the only one on its storage and views all of it, row-major
    /// from offset 0: the buffer can then be handed on (as a leaf's `.grad`) without a copy,
    /// since no other tensor can see later writes to it.
    /// A view's base (see [`Tensor::view_base`]) holds the storage too: it counts as this
    /// handle's own when nothing else holds the base.
    pub(crate) fn owns_whole_storage(&self) -> bool {
        let held_by_base = match &self.inner.view_base {
            None => 0,
            Some(b)
                if Arc::strong_count(&b.inner) == 1
                    && Arc::ptr_eq(&b.inner.storage, &self.inner.storage) =>
            {
                1
            }
            Some(_) => return false,
        };
        Arc::strong_count(&self.inner) == 1
            && Arc::strong_count(&self.inner.storage) == 1 + held_by_base
            && self.inner.layout.is_contiguous()
            && self.inner.layout.offset() == 0
            && self.storage().len() == self.numel()
    }
    /// A tensor that [`Tensor::owns_whole_storage`] as a plain tensor of its buffer: a view
    /// outside the graph loses its base, so that a gradient handed on as a leaf's `.grad`
    /// is no view, as in PyTorch.
    pub(crate) fn into_buffer(self) -> Tensor {
        if self.inner.view_base.is_none() || self.node().is_some() {
            return self;
        }
        Tensor::from_cell(
            self.inner.storage.clone(),
            self.layout().clone(),
            self.dtype(),
        )
    }
    /// True when both tensors view the same storage.
    pub fn shares_storage(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.inner.storage, &other.inner.storage)
    }
    /// The version counter (bumped by every in-place write through this tensor, its views
    /// or its `detach()`ed handles; PyTorch's `_version`).
    pub fn version(&self) -> u64 {
        self.version_counter().load(Ordering::Acquire)
    }

    fn version_counter(&self) -> &AtomicU64 {
        match &self.inner.version {
            VersionCounter::Storage => &self.inner.storage.version,
            VersionCounter::Own(c) => c,
        }
    }

    /// Read access to the storage.
    pub(crate) fn storage(&self) -> RwLockReadGuard<'_, Storage> {
        self.inner
            .storage
            .data
            .read()
            .unwrap_or_else(|e| e.into_inner())
    }
    /// Write access to the storage; bumps the version counter.
    pub(crate) fn storage_mut(&self) -> RwLockWriteGuard<'_, Storage> {
        self.version_counter().fetch_add(1, Ordering::AcqRel);
        self.inner
            .storage
            .data
            .write()
            .unwrap_or_else(|e| e.into_inner())
    }

    // ---- autograd state -------------------------------------------------------------

    /// True when gradients flow to this tensor: a leaf marked with `requires_grad_`, or the
    /// result of an op recorded in the graph.
    pub fn requires_grad(&self) -> bool {
        self.has_node() || self.inner.requires_grad.load(Ordering::Relaxed)
    }
    /// True for tensors created by the user rather than by a recorded op.
    pub fn is_leaf(&self) -> bool {
        !self.has_node()
    }
    /// Name of the op that produced this tensor, if it is in the graph (`grad_fn` in PyTorch).
    pub fn grad_fn_name(&self) -> Option<&'static str> {
        self.node().map(|n| n.name)
    }
    /// The node that produced this tensor (its current one, after in-place rebases).
    pub(crate) fn node(&self) -> Option<Arc<Node>> {
        self.inner
            .node
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
    fn has_node(&self) -> bool {
        self.inner.in_graph.load(Ordering::Acquire)
    }

    /// Mark a leaf as requiring gradients (or not). Returns the same handle for chaining.
    /// Errors on non-leaf tensors and on non-float dtypes, as PyTorch does.
    pub fn requires_grad_(&self, requires_grad: bool) -> Result<Tensor> {
        if !self.is_leaf() {
            return Err(Error::Autograd(format!(
                "requires_grad_: can only change requires_grad of leaf tensors (this one comes from {})",
                self.grad_fn_name().unwrap_or("?")
            )));
        }
        if requires_grad && !self.dtype().is_float() {
            return Err(Error::Autograd(format!(
                "requires_grad_: only floating point tensors can require gradients, got {}",
                self.dtype()
            )));
        }
        self.inner
            .requires_grad
            .store(requires_grad, Ordering::Relaxed);
        Ok(self.clone())
    }

    /// The accumulated gradient of a leaf, if backward has reached it.
    pub fn grad(&self) -> Option<Tensor> {
        self.inner
            .grad
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
    /// Replace the gradient slot (`None` clears it, as `zero_grad(set_to_none=True)`).
    pub fn set_grad(&self, grad: Option<Tensor>) {
        *self.inner.grad.lock().unwrap_or_else(|e| e.into_inner()) = grad;
    }

    /// Run `hook` with this leaf every time a backward pass has accumulated its `.grad`
    /// (`Tensor.register_post_accumulate_grad_hook`): as soon as no remaining node of the
    /// graph contributes to it, not at the end of the pass, so that work on the gradient
    /// (DDP's all-reduce) overlaps the rest of backward. Hooks run on the thread running
    /// backward, in registration order; an error from one ends the pass with that error.
    /// Errors on a tensor that is not a leaf requiring grad, as PyTorch does.
    pub fn register_post_accumulate_grad_hook(
        &self,
        hook: impl Fn(&Tensor) -> Result<()> + Send + Sync + 'static,
    ) -> Result<HookHandle> {
        if !self.is_leaf() || !self.requires_grad() {
            return Err(Error::Autograd(format!(
                "register_post_accumulate_grad_hook: only leaf tensors that require grad \
                 accumulate a .grad (this one is {})",
                if self.is_leaf() {
                    "a leaf that does not require grad"
                } else {
                    "the output of an op"
                }
            )));
        }
        let id = next_hook_id();
        let mut hooks = self
            .inner
            .grad_hooks
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        hooks.push((id, Arc::new(hook)));
        self.inner.has_grad_hooks.store(true, Ordering::Release);
        Ok(HookHandle {
            tensor: Arc::downgrade(&self.inner),
            id,
            gradient_hook: false,
        })
    }

    /// True when a post-accumulate-grad hook is registered on this tensor.
    pub(crate) fn has_grad_hooks(&self) -> bool {
        self.inner.has_grad_hooks.load(Ordering::Acquire)
    }

    /// Run this leaf's post-accumulate-grad hooks (the engine calls it after writing `.grad`).
    pub(crate) fn run_grad_hooks(&self) -> Result<()> {
        // A copy of the list: a hook may register or remove hooks.
        let hooks: Vec<PostAccumulateGradHook> = self
            .inner
            .grad_hooks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(_, h)| h.clone())
            .collect();
        hooks.iter().try_for_each(|h| h(self))
    }

    /// A new handle on the same data, outside the graph (`requires_grad` false).
    pub fn detach(&self) -> Tensor {
        self.view_with_layout(self.layout().clone())
    }

    // ---- host access ------------------------------------------------------------------

    /// The elements in row-major order as a Vec of `T`, which must match the dtype.
    pub fn to_vec<T: CpuElement>(&self) -> Result<Vec<T>> {
        if self.dtype() != T::DTYPE {
            return Err(Error::dtype(
                "to_vec",
                format!(
                    "tensor has dtype {} but {} was requested (cast with .to_dtype first)",
                    self.dtype(),
                    T::DTYPE
                ),
            ));
        }
        let cpu = self.storage().to_cpu(self.layout())?;
        Ok(T::slice(&cpu).expect("dtype checked").to_vec())
    }

    /// The address of the element at index `[0, 0, ...]` (`Tensor.data_ptr()`): host memory
    /// for a CPU tensor, device memory for a CUDA one. For zero-copy interop (NumPy's array
    /// interface): the memory stays valid while this tensor or a view of it lives, and the
    /// strides of [`Tensor::stride`] address the other elements.
    pub fn data_ptr(&self) -> usize {
        let base = match &*self.storage() {
            Storage::Cpu(c) => crate::with_cpu_storage!(c, v => v.as_ptr() as usize),
            #[cfg(feature = "cuda")]
            Storage::Cuda(c) => c.ptr() as usize,
        };
        base + self.storage_offset() * self.dtype().size_in_bytes()
    }

    /// The elements in row-major order converted to f64, whatever the dtype.
    pub fn to_vec_f64(&self) -> Result<Vec<f64>> {
        Ok(self.storage().to_cpu(self.layout())?.to_f64_vec())
    }

    /// Error unless the tensor holds exactly one element (for `item`).
    fn check_one_element(&self) -> Result<()> {
        if self.numel() == 1 {
            return Ok(());
        }
        Err(Error::shape(
            "item",
            format!(
                "a Tensor with {} elements (shape {:?}) cannot be converted to a scalar",
                self.numel(),
                self.shape()
            ),
        ))
    }

    /// The value of a one-element tensor.
    pub fn item<T: CpuElement>(&self) -> Result<T> {
        self.check_one_element()?;
        Ok(self.to_vec::<T>()?[0])
    }

    /// The value of a one-element tensor of any dtype, as f64.
    pub fn item_f64(&self) -> Result<f64> {
        self.check_one_element()?;
        Ok(self.to_vec_f64()?[0])
    }
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Tensor(shape={:?}, dtype={}, device={}",
            self.shape(),
            self.dtype(),
            self.device()
        )?;
        if let Some(name) = self.grad_fn_name() {
            write!(f, ", grad_fn={name}")?;
        } else if self.requires_grad() {
            write!(f, ", requires_grad=True")?;
        }
        write!(f, ")")
    }
}

impl Tensor {
    /// A detached copy in a new contiguous buffer (never shares storage with `self`).
    pub(crate) fn detached_copy(&self) -> Tensor {
        let s = self
            .storage()
            .to_contiguous(self.layout())
            .expect("copy of a valid layout");
        Tensor::from_contiguous(s, self.shape())
    }
}
