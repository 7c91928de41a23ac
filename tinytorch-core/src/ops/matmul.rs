//! Matrix products: `matmul` with `torch.matmul`'s shape rules, and `mm`, `bmm`, `outer`, `dot`.
//!
//! Every product ends in one backend primitive, `Storage::matmul` on 3-D layouts
//! `(b, m, k) x (b, k, n)`. Broadcast batch dims become stride-0 batch dims and transposed or
//! sliced operands keep their strides, so nothing is copied unless an operand's batch dims
//! cannot be described by a single stride (then that operand is copied, never an error).
//! 1-D operands are turned into matrices with `unsqueeze` views whose own backward rules put
//! the gradient back in shape.

use super::{same_device, with_storages2};
use crate::amp::to_autocast;
use crate::autograd::{needs_grad, SavedTensor};
use crate::error::{Error, Result};
use crate::tensor::layout::{broadcast_shapes, numel};
use crate::tensor::{DType, Layout, Tensor};

/// True inside an autocast scope when an operand is f32 (it is cast to the scope's dtype).
fn autocasts(a: &Tensor, b: &Tensor) -> bool {
    crate::amp::autocast_dtype().is_some() && (a.dtype() == DType::F32 || b.dtype() == DType::F32)
}

/// Same device and dtype, as PyTorch's matrix products require (they do not promote).
fn check_operands(op: &'static str, a: &Tensor, b: &Tensor) -> Result<()> {
    same_device(op, &[a, b])?;
    if a.dtype() != b.dtype() {
        return Err(Error::dtype(
            op,
            format!(
                "expected both operands to have the same dtype, but got {} and {} (shapes {:?} and {:?})",
                a.dtype(),
                b.dtype(),
                a.shape(),
                b.shape()
            ),
        ));
    }
    Ok(())
}

/// Describe `layout` (shape `batch ++ [rows, cols]`) as a 3-D layout `(prod(batch), rows, cols)`
/// when its batch dims fold into one stride; `None` otherwise.
fn fold_batch(layout: &Layout) -> Option<Layout> {
    let nd = layout.ndim();
    let (shape, strides) = (layout.shape(), layout.strides());
    let batch = numel(&shape[..nd - 2]);
    // Walk batch dims from the innermost outwards: each non-trivial dim must step exactly
    // over the dims inside it.
    let mut stride: Option<usize> = None;
    let mut inner = 1usize;
    for d in (0..nd - 2).rev() {
        if shape[d] == 1 {
            continue;
        }
        match stride {
            None => stride = Some(strides[d]),
            Some(s) if strides[d] == s * inner => {}
            Some(_) => return None,
        }
        inner *= shape[d];
    }
    let bs = stride.unwrap_or(0);
    Some(Layout::from_parts(
        vec![batch, shape[nd - 2], shape[nd - 1]],
        vec![bs, strides[nd - 2], strides[nd - 1]],
        layout.offset(),
    ))
}

/// Run the primitive on two operands of the same dtype: `a` `(..., m, k)` broadcast as
/// `a_l`, `b` likewise; both layouts have shape `batch ++ [rows, cols]`. Returns the
/// contiguous product of shape `batch ++ [m, n]`, outside the graph.
fn product(a: &Tensor, a_l: Layout, b: &Tensor, b_l: Layout) -> Result<Tensor> {
    let nd = a_l.ndim();
    let mut out_shape = a_l.shape()[..nd - 1].to_vec();
    out_shape.push(b_l.shape()[nd - 1]);
    // An operand whose batch dims do not fold into one stride is copied (materialising its
    // broadcast), the only case where the kernel needs a copy.
    let (a, a3) = folded(a, a_l)?;
    let (b, b3) = folded(b, b_l)?;
    let s = with_storages2(&a, &b, |sa, sb| sa.matmul(&a3, sb, &b3))?;
    Ok(Tensor::from_contiguous(s, &out_shape))
}

/// The tensor and 3-D layout to hand the kernel for operand layout `l` of `t`.
fn folded(t: &Tensor, l: Layout) -> Result<(Tensor, Layout)> {
    if let Some(l3) = fold_batch(&l) {
        return Ok((t.detach(), l3));
    }
    let copy = Tensor::from_contiguous(t.storage().to_contiguous(&l)?, l.shape());
    let l3 = fold_batch(copy.layout()).expect("a contiguous layout folds");
    Ok((copy, l3))
}

impl Tensor {
    /// Matrix product of two tensors of at least 2 dims, `(..., m, k) x (..., k, n)`, with
    /// broadcast batch dims. One graph node; its backward reduces the gradients of broadcast
    /// batch dims with `sum_to_shape`.
    fn matmul_nd(&self, other: &Tensor, op: &'static str) -> Result<Tensor> {
        let (sa, sb) = (self.shape(), other.shape());
        let (na, nb) = (sa.len(), sb.len());
        let (m, k, k2, n) = (sa[na - 2], sa[na - 1], sb[nb - 2], sb[nb - 1]);
        if k != k2 {
            return Err(Error::shape(
                op,
                format!("mat1 and mat2 shapes cannot be multiplied ({m}x{k} and {k2}x{n}); operand shapes {sa:?} and {sb:?}"),
            ));
        }
        let batch = broadcast_shapes(op, &sa[..na - 2], &sb[..nb - 2]).map_err(|_| {
            Error::shape(
                op,
                format!("batch dims of {sa:?} and {sb:?} cannot be broadcast together"),
            )
        })?;
        let out = self.fold_2d_product(other, &batch)?;
        let out = match out {
            Some(out) => out,
            None => {
                let full = |rows: usize, cols: usize| [batch.as_slice(), &[rows, cols]].concat();
                let a_l = self.layout().broadcast_as(op, &full(m, k))?;
                let b_l = other.layout().broadcast_as(op, &full(k, n))?;
                product(self, a_l, other, b_l)?
            }
        };
        record_product(out, self, other, None, op)
    }

    /// `self @ other + bias` with `other` 2-D `(k, n)` and `bias` 1-D `(n,)` (`linear`'s
    /// `x @ W^T + b`, PyTorch's `addmm`): where the device has a kernel for it, one pass that
    /// accumulates the product onto the bias, and one graph node; otherwise `matmul` then a
    /// broadcast add. Same values and errors either way.
    pub fn matmul_bias(&self, other: &Tensor, bias: &Tensor) -> Result<Tensor> {
        if autocasts(self, other) || autocasts(bias, bias) {
            return to_autocast(self)?.matmul_bias(&to_autocast(other)?, &to_autocast(bias)?);
        }
        match self.fused_matmul_bias(other, bias)? {
            // One node, named as PyTorch names it (`AddmmBackward0`).
            Some(out) => record_product(out, self, other, Some(bias), "addmm"),
            None => self.matmul(other)?.add(bias),
        }
    }

    /// The product of [`Tensor::matmul_bias`] from the device's kernel, outside the graph;
    /// `None` where the operands do not fit it (shapes other than `(..., m, k) x (k, n) +
    /// (n,)` with foldable rows, mixed dtypes or devices, a strided bias) or the device has
    /// no kernel.
    fn fused_matmul_bias(&self, other: &Tensor, bias: &Tensor) -> Result<Option<Tensor>> {
        let fits = self.ndim() >= 2
            && other.ndim() == 2
            && bias.ndim() == 1
            && self.shape()[self.ndim() - 1] == other.shape()[0]
            && bias.shape()[0] == other.shape()[1]
            && self.dtype() == other.dtype()
            && self.dtype() == bias.dtype()
            && self.device() == other.device()
            && self.device() == bias.device()
            && bias.is_contiguous();
        if !fits {
            return Ok(None);
        }
        let Some((a_l, b_l)) = folded_rows(self, other) else {
            return Ok(None);
        };
        let (sa, n) = (self.shape(), other.shape()[1]);
        let (a, b) = (self.detach(), other.detach());
        let stored = super::with_spans(&[Some(bias)], |spans| {
            let bias = spans[0].expect("the bias is present");
            with_storages2(&a, &b, |sa, sb| sa.matmul_bias(&a_l, sb, &b_l, bias))
        })?;
        let out_shape = [&sa[..sa.len() - 1], &[n]].concat();
        Ok(stored.map(|s| Tensor::from_contiguous(s, &out_shape)))
    }

    /// PyTorch's folding of `(..., m, k) x (k, n)`: when the left operand's leading dims merge
    /// with its rows into one stride, the product is a single `(B*m, k) x (k, n)` matrix
    /// product instead of B small ones. `None` when the shapes do not allow it.
    fn fold_2d_product(&self, other: &Tensor, batch: &[usize]) -> Result<Option<Tensor>> {
        if other.ndim() != 2 || self.ndim() < 3 {
            return Ok(None);
        }
        let Some((a_l, b_l)) = folded_rows(self, other) else {
            return Ok(None);
        };
        let (sa, n) = (self.shape(), other.shape()[1]);
        let out = product(self, a_l, other, b_l)?;
        let shape = [batch, &[sa[sa.len() - 2], n]].concat();
        Ok(Some(out.view_with_layout(Layout::contiguous(&shape))))
    }

    /// Matrix product with `torch.matmul`'s rules: 1-D x 1-D is the dot product (0-d result);
    /// 2-D x 2-D is `mm`; a 1-D left operand is treated as a row `(1, k)` and a 1-D right
    /// operand as a column `(k, 1)`, and that dim is removed from the result; otherwise a
    /// batched product with broadcast batch dims. Any strides are accepted. Both operands
    /// must have the same dtype (PyTorch does not promote here).
    pub fn matmul(&self, other: &Tensor) -> Result<Tensor> {
        if autocasts(self, other) {
            return to_autocast(self)?.matmul(&to_autocast(other)?);
        }
        check_operands("matmul", self, other)?;
        match (self.ndim(), other.ndim()) {
            (0, _) | (_, 0) => Err(Error::shape(
                "matmul",
                format!(
                    "both arguments to matmul need to be at least 1D, but they are {}D and {}D",
                    self.ndim(),
                    other.ndim()
                ),
            )),
            (1, 1) => self.dot(other),
            (1, _) => self
                .unsqueeze(0)?
                .matmul_nd(other, "matmul")?
                .squeeze_dim(-2),
            (_, 1) => self
                .matmul_nd(&other.unsqueeze(1)?, "matmul")?
                .squeeze_dim(-1),
            _ => self.matmul_nd(other, "matmul"),
        }
    }

    /// Product of two matrices `(n, m) x (m, p)` (`torch.mm`); 2-D operands only.
    pub fn mm(&self, other: &Tensor) -> Result<Tensor> {
        if autocasts(self, other) {
            return to_autocast(self)?.mm(&to_autocast(other)?);
        }
        check_operands("mm", self, other)?;
        if self.ndim() != 2 || other.ndim() != 2 {
            return Err(Error::shape(
                "mm",
                format!(
                    "expected two 2-D matrices, got shapes {:?} and {:?}",
                    self.shape(),
                    other.shape()
                ),
            ));
        }
        self.matmul_nd(other, "mm")
    }

    /// Batched product `(b, n, m) x (b, m, p)` (`torch.bmm`); 3-D operands with the same
    /// batch size (no broadcasting, as in PyTorch).
    pub fn bmm(&self, other: &Tensor) -> Result<Tensor> {
        if autocasts(self, other) {
            return to_autocast(self)?.bmm(&to_autocast(other)?);
        }
        check_operands("bmm", self, other)?;
        if self.ndim() != 3 || other.ndim() != 3 {
            return Err(Error::shape(
                "bmm",
                format!(
                    "expected two 3-D tensors, got shapes {:?} and {:?}",
                    self.shape(),
                    other.shape()
                ),
            ));
        }
        if self.shape()[0] != other.shape()[0] {
            return Err(Error::shape(
                "bmm",
                format!(
                    "batch sizes differ: shapes {:?} and {:?}",
                    self.shape(),
                    other.shape()
                ),
            ));
        }
        self.matmul_nd(other, "bmm")
    }

    /// Outer product of two vectors, `(n) x (m) -> (n, m)` (`torch.outer`). Computed as a
    /// broadcast multiply, so dtypes promote as in `mul`.
    pub fn outer(&self, other: &Tensor) -> Result<Tensor> {
        if self.ndim() != 1 || other.ndim() != 1 {
            return Err(Error::shape(
                "outer",
                format!(
                    "expected two 1-D vectors, got shapes {:?} and {:?}",
                    self.shape(),
                    other.shape()
                ),
            ));
        }
        self.unsqueeze(1)?.mul(&other.unsqueeze(0)?)
    }

    /// Dot product of two 1-D tensors of the same length and dtype, as a 0-d tensor
    /// (`torch.dot`).
    pub fn dot(&self, other: &Tensor) -> Result<Tensor> {
        check_operands("dot", self, other)?;
        if self.ndim() != 1 || other.ndim() != 1 {
            return Err(Error::shape(
                "dot",
                format!(
                    "1D tensors expected, but got shapes {:?} and {:?}",
                    self.shape(),
                    other.shape()
                ),
            ));
        }
        if self.shape() != other.shape() {
            return Err(Error::shape(
                "dot",
                format!(
                    "inconsistent tensor size, expected tensors of the same length, got {} and {}",
                    self.numel(),
                    other.numel()
                ),
            ));
        }
        // (1, 1, k) x (1, k, 1) on the operands' own strides.
        let (la, lb) = (self.layout(), other.layout());
        let k = self.numel();
        let a_l = Layout::from_parts(vec![1, 1, k], vec![0, 0, la.strides()[0]], la.offset());
        let b_l = Layout::from_parts(vec![1, k, 1], vec![0, lb.strides()[0], 0], lb.offset());
        let s = with_storages2(self, other, |sa, sb| sa.matmul(&a_l, sb, &b_l))?;
        let out = Tensor::from_contiguous(s, &[]);
        if !needs_grad(&[self, other]) {
            return Ok(out);
        }
        let a_saved = other.requires_grad().then(|| self.save("dot"));
        let b_saved = self.requires_grad().then(|| other.save("dot"));
        Ok(out.record("dot", &[self, other], move |g, need| {
            // d(a.b)/da = b, scaled by the 0-d upstream gradient.
            let ga = match (&b_saved, need[0]) {
                (Some(b), true) => Some(b.get()?.mul(g)?),
                _ => None,
            };
            let gb = match (&a_saved, need[1]) {
                (Some(a), true) => Some(a.get()?.mul(g)?),
                _ => None,
            };
            Ok(vec![ga, gb])
        }))
    }
}

/// The kernel layouts of `a (..., m, k) x b (k, n)` as one `(1, rows, k) x (1, k, n)`
/// product, when `a`'s leading dims merge with its rows into one stride; `None` otherwise.
fn folded_rows(a: &Tensor, b: &Tensor) -> Option<(Layout, Layout)> {
    let (sa, k) = (a.shape(), b.shape()[0]);
    let rows = numel(&sa[..sa.len() - 1]);
    let a2 = a.layout().view_as(&[rows, k])?;
    let a_l = Layout::from_parts(
        vec![1, rows, k],
        [&[0][..], a2.strides()].concat(),
        a2.offset(),
    );
    Some((a_l, b.layout().unsqueeze(0)))
}

/// Records the graph node of the product `out = a @ b (+ bias)` when an operand needs a
/// gradient. Each operand's gradient needs the other operand only; the bias's is the
/// upstream gradient summed over the rows.
fn record_product(
    out: Tensor,
    a: &Tensor,
    b: &Tensor,
    bias: Option<&Tensor>,
    op: &'static str,
) -> Result<Tensor> {
    let inputs: Vec<&Tensor> = [Some(a), Some(b), bias].into_iter().flatten().collect();
    if !needs_grad(&inputs) {
        return Ok(out);
    }
    let a_saved = b.requires_grad().then(|| a.save(op));
    let b_saved = a.requires_grad().then(|| b.save(op));
    let (a_shape, b_shape) = (a.shape().to_vec(), b.shape().to_vec());
    let bias_shape = bias.map(|t| t.shape().to_vec());
    let (a_col_major, b_col_major) = (column_major(a), column_major(b));
    Ok(out.record(op, &inputs, move |g, need| {
        let ga = match (&b_saved, need[0]) {
            (Some(b), true) => Some(grad_lhs(g, b, &a_shape, a_col_major)?),
            _ => None,
        };
        let gb = match (&a_saved, need[1]) {
            (Some(a), true) => Some(grad_rhs(g, a, &b_shape, b_col_major)?),
            _ => None,
        };
        let mut grads = vec![ga, gb];
        if let Some(shape) = &bias_shape {
            grads.push(if need[2] {
                Some(g.sum_to_shape(shape)?)
            } else {
                None
            });
        }
        Ok(grads)
    }))
}

/// True when the last two dims of `t` are stored column-major (a transposed row-major
/// matrix, like `weight.t()` in `linear`). Its gradient is then computed transposed, as
/// PyTorch's `mm` backward does: the result arrives row-major in the frame of the tensor that
/// was transposed, so the leaf receives it without a strided copy of the whole matrix.
fn column_major(t: &Tensor) -> bool {
    let nd = t.ndim();
    let (shape, strides) = (t.shape(), t.layout().strides());
    nd >= 2
        && shape[nd - 2] > 1
        && shape[nd - 1] > 1
        && strides[nd - 2] == 1
        && strides[nd - 1] == shape[nd - 2]
}

/// Gradient of the left operand `a` `(..., m, k)` of `a @ b`: `g @ b^T`, summed over the
/// batch dims that `a` was broadcast along; computed as `(b @ g^T)^T` when `a` was
/// column-major.
fn grad_lhs(g: &Tensor, b: &SavedTensor, a_shape: &[usize], a_col_major: bool) -> Result<Tensor> {
    let b = &b.get()?;
    if a_col_major {
        return b
            .matmul(&g.transpose(-1, -2)?)?
            .transpose(-1, -2)?
            .sum_to_shape(a_shape);
    }
    g.matmul(&b.transpose(-1, -2)?)?.sum_to_shape(a_shape)
}

/// Gradient of the right operand `b` `(..., k, n)` of `a @ b`: `a^T @ g`, summed over the
/// batch dims that `b` was broadcast along (computed as `(g^T @ a)^T` when `b` was
/// column-major). A 2-D `b` shared by a batched `a` gets one `(k, B*m) x (B*m, n)` product
/// instead of B products and a sum.
fn grad_rhs(g: &Tensor, a: &SavedTensor, b_shape: &[usize], b_col_major: bool) -> Result<Tensor> {
    let a = &a.get()?;
    let (a, g) = if b_shape.len() == 2 && a.ndim() > 2 {
        // b was not broadcast over a's batch dims here (it has none), so a and g share them.
        // The row count is spelled out: `-1` is ambiguous when k or n is 0.
        let rows = a.shape()[..a.ndim() - 1].iter().product::<usize>() as isize;
        let (k, n) = (b_shape[0] as isize, b_shape[1] as isize);
        (a.reshape(&[rows, k])?, g.reshape(&[rows, n])?)
    } else {
        (a.clone(), g.clone())
    };
    if b_col_major {
        return g
            .transpose(-1, -2)?
            .matmul(&a)?
            .transpose(-1, -2)?
            .sum_to_shape(b_shape);
    }
    a.transpose(-1, -2)?.matmul(&g)?.sum_to_shape(b_shape)
}
