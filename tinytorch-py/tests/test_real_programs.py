"""Short programs in the style of the public repositories of the usage table, written
against ``torch``'s API and run with ``import tinytorch as torch``: each exercises the
start-up boilerplate (seeding, device and backend flags), a model and its training loop
the way such code does, and checks that it learns."""

import random

import tinytorch as torch
import tinytorch.nn as nn
import tinytorch.nn.functional as F
from tinytorch.distributions import Categorical, Normal
from tinytorch.utils.data import DataLoader, RandomSampler, TensorDataset


def boilerplate(seed):
    """What the training scripts of the table do before anything else."""
    random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = True
    device = torch.device("cuda" if torch.cuda.is_available() else
                          "mps" if torch.backends.mps.is_available() else "cpu")
    return device


def test_reinforce_on_a_bandit():
    """A policy-gradient agent (cleanrl/spinningup style) learns the best of three arms."""
    device = boilerplate(1)
    rewards = torch.tensor([0.1, 0.9, 0.3], device=device)
    policy = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 3)).to(device)
    opt = torch.optim.Adam(policy.parameters(), lr=3e-2, eps=1e-5)
    obs = torch.ones(64, 1, device=device)
    for step in range(150):
        dist = Categorical(logits=policy(obs))
        action = dist.sample()
        reward = rewards[action] + 0.05 * torch.randn(64, device=device)
        advantage = reward - reward.mean()
        loss = -(dist.log_prob(action) * advantage).mean() - 0.01 * dist.entropy().mean()
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
        opt.step()
        if step % 50 == 0:
            msg = f"step {step} loss {loss:.4f} return {reward.mean():.3f}"
            assert msg.startswith(f"step {step} loss ")
    probs = Categorical(logits=policy(obs[:1])).probs
    assert probs.argmax().item() == 1 and probs[0, 1].item() > 0.8


def test_gaussian_policy_rsample_and_kl():
    """A reparameterised Gaussian policy (SAC/TD3 style) moves its mean to the optimum."""
    boilerplate(2)
    mu = torch.zeros(2, requires_grad=True)
    log_std = torch.zeros(2, requires_grad=True)
    opt = torch.optim.SGD([mu, log_std], lr=0.05, momentum=0.9)
    target = torch.tensor([1.0, -2.0])
    for _ in range(200):
        dist = Normal(mu, log_std.exp())
        a = dist.rsample((32,))
        loss = ((a - target) ** 2).sum(-1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert torch.allclose(mu.detach(), target, atol=0.15)
    kl = torch.distributions.kl_divergence(Normal(mu, log_std.exp()), Normal(target, 1.0))
    assert kl.shape == (2,)


def test_char_model_with_cells_sampler_and_amp_boilerplate():
    """A character model over an LSTMCell loop (tutorial style), fed by a DataLoader with a
    RandomSampler, with the mixed-precision boilerplate of GPU scripts turned off on CPU."""
    device = boilerplate(3)
    text = "abcabcabcabcabcabcabcabc"
    vocab = sorted(set(text))
    ids = torch.tensor([vocab.index(c) for c in text])
    x = torch.stack([ids[i:i + 4] for i in range(len(ids) - 4)])
    y = torch.stack([ids[i + 1:i + 5] for i in range(len(ids) - 4)])
    data = TensorDataset(x, y)
    loader = DataLoader(data, batch_size=8, sampler=RandomSampler(data), drop_last=True)

    class CharModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(len(vocab), 8)
            self.cell = nn.LSTMCell(8, 16)
            self.head = nn.Linear(16, len(vocab))

        def forward(self, idx):
            h = idx.new_zeros(idx.shape[0], 16, dtype=torch.float32)
            c = torch.zeros_like(h)
            outs = []
            for t in range(idx.shape[1]):
                h, c = self.cell(self.emb(idx[:, t]), (h, c))
                outs.append(self.head(h))
            return torch.stack(outs, 1)

    model = torch.compile(CharModel().to(device))
    scaler = torch.cuda.amp.GradScaler(enabled=device.type == "cuda")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, fused=device.type == "cuda")
    for epoch in range(30):
        for xb, yb in loader:
            with torch.autocast(device_type=device.type, enabled=device.type == "cuda"):
                logits = model(xb)
                loss = F.cross_entropy(logits.reshape(-1, len(vocab)), yb.reshape(-1))
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
    with torch.no_grad():
        pred = model(x[:1]).argmax(-1)
    assert pred.tolist() == y[:1].tolist()
    assert f"{loss:.3f}" == f"{loss.item():.3f}" and loss.item() < 0.2


def test_lbfgs_fit_like_the_examples():
    """pytorch/examples' time-sequence script fits with LBFGS and a closure."""
    boilerplate(4)
    t = torch.linspace(0, 1, 32).unsqueeze(1)
    target = torch.sin(3 * t)
    model = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1)).double()
    t, target = t.double(), target.double()
    opt = torch.optim.LBFGS(model.parameters(), lr=0.8)
    for _ in range(10):
        def closure():
            opt.zero_grad()
            loss = F.mse_loss(model(t), target)
            loss.backward()
            return loss

        opt.step(closure)
    assert F.mse_loss(model(t), target).item() < 1e-3
