//! The backward pass: an iterative topological sort of the graph below a tensor, then one
//! sweep that runs each node's rule and accumulates gradients, writing `.grad` of leaves.

use super::grad_mode::set_grad_enabled;
use super::trace;
use crate::backend::BinaryOp;
use crate::error::{Error, Result};
use crate::tensor::node::Node;
use crate::tensor::{Device, Layout, Tensor, TensorId};
use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::sync::Arc;
use std::time::Instant;

/// A node's identity in one sweep. Non-leaf gradients are keyed by node, not by tensor: an
/// in-place op gives a tensor a new node (history rebase) while the nodes recorded before
/// still point at its old one, and both may be in one graph.
type NodeKey = usize;

fn key(node: &Arc<Node>) -> NodeKey {
    Arc::as_ptr(node) as usize
}

/// One node of the graph as the sweep sees it: the node and a tensor that holds (or held)
/// it, for its hooks, id and gradient capture.
struct GraphNode {
    tensor: Tensor,
    node: Arc<Node>,
}

impl GraphNode {
    /// True when `node` is still `tensor`'s current node: the tensor's hooks and captured
    /// gradient belong to its current version, not to a version an in-place op replaced.
    fn is_current(&self) -> bool {
        self.tensor
            .node()
            .is_some_and(|n| Arc::ptr_eq(&n, &self.node))
    }
}

/// The nodes reachable from `root`, each before every node it was computed from.
/// Iterative depth-first search, so that depth is bounded by memory, not by the stack.
fn topo_order(root: &Tensor) -> Vec<GraphNode> {
    let mut order = Vec::new();
    let Some(root_node) = root.node() else {
        return order;
    };
    let mut visited: HashSet<NodeKey> = HashSet::from([key(&root_node)]);
    let mut stack: Vec<(GraphNode, usize)> = vec![(
        GraphNode {
            tensor: root.clone(),
            node: root_node,
        },
        0,
    )];
    while let Some((g, next)) = stack.last_mut() {
        let i = *next;
        if i < g.node.inputs.len() {
            *next += 1;
            if let Some(child) = &g.node.input_nodes[i] {
                if visited.insert(key(child)) {
                    let child = GraphNode {
                        tensor: g.node.inputs[i].clone(),
                        node: child.clone(),
                    };
                    stack.push((child, 0));
                }
            }
        } else {
            order.push(stack.pop().expect("non-empty").0);
        }
    }
    order.reverse();
    order
}

fn accumulate<K: Hash + Eq>(
    map: &mut HashMap<K, (Tensor, Tensor)>,
    k: K,
    target: &Tensor,
    grad: Tensor,
) -> Result<()> {
    match map.remove(&k) {
        Some((t, g)) => {
            map.insert(k, (t, g.add(&grad)?));
        }
        None => {
            map.insert(k, (target.clone(), grad));
        }
    }
    Ok(())
}

/// `grad[part] += g` in place on the gradient already waiting for `input` (a view's input,
/// `part` the view's place in it), when there is one that nothing else holds, of `g`'s dtype
/// and device; `Ok(false)`, nothing done, otherwise.
fn add_into_part<K: Hash + Eq>(
    map: &mut HashMap<K, (Tensor, Tensor)>,
    k: K,
    part: &Layout,
    g: &Tensor,
) -> Result<bool> {
    let Some((_, grad)) = map.get(&k) else {
        return Ok(false);
    };
    if !grad.owns_whole_storage() || grad.dtype() != g.dtype() || grad.device() != g.device() {
        return Ok(false);
    }
    grad.storage_mut()
        .binary_inplace(part, &g.storage(), g.layout(), BinaryOp::Add)?;
    Ok(true)
}

/// The checks PyTorch makes on a gradient given to `backward` for a tensor, each as
/// (shape, device): the same shape, and the same device (a CPU gradient for a CUDA output
/// would otherwise mix devices deep inside a backward rule, or land on a CUDA leaf as is).
fn check_given_gradient(tensor: (&[usize], Device), grad: (&[usize], Device)) -> Result<()> {
    if grad.0 != tensor.0 {
        return Err(Error::shape(
            "backward",
            format!(
                "gradient has shape {:?} but the tensor has shape {:?}",
                grad.0, tensor.0
            ),
        ));
    }
    if grad.1 != tensor.1 {
        // PyTorch: "invalid gradient - expected device cuda:0 but got cpu".
        return Err(Error::Device {
            op: "backward (the tensor, then its gradient)",
            lhs: tensor.1,
            rhs: grad.1,
        });
    }
    Ok(())
}

/// How a backward pass runs (the keyword arguments of `torch.autograd.backward`/`grad`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BackwardOptions {
    /// Keep the graph for another pass; `None` means "as `create_graph`" (PyTorch's default).
    pub retain_graph: Option<bool>,
    /// Record the backward pass itself, so that the gradients are differentiable (higher-order
    /// gradients: Hessian-vector products, gradient penalties).
    pub create_graph: bool,
}

impl BackwardOptions {
    /// Options with `create_graph` on (and so the graph retained).
    pub fn create_graph() -> Self {
        BackwardOptions {
            retain_graph: None,
            create_graph: true,
        }
    }

    fn retain(&self) -> bool {
        self.retain_graph.unwrap_or(self.create_graph)
    }
}

/// Run backward from `root` with upstream gradient `grad` (required unless `root` has one
/// element). Leaves' `.grad` accumulate; the graph is freed unless `retain_graph`.
pub fn backward(root: &Tensor, grad: Option<&Tensor>, retain_graph: bool) -> Result<()> {
    let options = BackwardOptions {
        retain_graph: Some(retain_graph),
        create_graph: false,
    };
    sweep(root, grad, options, None).map(drop)
}

/// [`backward`] with [`BackwardOptions`] (`loss.backward(create_graph=True)`): with
/// `create_graph`, leaves' `.grad` become graph tensors that can be differentiated again.
pub fn backward_with_options(
    root: &Tensor,
    grad: Option<&Tensor>,
    options: BackwardOptions,
) -> Result<()> {
    sweep(root, grad, options, None).map(drop)
}

/// The gradients of `root` with respect to each of `inputs` (leaves or not), with upstream
/// gradient `grad` (`torch.autograd.grad`): returned instead of accumulated, so no `.grad`
/// changes. `None` for an input the graph does not reach; the graph is freed unless
/// `retain_graph`.
pub fn grad(
    root: &Tensor,
    grad: Option<&Tensor>,
    inputs: &[Tensor],
    retain_graph: bool,
) -> Result<Vec<Option<Tensor>>> {
    let options = BackwardOptions {
        retain_graph: Some(retain_graph),
        create_graph: false,
    };
    grad_with_options(root, grad, inputs, options)
}

/// [`grad`] with [`BackwardOptions`] (`torch.autograd.grad(..., create_graph=True)`): with
/// `create_graph`, the returned gradients are graph tensors that can be differentiated again.
pub fn grad_with_options(
    root: &Tensor,
    grad: Option<&Tensor>,
    inputs: &[Tensor],
    options: BackwardOptions,
) -> Result<Vec<Option<Tensor>>> {
    if let Some(i) = inputs.iter().position(|t| !t.requires_grad()) {
        return Err(Error::Autograd(format!(
            "grad: input {i} does not require grad (shape {:?})",
            inputs[i].shape()
        )));
    }
    let wanted: HashSet<TensorId> = inputs.iter().map(Tensor::id).collect();
    let mut got = sweep(root, grad, options, Some(&wanted))?;
    Ok(inputs.iter().map(|t| got.remove(&t.id())).collect())
}

/// [`backward`] and [`grad`]: check the upstream gradient, sort the graph, run the rules;
/// with `capture`, return the gradients of those tensors instead of writing leaves' `.grad`.
fn sweep(
    root: &Tensor,
    grad: Option<&Tensor>,
    options: BackwardOptions,
    capture: Option<&HashSet<TensorId>>,
) -> Result<HashMap<TensorId, Tensor>> {
    if !root.requires_grad() {
        return Err(Error::Autograd(
            "backward: element 0 of tensors does not require grad and does not have a grad_fn"
                .into(),
        ));
    }
    let grad = match grad {
        Some(g) => {
            check_given_gradient((root.shape(), root.device()), (g.shape(), g.device()))?;
            // With create_graph, the result is differentiable w.r.t. the given gradient too.
            if options.create_graph {
                g.clone()
            } else {
                g.detach()
            }
        }
        None => {
            if root.numel() != 1 {
                return Err(Error::Autograd(format!(
                    "backward: grad can be implicitly created only for scalar outputs (got shape {:?})",
                    root.shape()
                )));
            }
            root.ones_like()?
        }
    };
    let order = topo_order(root);
    if root.device().is_cpu() && order.len() >= MIN_NODES_TO_MOVE {
        // Many kernels in a row: all of them run on a compute thread (`parallel::run`).
        crate::parallel::run(|| run_graph(root, grad, options, &order, capture))
    } else {
        run_graph(root, grad, options, &order, capture)
    }
}

/// Graphs of at least this many nodes run their backward on a compute thread. Moving there
/// costs one hand-off (tens of microseconds on a busy machine), as much as a tiny graph's
/// whole backward: cross-entropy alone (one node, 1024 x 63) took twice as long moved.
const MIN_NODES_TO_MOVE: usize = 4;

/// The sweep of [`backward`] from `root` with its (checked) upstream gradient `grad`, over
/// the graph's nodes in topological `order`; see [`sweep`] for `capture`.
fn run_graph(
    root: &Tensor,
    grad: Tensor,
    options: BackwardOptions,
    order: &[GraphNode],
    capture: Option<&HashSet<TensorId>>,
) -> Result<HashMap<TensorId, Tensor>> {
    let mut captured = HashMap::new();
    // The rules are tensor ops: with create_graph they record the backward pass itself.
    let _guard = set_grad_enabled(options.create_graph);
    let retain_graph = options.retain();
    // Gradients waiting for a non-leaf tensor, and gradients reaching leaves.
    let mut pending: HashMap<NodeKey, (Tensor, Tensor)> = HashMap::new();
    let mut leaves: HashMap<TensorId, (Tensor, Tensor)> = HashMap::new();
    match root.node() {
        None => {
            leaves.insert(root.id(), (root.clone(), grad));
        }
        Some(node) => {
            pending.insert(key(&node), (root.clone(), grad));
        }
    }
    // Leaves with post-accumulate-grad hooks get their `.grad` (and run the hooks) as soon
    // as their last contributing node has run; the others at the end.
    let mut hooked = match capture {
        None => HookedLeaves::new(order),
        Some(_) => HookedLeaves::default(),
    };
    for t in order {
        let sums = Sums {
            pending: &mut pending,
            leaves: &mut leaves,
            captured: &mut captured,
        };
        run_node(t, sums, capture, retain_graph)?;
        hooked.node_done(t, &mut leaves)?;
    }
    if let Some(c) = capture {
        for (id, (leaf, g)) in leaves {
            if c.contains(&id) {
                captured.insert(id, hooked_gradient(&leaf, g)?);
            }
        }
        return Ok(captured);
    }
    for (_, (leaf, g)) in leaves {
        finish_leaf(&leaf, g)?;
    }
    Ok(captured)
}

/// `g` after the tensor hooks of `t` (`Tensor::register_hook`, `retain_grad`), if any.
fn hooked_gradient(t: &Tensor, g: Tensor) -> Result<Tensor> {
    if t.has_tensor_hooks() {
        t.apply_grad_hooks(g)
    } else {
        Ok(g)
    }
}

/// The complete gradient `g` of `leaf`: through its tensor hooks, into `.grad`, then its
/// post-accumulate-grad hooks.
fn finish_leaf(leaf: &Tensor, g: Tensor) -> Result<()> {
    let g = hooked_gradient(leaf, g)?;
    accumulate_into_grad(leaf, g)?;
    if leaf.has_grad_hooks() {
        leaf.run_grad_hooks()?;
    }
    Ok(())
}

/// `leaf.grad += g` (PyTorch's AccumulateGrad). Under create_graph (grad mode on) the sum
/// is recorded, so `.grad` is differentiable.
fn accumulate_into_grad(leaf: &Tensor, g: Tensor) -> Result<()> {
    let new = match leaf.grad() {
        Some(old) => old.add(&g)?,
        // A gradient nobody else holds becomes .grad as it is (PyTorch's AccumulateGrad
        // steals it too); a shared one is copied, so that later in-place updates of .grad
        // never alias a tensor that something else still holds (the upstream gradient
        // passed to backward_with, or one buffer returned for two inputs).
        None if g.owns_whole_storage() => g.into_buffer(),
        None => g.contiguous_copy()?,
    };
    leaf.set_grad(Some(new));
    Ok(())
}

/// The gradient maps of one backward sweep: waiting for non-leaf tensors, reaching leaves,
/// and captured for [`grad`].
struct Sums<'a> {
    pending: &'a mut HashMap<NodeKey, (Tensor, Tensor)>,
    leaves: &'a mut HashMap<TensorId, (Tensor, Tensor)>,
    captured: &'a mut HashMap<TensorId, Tensor>,
}

/// Run the backward rule of `t`'s node on the gradient waiting for `t` (if any), adding
/// what it returns to the gradients of its inputs.
fn run_node(
    gn: &GraphNode,
    sums: Sums<'_>,
    capture: Option<&HashSet<TensorId>>,
    retain_graph: bool,
) -> Result<()> {
    let Sums {
        pending,
        leaves,
        captured,
    } = sums;
    let (t, node) = (&gn.tensor, &gn.node);
    let Some((_, g)) = pending.remove(&key(node)) else {
        return Ok(());
    };
    // Hooks and captures belong to the tensor's current version (see `is_current`).
    let current = gn.is_current();
    let g = if current { hooked_gradient(t, g)? } else { g };
    // A non-leaf's gradient is complete when its node comes up. (The clone also keeps
    // the in-place part adds off this buffer.)
    if current && capture.is_some_and(|c| c.contains(&t.id())) {
        captured.insert(t.id(), g.clone());
    }
    let started = trace::is_active().then(Instant::now);
    if let (Some(part), [input]) = (&node.part, node.inputs.as_slice()) {
        // In place only outside create_graph: there the gradients are graph tensors.
        let added = node.input_needs_grad(0)
            && node.has_rule()
            && !super::is_grad_enabled()
            && match &node.input_nodes[0] {
                None => add_into_part(leaves, input.id(), part, &g)?,
                Some(n) => add_into_part(pending, key(n), part, &g)?,
            };
        if added {
            if !retain_graph {
                node.release();
            }
            if let Some(started) = started {
                trace::backward_op(t.id(), started.elapsed());
            }
            return Ok(());
        }
    }
    let needs: Vec<bool> = (0..node.inputs.len())
        .map(|i| node.input_needs_grad(i))
        .collect();
    let grads = {
        let rule = node.backward.lock().unwrap_or_else(|e| e.into_inner());
        let rule = rule.as_ref().ok_or_else(|| {
            Error::Autograd(format!(
                "backward: trying to backward through the graph a second time (through {}); \
                 the saved tensors were freed after the first call; use retain_graph=true",
                node.name
            ))
        })?;
        rule(&g, &needs)?
    };
    if let Some(started) = started {
        trace::backward_op(t.id(), started.elapsed());
    }
    if !retain_graph {
        node.release();
    }
    if grads.len() != node.inputs.len() {
        return Err(Error::Autograd(format!(
            "backward of {} returned {} gradients for {} inputs",
            node.name,
            grads.len(),
            node.inputs.len()
        )));
    }
    for (((input, input_node), grad), need) in node
        .inputs
        .iter()
        .zip(&node.input_nodes)
        .zip(grads)
        .zip(needs)
    {
        let Some(grad) = grad else { continue };
        if !need {
            continue;
        }
        if grad.shape() != input.shape() || grad.device() != input.device() {
            return Err(Error::Autograd(format!(
                "backward of {} returned a gradient of shape {:?} on {} for an input of shape {:?} on {}",
                node.name,
                grad.shape(),
                grad.device(),
                input.shape(),
                input.device()
            )));
        }
        let grad = if grad.dtype() != input.dtype() {
            grad.to_dtype(input.dtype())?
        } else {
            grad
        };
        match input_node {
            None => accumulate(leaves, input.id(), input, grad)?,
            Some(n) => accumulate(pending, key(n), input, grad)?,
        }
    }
    Ok(())
}

/// The leaves with post-accumulate-grad hooks that a sweep reaches, each with the number of
/// nodes still to run that have it as an input.
#[derive(Default)]
struct HookedLeaves {
    remaining: HashMap<TensorId, usize>,
}

impl HookedLeaves {
    fn new(order: &[GraphNode]) -> Self {
        let mut remaining = HashMap::new();
        for t in order {
            for leaf in Self::hooked_inputs(&t.node) {
                *remaining.entry(leaf.id()).or_insert(0) += 1;
            }
        }
        HookedLeaves { remaining }
    }

    /// The distinct leaf inputs of `t`'s node that have hooks.
    fn hooked_inputs(node: &Node) -> Vec<&Tensor> {
        let mut seen: Vec<&Tensor> = Vec::new();
        for (i, n) in node.inputs.iter().zip(&node.input_nodes) {
            if n.is_none()
                && i.is_leaf()
                && i.has_grad_hooks()
                && !seen.iter().any(|s| s.id() == i.id())
            {
                seen.push(i);
            }
        }
        seen
    }

    /// After `t`'s node ran (or had no gradient to run on): the leaves it was the last
    /// contributor to get their `.grad` and run their hooks.
    fn node_done(
        &mut self,
        t: &GraphNode,
        leaves: &mut HashMap<TensorId, (Tensor, Tensor)>,
    ) -> Result<()> {
        if self.remaining.is_empty() {
            return Ok(());
        }
        for leaf in Self::hooked_inputs(&t.node) {
            let Some(n) = self.remaining.get_mut(&leaf.id()) else {
                continue;
            };
            *n -= 1;
            if *n == 0 {
                self.remaining.remove(&leaf.id());
                if let Some((leaf, g)) = leaves.remove(&leaf.id()) {
                    finish_leaf(&leaf, g)?;
                }
            }
        }
        Ok(())
    }
}

impl Tensor {
    /// Backpropagate from this one-element tensor (`loss.backward()`), freeing the graph.
    pub fn backward(&self) -> Result<()> {
        backward(self, None, false)
    }

    /// Backpropagate with an explicit upstream gradient (for non-scalar outputs) and
    /// optionally keep the graph for another backward pass.
    pub fn backward_with(&self, grad: Option<&Tensor>, retain_graph: bool) -> Result<()> {
        backward(self, grad, retain_graph)
    }

    /// Backpropagate with [`BackwardOptions`] (`loss.backward(create_graph=True)`).
    pub fn backward_with_options(
        &self,
        grad: Option<&Tensor>,
        options: BackwardOptions,
    ) -> Result<()> {
        backward_with_options(self, grad, options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The device check runs without a GPU: it compares device values only.
    #[test]
    fn a_given_gradient_must_match_the_tensors_shape_and_device() {
        let cpu = Device::Cpu;
        let cuda = Device::Cuda(0);
        assert!(check_given_gradient((&[2, 3], cuda), (&[2, 3], cuda)).is_ok());
        let e = check_given_gradient((&[2, 3], cuda), (&[2, 3], cpu)).unwrap_err();
        assert!(matches!(e, Error::Device { .. }), "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains("backward") && msg.contains("cuda:0") && msg.contains("cpu"),
            "{msg}"
        );
        let e = check_given_gradient((&[2, 3], cpu), (&[3, 2], cpu)).unwrap_err();
        assert!(matches!(e, Error::Shape { .. }), "{e}");
    }
}
