"""Reference run of a training recipe's steps for tinytorch/tests/trainer.rs, from PyTorch.

A small f64 MLP (Linear 4-8, tanh, Linear 8-3) trained for 8 steps on fixed batches of 6 with
every option of `train::Trainer` on at once:
- SGD (lr 0.2, momentum 0.9, weight decay 1e-3),
- a schedule stepped per optimizer step: SequentialLR([LinearLR(start_factor=0.1,
  total_iters=3), CosineAnnealingLR(T_max=5, eta_min=0.01)], milestones=[3]) over 8 steps,
- gradient accumulation: each batch in 2 micro-batches of 3, each loss weighted by 1/2,
- clip_grad_norm_(max_norm=0.5) before each step,
- AveragedModel(multi_avg_fn=get_ema_multi_avg_fn(0.8), use_buffers=True), updated after
  each step.
Writes the initial weights, the batches, and after the run the weights, the average, each
step's learning rate and mean loss to tinytorch/tests/fixtures/trainer.safetensors.

    python scripts/gen_trainer_fixtures.py
"""
import os

import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tinytorch", "tests", "fixtures", "trainer.safetensors")
STEPS, BATCH, PARTS = 8, 6, 2


def main():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).double()
    init = {f"init.{k}": v.detach().clone() for k, v in model.state_dict().items()}
    xs = torch.randn(STEPS, BATCH, 4, dtype=torch.float64) * 2
    ys = torch.randint(0, 3, (STEPS, BATCH))
    opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9, weight_decay=1e-3)
    warm = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=3)
    cos = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=STEPS - 3, eta_min=0.01)
    sched = torch.optim.lr_scheduler.SequentialLR(opt, [warm, cos], milestones=[3])
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.8), use_buffers=True)
    lrs, losses = [], []
    for s in range(STEPS):
        lrs.append(opt.param_groups[0]["lr"])
        opt.zero_grad()
        total = 0.0
        for k in range(PARTS):
            part = slice(k * BATCH // PARTS, (k + 1) * BATCH // PARTS)
            loss = F.cross_entropy(model(xs[s, part]), ys[s, part])
            (loss / PARTS).backward()
            total += loss.item() / PARTS
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
        sched.step()
        ema.update_parameters(model)
        losses.append(total)
    out = dict(init)
    out.update({f"final.{k}": v.detach().clone() for k, v in model.state_dict().items()})
    out.update({f"ema.{k[len('module.'):]}": v.detach().clone()
                for k, v in ema.state_dict().items() if k.startswith("module.")})
    out.update({"xs": xs, "ys": ys, "lrs": torch.tensor(lrs, dtype=torch.float64),
                "losses": torch.tensor(losses, dtype=torch.float64)})
    save_file({k: v.contiguous() for k, v in out.items()}, OUT)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
