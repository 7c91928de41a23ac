#!/usr/bin/env python3
"""Reference values for tinytorch-py/tests/test_public_programs.py: the training programs of
tinytorch-py/tests/programs (written in the idioms of nanoGPT and pytorch/examples' word
language model, DCGAN, VAE, time-sequence prediction and REINFORCE), run by real PyTorch.

Each program module says ``import torch``; here that is PyTorch, in the test it is
tinytorch (through tests/conformance/torch_shim.py), and both run the same file. This
script imports each module, calls its ``run()`` and stores the returned dict of plain
numbers and lists under the program's name in tinytorch-py/tests/fixtures/programs.json,
with the torch version under ``meta``.

Usage (needs PyTorch; CI does not):
    python scripts/gen_program_fixtures.py              # every program
    python scripts/gen_program_fixtures.py gpt vae      # only these (the others are kept)
"""
import importlib
import json
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(HERE, "..", "tinytorch-py", "tests")
OUT = os.path.join(TESTS, "fixtures", "programs.json")
sys.path.insert(0, TESTS)

from programs import PROGRAMS  # noqa: E402  (needs TESTS on sys.path)


def main(names):
    # One thread and full-precision float32 matmuls: the summation orders closest to
    # tinytorch's, and reproducible from run to run.
    torch.set_num_threads(1)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    for name in names:
        if name not in PROGRAMS:
            sys.exit(f"unknown program {name!r}; the programs are {', '.join(PROGRAMS)}")
    stored = {}
    if names and os.path.exists(OUT):
        with open(OUT) as f:
            stored = json.load(f)
    stored["meta"] = {"torch": torch.__version__}
    for name in names or PROGRAMS:
        module = importlib.import_module(f"programs.{name}")
        start = time.time()
        stored[name] = module.run()
        print(f"{name}: {time.time() - start:.2f} s")
    with open(OUT, "w") as f:
        json.dump(stored, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {os.path.relpath(OUT)}")


if __name__ == "__main__":
    main(sys.argv[1:])
