"""``torch.utils._pytree``: flatten nested lists, tuples, dicts and namedtuples of values into
a list of leaves and a ``TreeSpec`` that rebuilds the structure (None is a node with no
children, as in PyTorch)."""

from collections import OrderedDict


class TreeSpec:
    """The structure of a pytree: its node type, context (dict keys, namedtuple class) and
    the specs of its children; a leaf is ``LeafSpec``."""

    def __init__(self, type, context, children_specs):
        self.type, self.context, self.children_specs = type, context, list(children_specs)
        self.num_leaves = sum(c.num_leaves for c in self.children_specs)

    def is_leaf(self):
        """Whether this spec stands for one leaf."""
        return False

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and self.type is other.type
                and self.context == other.context and self.children_specs == other.children_specs)

    def __repr__(self):
        return f"TreeSpec({self.type.__name__}, {self.context}, {self.children_specs})"


class LeafSpec(TreeSpec):
    """The spec of a leaf."""

    def __init__(self):
        super().__init__(None, None, [])
        self.num_leaves = 1

    def is_leaf(self):
        """A leaf: True."""
        return True

    def __eq__(self, other):
        return isinstance(other, LeafSpec)

    def __repr__(self):
        return "*"


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _children(tree):
    """(type, context, children) of a container node, or None for a leaf."""
    if tree is None:
        return type(None), None, []
    if _is_namedtuple(tree):
        return tuple, type(tree), list(tree)
    if isinstance(tree, (list, tuple)):
        return type(tree), None, list(tree)
    if isinstance(tree, dict):
        keys = list(tree)
        return type(tree), keys, [tree[k] for k in keys]
    return None


def tree_flatten(tree, is_leaf=None):
    """``(leaves, spec)``: the leaves of ``tree`` in order and the spec that
    ``tree_unflatten`` rebuilds it from."""
    if is_leaf is not None and is_leaf(tree):
        return [tree], LeafSpec()
    node = _children(tree)
    if node is None:
        return [tree], LeafSpec()
    node_type, context, children = node
    leaves, specs = [], []
    for child in children:
        child_leaves, child_spec = tree_flatten(child, is_leaf)
        leaves += child_leaves
        specs.append(child_spec)
    return leaves, TreeSpec(node_type, context, specs)


def tree_unflatten(leaves, treespec):
    """The tree of ``treespec`` with ``leaves`` in place of its leaves."""
    leaves = list(leaves)
    if len(leaves) != treespec.num_leaves:
        raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the "
                         f"spec refers to a pytree that holds {treespec.num_leaves} items "
                         f"({treespec}).")
    return _build(iter(leaves), treespec)


def _build(leaves, spec):
    if spec.is_leaf():
        return next(leaves)
    children = [_build(leaves, c) for c in spec.children_specs]
    if spec.type is type(None):
        return None
    if spec.type is tuple and spec.context is not None:
        return spec.context(*children)
    if issubclass(spec.type, dict):
        pairs = zip(spec.context, children)
        return OrderedDict(pairs) if spec.type is OrderedDict else spec.type(pairs)
    return spec.type(children)


def tree_leaves(tree, is_leaf=None):
    """The leaves of ``tree`` in order."""
    return tree_flatten(tree, is_leaf)[0]


def tree_map(fn, tree, is_leaf=None):
    """``tree`` with ``fn`` applied to every leaf."""
    leaves, spec = tree_flatten(tree, is_leaf)
    return tree_unflatten([fn(x) for x in leaves], spec)
