"""Layers, models and training runs written in PyTorch's idiom, run by PyTorch
(scripts/gen_py_fixtures.py) and by TinyTorch (the tests) with only the module objects
swapped: ``torch``, ``nn`` and ``F`` are parameters."""

import math


def ramp(torch, shape, scale):
    """Deterministic values of ``shape``: ``scale * sin(1 + 0.7 k)`` for k = 0, 1, ...."""
    n = 1
    for s in shape:
        n *= s
    v = [scale * math.sin(1.0 + 0.7 * k) for k in range(n)]
    return torch.tensor(v, dtype=torch.float32).reshape(*shape) if shape else torch.tensor(v[0])


def LAYER_CASES(torch, nn):
    """(name, factory, input) of each built-in layer checked against PyTorch."""
    img = ramp(torch, (2, 3, 6, 6), 1.0)
    seq = ramp(torch, (2, 5, 8), 1.0)
    return [
        ("linear", lambda: nn.Linear(8, 4), ramp(torch, (3, 8), 1.0)),
        ("linear_nobias", lambda: nn.Linear(8, 4, bias=False), ramp(torch, (2, 5, 8), 1.0)),
        ("conv2d", lambda: nn.Conv2d(3, 4, 3, padding=1), img),
        ("conv2d_stride", lambda: nn.Conv2d(3, 2, 2, stride=2, bias=False), img),
        ("conv1d", lambda: nn.Conv1d(5, 3, 3), seq),
        ("maxpool", lambda: nn.MaxPool2d(2), img),
        ("avgpool", lambda: nn.AvgPool2d(3, stride=2, padding=1), img),
        ("adaptive_avgpool", lambda: nn.AdaptiveAvgPool2d(1), img),
        ("batchnorm2d", lambda: nn.BatchNorm2d(3), img),
        ("layernorm", lambda: nn.LayerNorm(8), seq),
        ("groupnorm", lambda: nn.GroupNorm(1, 3), img),
        ("embedding", lambda: nn.Embedding(10, 4), torch.tensor([[1, 2, 9], [0, 3, 3]])),
        ("flatten_linear", lambda: nn.Sequential(nn.Flatten(), nn.Linear(108, 3)), img),
        ("mlp", lambda: nn.Sequential(nn.Linear(8, 6), nn.ReLU(), nn.Linear(6, 2), nn.Tanh()), seq),
        ("gelu", lambda: nn.Sequential(nn.Linear(8, 8), nn.GELU()), seq),
        ("softmax", lambda: nn.Sequential(nn.Linear(8, 3), nn.Softmax(dim=-1)), seq),
    ]


def make_classes(nn, F):
    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(12, 16)
            self.fc2 = nn.Linear(16, 3)
            self.scale = nn.Parameter(ramp_like(nn, 16))

        def forward(self, x):
            h = F.relu(self.fc1(x)) * self.scale
            return self.fc2(h)

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(4, 6, 3), nn.ReLU(),
            )
            self.head = nn.Linear(6 * 2 * 2, 3)

        def forward(self, x):
            return self.head(self.features(x).flatten(1))

    return MLP, CNN


def ramp_like(nn, n):
    # nn is torch.nn or tinytorch.nn; their parent package builds the tensor.
    torch = __import__(nn.__name__.rsplit(".", 1)[0])
    return ramp(torch, (n,), 0.5) + 1.0


def set_ramp_weights(torch, model):
    with torch.no_grad():
        for i, (name, p) in enumerate(sorted(model.named_parameters())):
            p.copy_(ramp(torch, tuple(p.shape), 0.4 / (1 + 0.5 * i)))


def training_runs(torch, nn, F):
    """Loss after every step of two short runs from the same start on both sides."""
    from importlib import import_module

    data = import_module(torch.__name__ + ".utils.data")
    optim = import_module(torch.__name__ + ".optim")
    sched = import_module(torch.__name__ + ".optim.lr_scheduler")
    MLP, CNN = make_classes(nn, F)
    out = {}

    # An MLP with SGD (momentum, weight decay), StepLR and a DataLoader over a TensorDataset.
    model = MLP()
    set_ramp_weights(torch, model)
    x = ramp(torch, (24, 12), 1.0)
    y = torch.tensor([(k * 7) % 3 for k in range(24)])
    loader = data.DataLoader(data.TensorDataset(x, y), batch_size=8)
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3)
    scheduler = sched.StepLR(opt, step_size=2, gamma=0.5)
    losses = []
    for _ in range(4):
        for xb, yb in loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        scheduler.step()
    out["mlp_sgd"] = losses

    # A CNN with Adam and gradient clipping.
    model = CNN()
    set_ramp_weights(torch, model)
    x = ramp(torch, (6, 1, 8, 8), 1.0)
    y = torch.tensor([0, 1, 2, 2, 1, 0])
    opt = optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(6):
        opt.zero_grad()
        loss = nn.CrossEntropyLoss()(model(x), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    out["cnn_adam"] = losses
    return out


def lr_sequences(torch):
    """Learning rates over 12 steps of each scheduler."""
    from importlib import import_module

    optim = import_module(torch.__name__ + ".optim")
    sched = import_module(torch.__name__ + ".optim.lr_scheduler")
    makers = {
        "step": lambda o: sched.StepLR(o, 3, gamma=0.5),
        "multistep": lambda o: sched.MultiStepLR(o, [2, 5, 9], gamma=0.3),
        "exponential": lambda o: sched.ExponentialLR(o, 0.9),
        "cosine": lambda o: sched.CosineAnnealingLR(o, T_max=5, eta_min=0.01),
        "linear": lambda o: sched.LinearLR(o, start_factor=0.2, total_iters=4),
        "lambda": lambda o: sched.LambdaLR(o, lambda e: 1.0 / (1 + e)),
        "onecycle": lambda o: sched.OneCycleLR(o, max_lr=1.0, total_steps=13),
        "sequential": lambda o: sched.SequentialLR(
            o, [sched.LinearLR(o, start_factor=0.5, total_iters=3), sched.ExponentialLR(o, 0.8)],
            milestones=[3]),
    }
    out = {}
    for name, make in makers.items():
        p = torch.zeros(2, requires_grad=True)
        opt = optim.SGD([p], lr=0.5, momentum=0.9)
        s = make(opt)
        lrs = []
        for _ in range(12):
            lrs.append(opt.param_groups[0]["lr"])
            opt.step()
            s.step()
        out[name] = lrs
    return out
