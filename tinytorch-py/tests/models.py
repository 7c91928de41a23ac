"""Layers, models and training runs written in PyTorch's idiom, run by PyTorch
(scripts/fixtures/gen_py_fixtures.py) and by TinyTorch (the tests) with only the module objects
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
        ("maxpool1d", lambda: nn.MaxPool1d(3, stride=2, padding=1), seq),
        ("maxpool1d_ceil", lambda: nn.MaxPool1d(3, ceil_mode=True), seq),
        ("avgpool1d", lambda: nn.AvgPool1d(3, stride=2, padding=1, count_include_pad=False), seq),
        ("adaptive_maxpool_none", lambda: nn.AdaptiveMaxPool2d((4, None)), img),
        ("adaptive_maxpool", lambda: nn.AdaptiveMaxPool2d((4, 5)), img),
        ("pixel_shuffle", lambda: nn.Sequential(nn.Conv2d(3, 8, 1), nn.PixelShuffle(2)), img),
        ("pixel_unshuffle", lambda: nn.PixelUnshuffle(2), img),
        ("upsample_nearest", lambda: nn.Upsample(scale_factor=2), img),
        ("upsample_bilinear", lambda: nn.Upsample(size=(9, 4), mode="bilinear"), img),
        ("upsample_bilinear_ac", lambda: nn.Upsample(scale_factor=1.5, mode="bilinear", align_corners=True), img),
        ("batchnorm2d", lambda: nn.BatchNorm2d(3), img),
        ("layernorm", lambda: nn.LayerNorm(8), seq),
        ("groupnorm", lambda: nn.GroupNorm(1, 3), img),
        ("embedding", lambda: nn.Embedding(10, 4), torch.tensor([[1, 2, 9], [0, 3, 3]])),
        ("flatten_linear", lambda: nn.Sequential(nn.Flatten(), nn.Linear(108, 3)), img),
        ("mlp", lambda: nn.Sequential(nn.Linear(8, 6), nn.ReLU(), nn.Linear(6, 2), nn.Tanh()), seq),
        ("gelu", lambda: nn.Sequential(nn.Linear(8, 8), nn.GELU()), seq),
        ("softmax", lambda: nn.Sequential(nn.Linear(8, 3), nn.Softmax(dim=-1)), seq),
        ("gru", lambda: First(nn.GRU(8, 6, batch_first=True)), seq),
        ("lstm_bidirectional", lambda: First(nn.LSTM(8, 4, bidirectional=True)), seq),
        ("rnn_relu_2layers", lambda: First(nn.RNN(8, 5, num_layers=2, nonlinearity="relu")), seq),
        ("mha_weights", lambda: SelfAttention(nn.MultiheadAttention(8, 2, batch_first=True), 1), seq),
        ("mha_fused", lambda: SelfAttention(nn.MultiheadAttention(8, 4), 0, need_weights=False), seq),
        ("encoder_layer", lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True), seq),
        ("encoder_layer_norm_first_gelu", lambda: nn.TransformerEncoderLayer(
            8, 2, 16, dropout=0.0, activation="gelu", norm_first=True), seq),
    ]


def _wrapped(name, inner, call):
    """``inner`` held as attribute ``name`` of a Module (of ``inner``'s own framework) whose
    ``forward(x)`` is ``call(inner, x)``."""
    cls = next(b for b in type(inner).__mro__ if b.__name__ == "Module")

    class Wrapped(cls):
        def __init__(self):
            super().__init__()
            setattr(self, name, inner)

        def forward(self, x):
            return call(getattr(self, name), x)

    return Wrapped()


def SelfAttention(mha, which, need_weights=True):
    """Self-attention of ``mha`` as a Module returning output ``which`` (0: the attention
    output, 1: the head-averaged weights)."""
    return _wrapped("mha", mha, lambda m, x: m(x, x, x, need_weights=need_weights)[which])


def First(layer):
    """A recurrent layer as a Module whose output is the layer's first output."""
    return _wrapped("layer", layer, lambda m, x: m(x)[0])


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


def PROFILE_CASES(nn, F):
    """Models for tinytorch.profile.summary, with their input shapes: (name, make, shape)."""
    MLP, CNN = make_classes(nn, F)
    return [("mlp", MLP, (5, 12)), ("cnn", CNN, (2, 1, 8, 8))]


def make_lm(nn):
    class LM(nn.Module):
        """A character-level LSTM language model."""

        def __init__(self, vocab=12, dim=8, hidden=16):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.lstm = nn.LSTM(dim, hidden, num_layers=2, batch_first=True)
            self.head = nn.Linear(hidden, vocab)

        def forward(self, tokens):
            out, (h, c) = self.lstm(self.embed(tokens))
            return self.head(out)

    return LM


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

    def loader_losses(model, loader, opt, scheduler, epochs):
        """The loss of every batch of ``epochs`` passes of cross-entropy training over
        ``loader``, ``scheduler`` stepped after each pass."""
        losses = []
        for _ in range(epochs):
            for xb, yb in loader:
                opt.zero_grad()
                loss = F.cross_entropy(model(xb), yb)
                loss.backward()
                opt.step()
                losses.append(loss.item())
            scheduler.step()
        return losses

    # An MLP with SGD (momentum, weight decay), StepLR and a DataLoader over a TensorDataset.
    model = MLP()
    set_ramp_weights(torch, model)
    x = ramp(torch, (24, 12), 1.0)
    y = torch.tensor([(k * 7) % 3 for k in range(24)])
    loader = data.DataLoader(data.TensorDataset(x, y), batch_size=8)
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3)
    scheduler = sched.StepLR(opt, step_size=2, gamma=0.5)
    out["mlp_sgd"] = loader_losses(model, loader, opt, scheduler, 4)

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

    # An LSTM language model (Embedding -> 2-layer LSTM -> Linear) with AdamW.
    model = make_lm(nn)()
    set_ramp_weights(torch, model)
    tokens = torch.tensor([[(k * 5 + r * 3) % 12 for k in range(10)] for r in range(4)])
    opt = optim.AdamW(model.parameters(), lr=0.02)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 12), tokens[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    out["lstm_lm_adamw"] = losses

    # A small CNN on the first 512 Fashion-MNIST images (when the Debian package is there):
    # DataLoader, SGD with momentum, StepLR.
    images = fashion_mnist(torch, 512)
    if images is not None:
        x, y = images
        model = nn.Sequential(nn.Conv2d(1, 4, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                              nn.Linear(4 * 12 * 12, 10))
        set_ramp_weights(torch, model)
        loader = data.DataLoader(data.TensorDataset(x, y), batch_size=64)
        opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        scheduler = sched.StepLR(opt, step_size=1, gamma=0.7)
        out["fashion_mnist_cnn"] = loader_losses(model, loader, opt, scheduler, 2)
    return out


FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


def fashion_mnist(torch, n):
    """The first ``n`` training images (scaled to [0, 1]) and labels, or None."""
    import gzip
    import os

    path = os.path.join(FASHION_MNIST, "train-images-idx3-ubyte.gz")
    if not os.path.exists(path):
        return None
    images = gzip.open(path).read()[16:16 + n * 784]
    labels = gzip.open(os.path.join(FASHION_MNIST, "train-labels-idx1-ubyte.gz")).read()[8:8 + n]
    x = torch.tensor(list(images), dtype=torch.float32).reshape(n, 1, 28, 28) / 255.0
    return x, torch.tensor(list(labels))


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
