"""How much of the PyTorch API that real programs use does `tinytorch` have, and how much of
it do the Python tests exercise?

Reads `torch_api_usage.tsv` (shared/torch_api_usage.md describes it: one row per torch name,
with the number of public repositories that use it) and, for the names used by at least 10
and at least 3 repositories, reports

- exists: the name resolves on tinytorch: `torch.a.b.c` by the same getattr chain from
  `tinytorch` (importing `tinytorch.a.b` on the way, as `import torch.a.b` would),
  `Tensor.x` on `tinytorch.Tensor`, `Module.x` on a `tinytorch.nn.Module()` instance;
- tested: the name exists and its last component occurs as a word in a file of tinytorch-py/tests;

each as a count of names and weighted by repositories (a name used by 40 repositories counts
40 times); then the same counts for every name of `torch.linalg` and `torch.special`
(`NAMESPACES`), whatever its count. Then it lists the missing names, most-used first.

    python scripts/dev/api_coverage.py [path/to/torch_api_usage.tsv] [--missing-min-repos 3]

Run it with the `tinytorch` package installed (`maturin develop` or `pip install`).
"""

import argparse
import importlib
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEFAULT_TSV = ROOT / ".." / "shared" / "torch_api_usage.tsv"
TESTS = ROOT / "tinytorch-py" / "tests"
THRESHOLDS = (10, 3)
# Namespaces reported on their own, every name whatever its count (their names are used by
# few repositories each, so the thresholds above hide them).
NAMESPACES = ("torch.linalg", "torch.special")


def read_rows(path):
    """(api, kind, repos) for every data row of the TSV (comment and header skipped)."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or line.startswith("api\t"):
                continue
            fields = line.rstrip("\n").split("\t")
            if len(fields) >= 4:
                rows.append((fields[0], fields[1], int(fields[3])))
    return rows


def _resolve_chain(root, names):
    """Follow `names` from the module `root` by getattr, importing submodules on the way."""
    obj = root
    for i, name in enumerate(names):
        try:
            obj = getattr(obj, name)
            continue
        except AttributeError:
            pass
        except Exception:  # a property that raises still means the name is there
            return True
        module = ".".join([root.__name__] + names[:i + 1])
        try:
            obj = importlib.import_module(module)
        except Exception:
            return False
    return True


def exists(api, tinytorch, module_instance):
    """Whether `api` (a TSV name) resolves on tinytorch."""
    head, _, rest = api.partition(".")
    if head == "Tensor":
        return hasattr(tinytorch.Tensor, rest)
    if head == "Module":
        return hasattr(module_instance, rest)
    if head == "torch":
        return _resolve_chain(tinytorch, rest.split("."))
    raise ValueError(f"api_coverage: unknown name form {api!r}")


def tested_words(tests_dir):
    """Every identifier-like word in the test files."""
    words = set()
    for path in sorted(pathlib.Path(tests_dir).glob("*.py")):
        words.update(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", path.read_text(encoding="utf-8")))
    return words


def summarize(rows, min_repos):
    """Counts and repo-weighted counts of the rows used by at least `min_repos` repos."""
    sel = [r for r in rows if r["repos"] >= min_repos]
    total_w = sum(r["repos"] for r in sel) or 1
    out = {"names": len(sel), "weight": total_w}
    for key in ("exists", "tested"):
        hit = [r for r in sel if r[key]]
        out[key] = len(hit)
        out[key + "_w"] = sum(r["repos"] for r in hit)
    out["weight"] = total_w
    return out


def main(argv=None):
    """Parse the arguments, resolve every name, print the table and the missing names."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("tsv", nargs="?", default=str(DEFAULT_TSV),
                   help="path of torch_api_usage.tsv (default: ../shared/ from the repo root)")
    p.add_argument("--tests", default=str(TESTS), help="folder of the Python tests")
    p.add_argument("--missing-min-repos", type=int, default=3,
                   help="list the missing names used by at least this many repos")
    args = p.parse_args(argv)

    import tinytorch

    module_instance = tinytorch.nn.Module()
    words = tested_words(args.tests)
    rows = []
    for api, kind, repos in read_rows(args.tsv):
        found = exists(api, tinytorch, module_instance)
        rows.append({"api": api, "kind": kind, "repos": repos, "exists": found,
                     "tested": found and api.rsplit(".", 1)[-1] in words})

    print("| used by | names | exist | exist (repo-weighted) | tested | tested (repo-weighted) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for t in THRESHOLDS:
        s = summarize(rows, t)
        n, w = s["names"], s["weight"]
        print(f"| >= {t} repos | {n} | {s['exists']} ({100 * s['exists'] / n:.1f}%) "
              f"| {100 * s['exists_w'] / w:.1f}% "
              f"| {s['tested']} ({100 * s['tested'] / n:.1f}%) | {100 * s['tested_w'] / w:.1f}% |")

    print("\n| namespace (any count) | names | exist | tested |")
    print("| --- | --- | --- | --- |")
    for ns in NAMESPACES:
        sel = [r for r in rows if r["api"].startswith(ns + ".")]
        if sel:
            ex = sum(r["exists"] for r in sel)
            te = sum(r["tested"] for r in sel)
            print(f"| {ns} | {len(sel)} | {ex} | {te} |")
            for r in sel:
                if not r["exists"]:
                    print(f"|   missing: {r['api']} | | | |")

    missing = sorted((r for r in rows if not r["exists"] and r["repos"] >= args.missing_min_repos),
                     key=lambda r: (-r["repos"], r["api"]))
    print(f"\nMissing, used by >= {args.missing_min_repos} repos ({len(missing)}):")
    for r in missing:
        print(f"  {r['repos']:3d}  {r['api']}  ({r['kind']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
