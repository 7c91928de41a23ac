"""``torch.distributed``: the default process group of a job started by ``mpirun``, and its
collectives (each in place, as in PyTorch; the GIL is released while they wait).

The MPI backend needs the package built with it:
``MATURIN_PEP517_ARGS="--features mpi" pip install ./tinytorch-py``. Run a script with
``mpirun -np 2 python train.py``; see docs/DISTRIBUTED.md."""

import atexit
import datetime

from . import _tinytorch as _C


class ReduceOp:
    """How a collective combines the ranks' values (``dist.ReduceOp``)."""

    SUM = "sum"
    AVG = "avg"
    MAX = "max"


def is_available():
    """Whether this build has a distributed backend (``dist.is_available()``)."""
    return _C._dist_mpi_available()


def is_mpi_available():
    """Whether this build has the MPI backend."""
    return _C._dist_mpi_available()


def is_nccl_available():
    """The NCCL backend is not in the Python package."""
    return False


def init_process_group(backend="mpi", init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Join the job's default process group. Rank and world size come from the launcher
    (``mpirun``); ``timeout`` (a ``datetime.timedelta``, default 30 minutes) bounds how long
    a collective waits for the others before it raises."""
    if timeout is None:
        timeout = datetime.timedelta(minutes=30)
    _C._dist_init(str(backend).lower(), timeout.total_seconds())
    (r, n, _) = _C._dist_info()
    for name, given, got in (("rank", rank, r), ("world_size", world_size, n)):
        if given not in (-1, None) and given != got:
            destroy_process_group()
            raise ValueError(f"init_process_group: {name}={given} but the launcher says {got}")


def destroy_process_group(group=None):
    """Leave the default group (``dist.destroy_process_group()``); finalises MPI."""
    _C._dist_destroy()


# MPI must be finalised before the interpreter exits, or mpirun reports the process as failed.
atexit.register(_C._dist_destroy)


def is_initialized():
    """Whether the default group exists."""
    return _C._dist_is_initialized()


def get_rank(group=None):
    """This process's rank."""
    return _C._dist_info()[0]


def get_world_size(group=None):
    """Number of processes in the group."""
    return _C._dist_info()[1]


def get_backend(group=None):
    """The default group's backend name."""
    return _C._dist_info()[2]


class _Done:
    """What ``async_op=True`` returns: the collective has already finished."""

    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True


def _done(async_op):
    return _Done() if async_op else None


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` over the ranks with ``op``, in place on every rank."""
    _C._dist_all_reduce(tensor, op)
    return _done(async_op)


def broadcast(tensor, src, group=None, async_op=False):
    """Rank ``src``'s ``tensor`` on every rank, in place."""
    _C._dist_broadcast(tensor, src)
    return _done(async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Every rank's ``tensor`` copied into ``tensor_list`` (one tensor per rank, in order)."""
    parts = _C._dist_all_gather(tensor)
    if len(tensor_list) != len(parts):
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors for a world "
                         f"of {len(parts)}")
    from . import no_grad
    with no_grad():
        for out, part in zip(tensor_list, parts):
            out.copy_(part)
    return _done(async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Every rank's ``input_tensor`` concatenated along dim 0 into ``output_tensor``."""
    parts = _C._dist_all_gather(input_tensor)
    from . import no_grad
    with no_grad():
        output_tensor.copy_(_C.cat(parts, 0).reshape(output_tensor.shape))
    return _done(async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input`` over the ranks, then this rank's part along dim 0 into ``output``."""
    part = _C._dist_reduce_scatter(input, op)
    from . import no_grad
    with no_grad():
        output.copy_(part)
    return _done(async_op)


def barrier(group=None, async_op=False, device_ids=None):
    """Return once every rank has entered it."""
    _C._dist_barrier()
    return _done(async_op)
