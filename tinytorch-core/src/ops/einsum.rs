//! `torch.einsum`: Einstein summation over any number of operands, composed from views
//! (diagonal, permute, reshape), sums, products and batched matmul, so its backward is theirs.
//!
//! The equation is parsed into one list of dims for all operands: the ellipsis dims first
//! (right-aligned across operands, as broadcasting aligns them), then every letter. Each operand
//! is brought to that full rank (repeated letters become a diagonal, absent dims size 1), then
//! the operands are combined left to right. A dim that no later operand and not the output
//! needs is summed as soon as possible: by one `sum` when only one side has it, inside a `bmm`
//! when both do (`sumproduct_pair`, PyTorch's plan). Dims of size 1 broadcast, letters
//! included, as in PyTorch.

use crate::error::{Error, Result};
use crate::ops::same_device;
use crate::ops::view::inverse_permutation;
use crate::tensor::Tensor;

const OP: &str = "einsum";

/// One operand's subscripts: letters as label ids (0..52: `A-Z` then `a-z`, PyTorch's order
/// for the implicit output) and at most one ellipsis.
#[derive(Debug, Default)]
struct Subscripts {
    labels: Vec<Label>,
    has_ellipsis: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Label {
    Letter(usize),
    Ellipsis,
}

fn label_id(c: char) -> Option<usize> {
    match c {
        'A'..='Z' => Some(c as usize - 'A' as usize),
        'a'..='z' => Some(26 + c as usize - 'a' as usize),
        _ => None,
    }
}

fn label_char(id: usize) -> char {
    if id < 26 {
        (b'A' + id as u8) as char
    } else {
        (b'a' + (id - 26) as u8) as char
    }
}

/// Parse one side of the equation (`"ij,jk"` or the output `"ik"`), `operand` numbering the
/// first term for messages. Spaces are ignored.
fn parse_terms(eq: &str, side: &str, first: usize, pos0: usize) -> Result<Vec<Subscripts>> {
    let mut terms = vec![Subscripts::default()];
    let mut dots = 0;
    for (i, c) in side.chars().enumerate() {
        let operand = first + terms.len() - 1;
        let t = terms.last_mut().expect("one term at least");
        if c != '.' && dots > 0 {
            return Err(Error::invalid(
                OP,
                format!(
                    "found '.' for operand {operand} that is not part of any ellipsis in \"{eq}\""
                ),
            ));
        }
        match c {
            ' ' => {}
            ',' => terms.push(Subscripts::default()),
            '.' => {
                if t.has_ellipsis {
                    return Err(Error::invalid(
                        OP,
                        format!(
                            "found '.' for operand {operand} for which an ellipsis was already \
                             found in \"{eq}\""
                        ),
                    ));
                }
                dots += 1;
                if dots == 3 {
                    t.has_ellipsis = true;
                    t.labels.push(Label::Ellipsis);
                    dots = 0;
                }
            }
            c => match label_id(c) {
                Some(id) => t.labels.push(Label::Letter(id)),
                None => {
                    return Err(Error::invalid(
                        OP,
                        format!(
                            "invalid subscript '{c}' at index {} of \"{eq}\": subscripts must \
                             be in [a-zA-Z]",
                            pos0 + i
                        ),
                    ))
                }
            },
        }
    }
    if dots > 0 {
        return Err(Error::invalid(
            OP,
            format!(
                "found '.' for operand {} that is not part of any ellipsis in \"{eq}\"",
                first + terms.len() - 1
            ),
        ));
    }
    Ok(terms)
}

/// The dims of the combined space: `ell` ellipsis dims, then one per letter that occurs.
struct Space {
    ell: usize,
    /// Letter id -> dim index in the space.
    letter_dim: [Option<usize>; 52],
    ndim: usize,
}

impl Tensor {
    /// Einstein summation (`torch.einsum(equation, *operands)`): `"ij,jk->ik"` is a matrix
    /// product, `"ii->i"` a diagonal, `"...ij->...ji"` a batched transpose, `"bij,bjk"` a
    /// batched product (implicit output: the letters seen once, in alphabetical order with
    /// capitals first, after the ellipsis dims). Letters summed away are contracted with
    /// `bmm`; dims of size 1 broadcast. All operands must share one dtype and device.
    pub fn einsum(equation: &str, operands: &[&Tensor]) -> Result<Tensor> {
        if operands.is_empty() {
            return Err(Error::invalid(OP, "must provide at least one operand"));
        }
        same_device(OP, operands)?;
        let dtype = operands[0].dtype();
        if let Some(t) = operands.iter().find(|t| t.dtype() != dtype) {
            return Err(Error::dtype(
                OP,
                format!(
                    "all operands must have one dtype, got {dtype} and {} in \"{equation}\"",
                    t.dtype()
                ),
            ));
        }
        let (lhs, rhs) = match equation.find("->") {
            Some(p) => (&equation[..p], Some((&equation[p + 2..], p + 2))),
            None => (equation, None),
        };
        let inputs = parse_terms(equation, lhs, 0, 0)?;
        if inputs.len() != operands.len() {
            let which = if inputs.len() < operands.len() {
                "more"
            } else {
                "fewer"
            };
            return Err(Error::invalid(
                OP,
                format!(
                    "{which} operands were provided ({}) than specified in the equation \"{equation}\" ({})",
                    operands.len(),
                    inputs.len()
                ),
            ));
        }

        // The space: ellipsis width, then the letters in order of first appearance.
        let mut ell = 0;
        let mut space = Space {
            ell: 0,
            letter_dim: [None; 52],
            ndim: 0,
        };
        let mut letters = Vec::new();
        let mut counts = [0usize; 52];
        for (i, (sub, x)) in inputs.iter().zip(operands).enumerate() {
            let named = sub.labels.len() - usize::from(sub.has_ellipsis);
            if (!sub.has_ellipsis && named != x.ndim()) || named > x.ndim() {
                return Err(Error::shape(
                    OP,
                    format!(
                        "the number of subscripts in the equation ({named}) does not match the \
                         number of dimensions ({}) of operand {i} (shape {:?}){} in \"{equation}\"",
                        x.ndim(),
                        x.shape(),
                        if sub.has_ellipsis {
                            ""
                        } else {
                            " and no ellipsis was given"
                        }
                    ),
                ));
            }
            if sub.has_ellipsis {
                ell = ell.max(x.ndim() - named);
            }
            for l in &sub.labels {
                if let Label::Letter(id) = *l {
                    if counts[id] == 0 {
                        letters.push(id);
                    }
                    counts[id] += 1;
                }
            }
        }
        space.ell = ell;
        for (k, &id) in letters.iter().enumerate() {
            space.letter_dim[id] = Some(ell + k);
        }
        space.ndim = ell + letters.len();

        // The output dims, in order.
        let out_dims: Vec<usize> = match rhs {
            Some((rhs, pos)) => {
                let terms = parse_terms(equation, rhs, 0, pos)?;
                if terms.len() != 1 {
                    return Err(Error::invalid(
                        OP,
                        format!("the output subscripts of \"{equation}\" contain a ','"),
                    ));
                }
                let mut dims = Vec::new();
                let mut seen = [false; 52];
                for l in &terms[0].labels {
                    match *l {
                        Label::Ellipsis => dims.extend(0..ell),
                        Label::Letter(id) => {
                            if std::mem::replace(&mut seen[id], true) {
                                return Err(Error::invalid(
                                    OP,
                                    format!(
                                        "output subscript {} appears more than once in \"{equation}\"",
                                        label_char(id)
                                    ),
                                ));
                            }
                            let Some(d) = space.letter_dim[id] else {
                                return Err(Error::invalid(
                                    OP,
                                    format!(
                                        "output subscript {} does not appear in the equation \
                                         for any input operand in \"{equation}\"",
                                        label_char(id)
                                    ),
                                ));
                            };
                            dims.push(d);
                        }
                    }
                }
                dims
            }
            None => {
                let mut dims: Vec<usize> = (0..ell).collect();
                let mut once: Vec<usize> = (0..52).filter(|&id| counts[id] == 1).collect();
                once.sort_unstable();
                dims.extend(once.iter().map(|&id| space.letter_dim[id].expect("seen")));
                dims
            }
        };

        // Every operand in the full space; sizes must broadcast dim by dim.
        let mut aligned = Vec::with_capacity(operands.len());
        for (i, (sub, x)) in inputs.iter().zip(operands).enumerate() {
            aligned.push(align(equation, i, sub, x, &space)?);
        }
        let mut sizes = vec![1usize; space.ndim];
        for (i, t) in aligned.iter().enumerate() {
            for (d, &n) in t.shape().iter().enumerate() {
                if n == 1 {
                    continue;
                }
                if sizes[d] != 1 && sizes[d] != n {
                    let what = if d < ell {
                        format!("ellipsis dim {d}")
                    } else {
                        let id = (0..52).find(|&id| space.letter_dim[id] == Some(d));
                        format!("subscript {}", label_char(id.expect("a letter's dim")))
                    };
                    return Err(Error::shape(
                        OP,
                        format!(
                            "{what} has size {n} for operand {i} which does not broadcast with \
                             previously seen size {} in \"{equation}\"",
                            sizes[d]
                        ),
                    ));
                }
                sizes[d] = n;
            }
        }

        let in_out = |d: usize| out_dims.contains(&d);
        let present = |t: &Tensor, d: usize| t.shape()[d] != 1;
        // Left to right; before each step, a dim only one side has and nobody needs later is
        // summed on that side.
        let mut result = aligned[0].clone();
        for j in 1..aligned.len() {
            let needed_after =
                |d: usize| in_out(d) || aligned[j + 1..].iter().any(|t| present(t, d));
            let other = &aligned[j];
            let sum_dims: Vec<usize> = (0..space.ndim).filter(|&d| !needed_after(d)).collect();
            result = sumproduct_pair(&result, other, &sum_dims)?;
        }
        // What is left to sum (single operand, or dims that only the last step kept).
        let rest: Vec<usize> = (0..space.ndim)
            .filter(|&d| !in_out(d) && present(&result, d))
            .collect();
        if !rest.is_empty() {
            result = result.sum(&rest, true)?;
        }
        // Output order: the output dims, then the (size 1) rest, which the reshape drops.
        let mut perm: Vec<usize> = out_dims.to_vec();
        perm.extend((0..space.ndim).filter(|&d| !in_out(d)));
        let shape: Vec<usize> = out_dims.iter().map(|&d| result.shape()[d]).collect();
        result.permute(&perm)?.reshape(&shape)
    }
}

/// Operand `i` in the full space: diagonals for repeated letters, dims permuted to the space's
/// order, absent dims (and missing leading ellipsis dims) of size 1.
fn align(eq: &str, i: usize, sub: &Subscripts, x: &Tensor, space: &Space) -> Result<Tensor> {
    // The space dim of each of x's dims.
    let named = sub.labels.len() - usize::from(sub.has_ellipsis);
    let e = x.ndim() - named;
    let mut dims = Vec::with_capacity(x.ndim());
    for l in &sub.labels {
        match *l {
            Label::Ellipsis => dims.extend(space.ell - e..space.ell),
            Label::Letter(id) => dims.push(space.letter_dim[id].expect("every letter has a dim")),
        }
    }
    // Repeated letters: take the diagonal (which moves to the end) until each dim is unique.
    let mut t = x.clone();
    let repeated = |dims: &[usize]| {
        (0..dims.len())
            .flat_map(|a| (a + 1..dims.len()).map(move |b| (a, b)))
            .find(|&(a, b)| dims[a] == dims[b])
    };
    while let Some((a, b)) = repeated(&dims) {
        let (na, nb) = (t.shape()[a], t.shape()[b]);
        if na != nb {
            let id = (0..52).find(|&id| space.letter_dim[id] == Some(dims[a]));
            return Err(Error::shape(
                OP,
                format!(
                    "subscript {} is repeated for operand {i} but the sizes don't match, {nb} != \
                     {na} in \"{eq}\"",
                    label_char(id.expect("a repeated letter"))
                ),
            ));
        }
        t = t.diagonal(0, a, b)?;
        let d = dims[a];
        dims.remove(b);
        dims.remove(a);
        dims.push(d);
    }
    // Permute to the space's order and insert the absent dims.
    let mut order: Vec<usize> = (0..dims.len()).collect();
    order.sort_by_key(|&k| dims[k]);
    let t = t.permute(&order)?;
    let mut shape = vec![1; space.ndim];
    for (p, &k) in order.iter().enumerate() {
        shape[dims[k]] = t.shape()[p];
    }
    t.reshape(&shape)
}

/// The product of `a` and `b` (both in the full space) summed over `sum_dims`: dims that both
/// have and that are summed go through `bmm` as its inner dim; dims that both keep are its
/// batch; the result stays in the full space with the summed dims of size 1.
fn sumproduct_pair(a: &Tensor, b: &Tensor, sum_dims: &[usize]) -> Result<Tensor> {
    let ndim = a.ndim();
    let has = |t: &Tensor, d: usize| t.shape()[d] != 1;
    // Summed dims on one side only are summed there first.
    let only = |x: &Tensor, y: &Tensor| -> Vec<usize> {
        sum_dims
            .iter()
            .copied()
            .filter(|&d| has(x, d) && !has(y, d))
            .collect()
    };
    let (sa, sb) = (only(a, b), only(b, a));
    let a = if sa.is_empty() {
        a.clone()
    } else {
        a.sum(&sa, true)?
    };
    let b = if sb.is_empty() {
        b.clone()
    } else {
        b.sum(&sb, true)?
    };
    let (mut batch, mut left, mut right, mut contract, mut ones) =
        (vec![], vec![], vec![], vec![], vec![]);
    for d in 0..ndim {
        match (has(&a, d), has(&b, d), sum_dims.contains(&d)) {
            (true, true, true) => contract.push(d),
            (true, true, false) => batch.push(d),
            (true, false, _) => left.push(d),
            (false, true, _) => right.push(d),
            (false, false, _) => ones.push(d),
        }
    }
    if contract.is_empty() {
        // No inner dim: a broadcast product is the whole job.
        return a.mul(&b);
    }
    let size = |t: &Tensor, ds: &[usize]| ds.iter().map(|&d| t.shape()[d]).product::<usize>();
    let dims = |parts: &[&[usize]]| -> Vec<usize> { parts.concat() };
    let (nb, m, k, n) = (
        size(&a, &batch),
        size(&a, &left),
        size(&a, &contract),
        size(&b, &right),
    );
    // a: (batch, left, contract) and b: (batch, contract, right); every other dim is size 1.
    let a3 = a
        .permute(&dims(&[&batch, &left, &contract, &right, &ones]))?
        .reshape(&[nb, m, k])?;
    let b3 = b
        .permute(&dims(&[&batch, &contract, &right, &left, &ones]))?
        .reshape(&[nb, k, n])?;
    let prod = a3.bmm(&b3)?;
    // Back to the full space: (batch, left, right) sizes, then the size-1 dims, permuted home.
    let order = dims(&[&batch, &left, &right, &contract, &ones]);
    let mut shape: Vec<usize> = Vec::with_capacity(ndim);
    for &d in &batch {
        shape.push(a.shape()[d]);
    }
    for &d in &left {
        shape.push(a.shape()[d]);
    }
    for &d in &right {
        shape.push(b.shape()[d]);
    }
    shape.resize(ndim, 1);
    prod.reshape(&shape)?
        .permute(&inverse_permutation(order.iter().copied()))
}
