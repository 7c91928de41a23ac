"""``tinytorch.distributed`` and ``nn.parallel.DistributedDataParallel`` on 2 ranks: each
test runs dist_worker.py under ``mpirun -np 2`` (the package must be built with the MPI
backend, as scripts/test_all.sh builds it; the tests skip otherwise, but not in CI)."""

import os
import shutil
import subprocess
import sys

import pytest

import tinytorch as torch
import tinytorch.distributed as dist

WORKER = os.path.join(os.path.dirname(__file__), "dist_worker.py")

needs_mpi = pytest.mark.skipif(
    not (dist.is_available() and shutil.which("mpirun")) and not os.environ.get("CI"),
    reason="built without the MPI backend (MATURIN_PEP517_ARGS='--features mpi'), or no mpirun")


def run_on_two_ranks(case):
    env = dict(os.environ, RAYON_NUM_THREADS="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none")
    job = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
                          sys.executable, WORKER, case],
                         env=env, capture_output=True, text=True, timeout=300)
    text = job.stdout + job.stderr
    assert job.returncode == 0, text
    for rank in range(2):
        assert f"{case} finished on rank {rank}" in text, text


@needs_mpi
def test_collectives_match_their_definitions():
    run_on_two_ranks("collectives")


@needs_mpi
def test_ddp_on_two_ranks_equals_one_process_of_the_whole_batch():
    run_on_two_ranks("ddp")


def test_without_a_group_collectives_raise_as_pytorch_does():
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.all_reduce(torch.ones(2))
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_rank()
