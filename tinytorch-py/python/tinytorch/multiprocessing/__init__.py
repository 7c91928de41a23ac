"""``torch.multiprocessing``: Python's ``multiprocessing`` (re-exported) and ``spawn``,
which runs ``fn(i, *args)`` in ``nprocs`` new processes and reports a failure in any of
them as ``ProcessRaisedException`` (with the child's traceback) or
``ProcessExitedException``."""

import multiprocessing as _mp
import traceback
from multiprocessing import *  # noqa: F401,F403


class ProcessException(Exception):
    """A spawned process failed."""

    def __init__(self, msg, error_index=-1, pid=None):
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid


class ProcessRaisedException(ProcessException):
    """A spawned process raised; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A spawned process exited with a non-zero code."""

    def __init__(self, msg, error_index, pid, exit_code):
        super().__init__(msg, error_index, pid)
        self.exit_code = exit_code


def _run(fn, i, args, errors):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:
        errors.put((i, traceback.format_exc()))
        raise SystemExit(1)


class ProcessContext:
    """The processes of one ``spawn``: ``join()`` waits for all, raising on a failure."""

    def __init__(self, processes, errors):
        self.processes, self._errors = processes, errors

    def pids(self):
        """The process ids."""
        return [p.pid for p in self.processes]

    def join(self, timeout=None):
        """Wait for the processes; True when all finished, else raise for the first that
        failed (terminating the others)."""
        for p in self.processes:
            p.join(timeout)
        failed = [(i, p) for i, p in enumerate(self.processes) if p.exitcode not in (0, None)]
        if failed:
            for p in self.processes:
                if p.is_alive():
                    p.terminate()
            i, p = failed[0]
            reports = {}
            while not self._errors.empty():
                index, tb = self._errors.get()
                reports[index] = tb
            if i in reports:
                raise ProcessRaisedException(f"\n\n-- Process {i} terminated with the following "
                                             f"error:\n{reports[i]}", i, p.pid)
            raise ProcessExitedException(f"process {i} terminated with exit code {p.exitcode}",
                                         i, p.pid, p.exitcode)
        return all(p.exitcode is not None for p in self.processes)


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Run ``fn(i, *args)`` for i in ``range(nprocs)``, each in a new process started with
    ``start_method``; with ``join``, wait and raise on a failure, else return the
    ``ProcessContext``."""
    ctx = _mp.get_context(start_method)
    errors = ctx.SimpleQueue()
    processes = []
    for i in range(nprocs):
        p = ctx.Process(target=_run, args=(fn, i, args, errors), daemon=daemon)
        p.start()
        processes.append(p)
    context = ProcessContext(processes, errors)
    if not join:
        return context
    while not context.join():
        pass
    return None


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """``spawn`` with the start method as an argument (PyTorch's general form)."""
    return spawn(fn, args, nprocs, join, daemon, start_method)
