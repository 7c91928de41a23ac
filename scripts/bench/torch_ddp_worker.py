"""One rank of PyTorch's DistributedDataParallel (gloo) training seed-cnn on Fashion-MNIST,
launched by `torchrun --nproc_per_node N` from scripts/bench/bench_ddp.py: the reference that
`mpirun -np N tinytorch train --distributed` is measured against. Each rank uses one thread,
batch 32 of its DistributedSampler share, SGD(lr 0.05, momentum 0.9). Prints one JSON line
(rank 0): samples/s over all ranks after the first step."""
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

SCRIPTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SCRIPTS, "twins"))  # torch_models, train_torch
import torch_models  # noqa: E402
from train_torch import load  # noqa: E402


def main():
    data_dir, steps, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    x, y = load(data_dir, "train")
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch_models.seed_cnn())
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sampler = torch.utils.data.distributed.DistributedSampler(range(len(y)), world, rank, seed=0)
    order = list(sampler)
    start = None
    for s in range(steps):
        idx = order[s * batch:(s + 1) * batch]
        opt.zero_grad()
        loss = F.cross_entropy(model(x[idx]), y[idx])
        loss.backward()
        opt.step()
        if s == 0:
            start = time.perf_counter()
    elapsed = time.perf_counter() - start
    if rank == 0:
        print(json.dumps({"samples_per_s": (steps - 1) * batch * world / elapsed}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
