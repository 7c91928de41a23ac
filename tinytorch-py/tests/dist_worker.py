"""One rank of the distributed tests (test_distributed.py runs it under ``mpirun -np 2``):
``python dist_worker.py collectives|ddp``. Prints ``<case> finished on rank R`` at its end."""

import sys

import tinytorch as torch
import tinytorch.distributed as dist
from tinytorch.utils.data import DataLoader, DistributedSampler, TensorDataset

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
          torch.uint8, torch.bool]


def values(rank, n):
    """Rank r's input: 1 + i % 7 + 10 r (small integers, exact in every dtype)."""
    return [1 + i % 7 + 10 * rank for i in range(n)]


def collectives(rank, world):
    for dtype in DTYPES:
        ins = [values(r, 12) for r in range(world)]
        mine = lambda: torch.tensor(ins[rank], dtype=torch.float64).to(dtype).reshape(3, 4)
        as_list = lambda t: t.double().reshape(-1).tolist()
        want_max = [max(col) for col in zip(*ins)]
        want_sum = [sum(col) for col in zip(*ins)]
        if dtype == torch.bool:
            want_sum = [float(bool(s)) for s in want_sum]
            want_max = [float(bool(m)) for m in want_max]
        elif dtype == torch.uint8:
            want_sum = [s % 256 for s in want_sum]
        t = mine()
        dist.all_reduce(t)
        assert t.dtype == dtype and tuple(t.shape) == (3, 4)
        assert as_list(t) == want_sum, (dtype, as_list(t), want_sum)
        t = mine()
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        assert as_list(t) == want_max, (dtype, "max")
        if dtype.is_floating_point:
            t = mine()
            dist.all_reduce(t, op=dist.ReduceOp.AVG)
            assert as_list(t) == [s / world for s in want_sum], (dtype, "avg")
        else:
            try:
                dist.all_reduce(mine(), op=dist.ReduceOp.AVG)
                raise AssertionError("AVG of integers must raise")
            except RuntimeError as e:
                assert "Avg needs a floating dtype" in str(e), e
        t = mine()
        dist.broadcast(t, src=world - 1)
        assert as_list(t) == as_list(torch.tensor(ins[-1], dtype=torch.float64).to(dtype))
        outs = [torch.zeros(3, 4, dtype=dtype) for _ in range(world)]
        dist.all_gather(outs, mine())
        for r, o in enumerate(outs):
            assert as_list(o) == as_list(torch.tensor(ins[r], dtype=torch.float64).to(dtype))
        whole = torch.zeros(3 * world, 4, dtype=dtype)
        dist.all_gather_into_tensor(whole, mine())
        assert as_list(whole) == sum((as_list(o) for o in outs), [])
    # reduce_scatter_tensor: rank r gets rows [2r, 2r + 2) of the sum.
    x = torch.tensor(values(rank, 2 * world * 3), dtype=torch.float32).reshape(2 * world, 3)
    out = torch.zeros(2, 3)
    dist.reduce_scatter_tensor(out, x)
    total = [sum(col) for col in zip(*(values(r, 2 * world * 3) for r in range(world)))]
    assert out.reshape(-1).tolist() == total[6 * rank:6 * rank + 6]
    dist.barrier()
    # Ranks that disagree: an error on both, naming each rank's call.
    try:
        dist.all_reduce(torch.zeros(4, 3 if rank == 0 else 2))
        raise AssertionError("a shape mismatch must raise")
    except RuntimeError as e:
        assert "rank 0: float32 [4, 3]" in str(e) and "rank 1: float32 [4, 2]" in str(e), e


def model():
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(36, 16), torch.nn.ReLU(),
                               torch.nn.Linear(16, 5))


def ddp(rank, world):
    """2 ranks x batch 32 end 20 SGD-momentum steps where 1 process x batch 64 does."""
    torch.manual_seed(7)
    reference = model()
    torch.manual_seed(7 + rank)  # other weights on each rank: DDP broadcasts rank 0's
    net = torch.nn.parallel.DistributedDataParallel(model(), bucket_cap_mb=1e-4)
    assert list(net.state_dict())[0] == "module.1.weight"
    opts = [torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9) for m in (net, reference)]
    loss_fn = torch.nn.CrossEntropyLoss()
    for step in range(20):
        torch.manual_seed(1000 + step)
        x, y = torch.randn(64, 1, 6, 6), torch.randint(0, 5, (64,))
        part = slice(32 * rank, 32 * rank + 32)
        for m, opt, (xs, ys) in ((net, opts[0], (x[part], y[part])),
                                 (reference, opts[1], (x, y))):
            opt.zero_grad()
            loss_fn(m(xs), ys).backward()
            opt.step()
    for (name, p), q in zip(net.module.named_parameters(), reference.parameters()):
        worst = (p - q).abs().max().item()
        assert worst < 1e-5, (name, worst)
    # no_sync: local accumulation, then one averaged step.
    net.zero_grad()
    x = torch.randn(8, 1, 6, 6) + rank
    y = torch.randint(0, 5, (8,))
    with net.no_sync():
        loss_fn(net(x), y).backward()
    local = net.module[1].weight.grad.clone()
    loss_fn(net(x), y).backward()
    synced = net.module[1].weight.grad
    both = [torch.zeros_like(synced) for _ in range(world)]
    dist.all_gather(both, synced.contiguous())
    assert (both[0] - both[1]).abs().max().item() == 0.0
    mine = [torch.zeros_like(local) for _ in range(world)]
    dist.all_gather(mine, local.contiguous())
    assert (mine[0] - mine[1]).abs().max().item() > 0.0, "before syncing the ranks differ"
    # DistributedSampler through a DataLoader: disjoint shares of equal length.
    data = TensorDataset(torch.arange(10).float())
    sampler = DistributedSampler(data, shuffle=True, seed=3)
    sampler.set_epoch(1)
    seen = [int(v) for (batch,) in DataLoader(data, batch_size=2, sampler=sampler)
            for v in batch.tolist()]
    everyone = [torch.zeros(5, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(everyone, torch.tensor(seen))
    assert sorted(sum((e.tolist() for e in everyone), [])) == list(range(10))


if __name__ == "__main__":
    case = sys.argv[1]
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    assert world == 2 and dist.is_initialized()
    {"collectives": collectives, "ddp": ddp}[case](rank, world)
    print(f"{case} finished on rank {rank}", flush=True)
    dist.destroy_process_group()
