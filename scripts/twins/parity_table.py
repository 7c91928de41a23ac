"""Print the per-epoch parity table (markdown) of a PyTorch run and a TinyTorch run.

PyTorch side: the JSON lines of `scripts/twins/train_torch.py --log FILE`; TinyTorch side: the
`metrics.jsonl` that `tinytorch train --out DIR` writes. Test accuracy in percent, the
difference in points, and each side's training seconds per epoch.

    python scripts/twins/parity_table.py torch_sameinit.jsonl runs/sameinit/metrics.jsonl
"""
import json
import sys


def rows(path):
    with open(path) as f:
        return {r["epoch"]: r for r in map(json.loads, filter(str.strip, f))}


def main():
    torch_rows, tt_rows = rows(sys.argv[1]), rows(sys.argv[2])
    print("| epoch | PyTorch test acc | TinyTorch test acc | diff (points) "
          "| PyTorch train loss | TinyTorch train loss | PyTorch s | TinyTorch s |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for e in sorted(set(torch_rows) | set(tt_rows)):
        p, t = torch_rows.get(e), tt_rows.get(e)
        acc = lambda r: f"{100 * r['test_acc']:.2f}" if r else "—"
        loss = lambda r: f"{r['train_loss']:.4f}" if r else "—"
        secs = lambda r: f"{r['train_s']:.0f}" if r else "—"
        diff = f"{100 * (t['test_acc'] - p['test_acc']):+.2f}" if p and t else "—"
        print(f"| {e} | {acc(p)} | {acc(t)} | {diff} | {loss(p)} | {loss(t)} "
              f"| {secs(p)} | {secs(t)} |")


if __name__ == "__main__":
    main()
