"""Reference values of the distillation loss for tinytorch/tests/losses.rs, from PyTorch.

Hinton et al.'s loss as the PyTorch knowledge-distillation tutorial writes it:
alpha * T^2 * F.kl_div(log_softmax(s / T), log_softmax(t / T), "batchmean", log_target=True)
+ (1 - alpha) * F.cross_entropy(s, y), in f64, with its gradient with respect to the
student's logits. Writes tinytorch/tests/fixtures/distill.json.

    python scripts/gen_distill_fixtures.py
"""
import json
import os

import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tinytorch", "tests", "fixtures", "distill.json")


def main():
    g = torch.Generator().manual_seed(0)
    student = torch.randn(4, 5, generator=g, dtype=torch.float64) * 3
    teacher = torch.randn(4, 5, generator=g, dtype=torch.float64) * 3
    targets = torch.tensor([0, 3, 4, 1])
    cases = []
    for temperature, alpha in [(1.0, 0.5), (4.0, 0.9), (2.0, 0.0), (8.0, 1.0)]:
        s = student.clone().requires_grad_(True)
        soft = F.kl_div(F.log_softmax(s / temperature, -1), F.log_softmax(teacher / temperature, -1),
                        reduction="batchmean", log_target=True) * temperature**2
        loss = alpha * soft + (1 - alpha) * F.cross_entropy(s, targets)
        loss.backward()
        cases.append({"temperature": temperature, "alpha": alpha, "loss": loss.item(),
                      "grad": s.grad.reshape(-1).tolist()})
    out = {"shape": [4, 5], "student": student.reshape(-1).tolist(),
           "teacher": teacher.reshape(-1).tolist(), "targets": targets.tolist(), "cases": cases}
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
