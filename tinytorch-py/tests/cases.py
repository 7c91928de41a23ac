"""Expressions evaluated with PyTorch (scripts/fixtures/gen_py_fixtures.py) and with TinyTorch
(test_ops.py), written once here so the two sides cannot drift. Each is Python source over
the inputs of ``inputs(torch)``; ``torch`` is either module. Float inputs require grad: where
PyTorch differentiates an expression, its input gradients are compared too."""

# (name, expression)
CASES = [
    # arithmetic, broadcasting, scalars and promotion
    ("add", "x + y"), ("add_alpha", "torch.add(x, y, alpha=2)"), ("sub_scalar", "x - 1.5"),
    ("rsub", "2 - x"), ("mul_bcast", "x * y"), ("div", "x / (y.abs() + 1)"),
    ("rdiv", "1 / (x.abs() + 1)"), ("pow_scalar", "x.abs() ** 1.5"), ("rpow", "2 ** x"),
    ("pow_tensor", "(x.abs() + 1) ** y"), ("neg", "-x"), ("int_times_float", "i * 2.5"),
    ("int_times_int", "i * 3"), ("int_div", "i / 2"), ("floordiv", "i // 3"),
    ("f32_plus_f64_0d", "x + torch.tensor(1.5, dtype=torch.float64)"),
    ("int_plus_float_0d", "i + torch.tensor(0.5)"), ("bool_plus_int", "m + 1"),
    ("matmul", "x @ w"), ("matmul_vec", "x @ y"), ("mm", "torch.mm(x, w)"),
    ("bmm", "torch.bmm(b3, b3.transpose(1, 2))"),
    # elementwise functions
    ("exp", "x.exp()"), ("log", "(x.abs() + 0.5).log()"), ("sqrt", "x.abs().sqrt()"),
    ("tanh", "torch.tanh(x)"), ("sigmoid", "x.sigmoid()"), ("relu", "torch.relu(x)"),
    ("clamp", "x.clamp(-0.5, 0.5)"), ("clamp_min", "x.clamp(min=0.1)"),
    ("clamp_tensor", "x.clamp(min=y)"), ("abs", "x.abs()"), ("sin", "torch.sin(x)"),
    ("round", "(x * 3).round()"), ("maximum", "torch.maximum(x, y)"),
    # reductions
    ("sum", "x.sum()"), ("sum_dim", "x.sum(1)"), ("sum_keep", "x.sum(dim=0, keepdim=True)"),
    ("sum_dims", "b3.sum((0, 2))"), ("mean", "x.mean(-1)"), ("prod", "y.prod()"),
    ("max", "x.max()"), ("max_dim", "x.max(1).values"), ("max_dim_idx", "x.max(dim=1)[1]"),
    ("min_dim", "x.min(0).values"), ("argmax", "x.argmax(1)"), ("amax", "x.amax(1)"),
    ("var", "x.var(1)"), ("std_unbiased_false", "x.std(unbiased=False)"),
    ("var_correction", "x.var(0, correction=0)"), ("logsumexp", "x.logsumexp(1)"),
    ("norm", "x.norm()"), ("norm_p1", "x.norm(1, dim=1)"), ("softmax", "x.softmax(-1)"),
    ("log_softmax", "torch.log_softmax(x, dim=0)"), ("cumsum", "x.cumsum(1)"),
    ("all", "m.all()"), ("any_dim", "m.any(1)"),
    # shapes and views
    ("view", "x.view(2, 6)"), ("reshape_infer", "x.reshape(-1, 2)"), ("t", "x.t()"),
    ("T", "b3.T"), ("permute", "b3.permute(2, 0, 1)"), ("transpose", "b3.transpose(0, 2)"),
    ("unsqueeze", "y.unsqueeze(0)"), ("squeeze", "x.unsqueeze(1).squeeze()"),
    ("flatten", "b3.flatten(1)"), ("expand", "y.expand(3, 4)"), ("repeat", "y.repeat(2, 1)"),
    ("cat", "torch.cat([x, x * 2], dim=1)"), ("stack", "torch.stack([y, y + 1])"),
    ("chunk0", "x.chunk(2, 1)[0]"), ("split1", "x.split([1, 3], dim=1)[1]"),
    ("flip", "x.flip(0)"), ("roll", "x.roll(1, 1)"), ("tril", "x.tril()"),
    ("narrow", "x.narrow(1, 1, 2)"),
    # indexing
    ("getitem_int", "x[1]"), ("getitem_neg", "x[-1, -2]"), ("getitem_slice", "x[:, 1:3]"),
    ("getitem_step", "x[::2, ::3]"), ("getitem_none", "x[None, 1]"),
    ("getitem_ellipsis", "b3[..., 0]"), ("getitem_mask", "x[x > 0]"),
    ("getitem_list", "x[[2, 0]]"), ("getitem_tensor", "x[:, i[0].abs() % 4]"),
    ("getitem_row_mask", "x[m[:, 0]]"), ("index_select", "x.index_select(1, i[0].abs() % 4)"),
    # several advanced indices: broadcast together, in place when adjacent, else first
    ("getitem_two_lists", "x[[0, 2, 2], [1, -1, 1]]"),
    ("getitem_broadcast_lists", "b3[[[0], [1]], [1, 0], 2]"),
    ("getitem_split_lists", "b3[[1, 0], :, [2, -3]]"),
    ("getitem_int_between_lists", "b3[[1, 0], 1, [2, 0]]"),
    ("getitem_newaxis_between", "x[[0, 2], None, [1, 3]]"),
    ("getitem_mask_and_list", "x[torch.tensor([True, False, True]), [3, 0]]"),
    ("getitem_tensor_pair", "x[i[0].abs() % 3, i[1].abs() % 4]"),
    ("gather", "x.gather(1, (i.abs() % 4)[:, :2])"), ("masked_fill", "x.masked_fill(m, -1.0)"),
    ("where", "torch.where(m, x, 0.0)"), ("where_tensors", "torch.where(x > 0, x, y)"),
    ("topk", "x.topk(2).values"), ("sort", "x.sort(1, descending=True).values"),
    ("argsort", "x.argsort(0)"),
    # einsum, diagonal and nn.functional's resampling, pooling and pixel shuffles
    ("einsum_mm", "torch.einsum('ij,jk->ik', x, w)"),
    ("einsum_list", "torch.einsum('bij,bkj->bik', [b3, b3])"),
    ("einsum_ellipsis", "torch.einsum('...j,j', b3, y[:3])"),
    ("einsum_trace", "torch.einsum('ii', x[:, :3])"),
    ("diagonal", "x.diagonal(1)"), ("diagonal_fn", "torch.diagonal(b3, 0, 0, 2)"),
    ("interpolate_nearest", "torch.nn.functional.interpolate(b3[None], scale_factor=2)"),
    ("interpolate_bilinear",
     "torch.nn.functional.interpolate(b3[None], size=(3, 5), mode='bilinear', align_corners=False)"),
    ("interpolate_linear_ac",
     "torch.nn.functional.interpolate(b3, scale_factor=1.7, mode='linear', align_corners=True)"),
    ("pixel_shuffle", "torch.nn.functional.pixel_shuffle(x.reshape(1, 4, 3, 1), 2)"),
    ("pixel_unshuffle", "torch.nn.functional.pixel_unshuffle(x[None, None, :2], 2)"),
    ("max_pool1d", "torch.nn.functional.max_pool1d(x[None], 2, ceil_mode=True)"),
    ("avg_pool1d", "torch.nn.functional.avg_pool1d(x[None], 3, 1, 1, count_include_pad=False)"),
    ("adaptive_max_pool2d", "torch.nn.functional.adaptive_max_pool2d(x[None, None], (2, 3))"),
    # comparisons
    ("gt", "x > y"), ("eq_scalar", "i == 2"), ("logical_and", "(x > 0) & m"),
    ("invert", "~m"),
    # conversions
    ("to_f64", "x.double()"), ("to_int", "(x * 10).long()"), ("to_bool", "i.bool()"),
    ("float_of_int", "i.float()"),
]


def inputs(torch):
    """The inputs, built from fixed numbers (so both libraries see the same values)."""
    x = torch.tensor([[0.5, -1.25, 2.0, 0.75], [-0.3, 1.1, -2.2, 0.4],
                      [1.6, 0.2, -0.9, -1.7]], requires_grad=True)
    y = torch.tensor([0.25, -0.5, 1.5, 0.9], requires_grad=True)
    w = torch.tensor([[0.1, -0.2], [0.3, 0.4], [-0.5, 0.6], [0.7, -0.8]], requires_grad=True)
    b3 = torch.tensor([[[0.1, 0.2, 0.3], [0.4, -0.5, 0.6]],
                       [[-0.7, 0.8, 0.9], [1.0, 1.1, -1.2]]], requires_grad=True)
    i = torch.tensor([[3, -1, 2, 0], [5, 2, -4, 1], [0, 7, 2, -2]])
    m = torch.tensor([[True, False, True, False], [False, False, True, True],
                      [True, True, False, False]])
    return {"x": x, "y": y, "w": w, "b3": b3, "i": i, "m": m}
