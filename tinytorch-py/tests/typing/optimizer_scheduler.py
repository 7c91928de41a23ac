"""An optimizer with parameter groups and a learning-rate scheduler, gradient clipping,
a custom loss and a checkpoint dictionary; checked with `mypy --strict`."""

from typing import Dict, List

import tinytorch as torch
from tinytorch import Tensor, nn
from tinytorch.optim import Adam, AdamW
from tinytorch.optim.lr_scheduler import CosineAnnealingLR, StepLR


def huber(pred: Tensor, target: Tensor, delta: float = 1.0) -> Tensor:
    err = (pred - target).abs()
    quad = torch.clamp(err, max=delta)
    return (0.5 * quad * quad + delta * (err - quad)).mean()


def fit(steps: int = 20) -> List[float]:
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
    first: nn.Linear = model[0]
    opt = AdamW(
        [
            {"params": first.parameters(), "lr": 1e-2},
            {"params": model[2].parameters()},
        ],
        lr=5e-3,
        weight_decay=0.01,
    )
    sched = CosineAnnealingLR(opt, T_max=steps)
    x = torch.randn(32, 4)
    y = x.sum(dim=1, keepdim=True)
    losses: List[float] = []
    for _ in range(steps):
        opt.zero_grad()
        loss = huber(model(x), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
    checkpoint: Dict[str, object] = {
        "model": model.state_dict(),
        "optimizer": opt.state_dict(),
        "lr": sched.get_last_lr(),
    }
    print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}, keys {sorted(checkpoint)}")
    return losses


def plain_adam() -> float:
    w = torch.zeros(3, requires_grad=True)
    opt = Adam([w], lr=0.1, betas=(0.9, 0.99))
    sched = StepLR(opt, step_size=5, gamma=0.5)
    target = torch.tensor([1.0, -2.0, 3.0])
    for _ in range(10):
        opt.zero_grad()
        loss = ((w - target) ** 2).sum()
        loss.backward()
        opt.step()
        sched.step()
    return float(w.detach().sub(target).abs().max())


if __name__ == "__main__":
    fit()
    plain_adam()
