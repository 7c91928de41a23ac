"""PyTorch twin of `cargo run --release -p tinytorch --example seed_cnn_step`: one training
step of the seed CNN (batch 64, 1x28x28: forward, cross-entropy, backward, SGD step), median of
5 steps after 1 warm-up, on 2 threads. Run both in the same session to compare."""
import time

import torch
import torch.nn.functional as F

from torch_models import MODELS


def main():
    torch.set_num_threads(2)
    torch.manual_seed(0)
    model = MODELS["seed-cnn"]()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = torch.randn(64, 1, 28, 28), torch.randint(0, 10, (64,))
    times = []
    for _ in range(6):
        start = time.perf_counter()
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        times.append(time.perf_counter() - start)
    print(f"PyTorch seed-cnn training step, batch 64: median {sorted(times[1:])[2] * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
