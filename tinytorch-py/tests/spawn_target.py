"""Functions that tests/test_layers_extra.py runs in processes started by
torch.multiprocessing.spawn (importable by the children)."""

import os


def write_rank(i, folder):
    """Write this process's index to ``folder/<i>.txt``."""
    with open(os.path.join(folder, f"{i}.txt"), "w") as f:
        f.write(str(i * 10))


def fail_on_one(i):
    """Raise in the process of index 1."""
    if i == 1:
        raise ValueError("rank one fails")
