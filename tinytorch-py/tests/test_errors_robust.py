"""Nothing a user types kills the interpreter (issue 48, item 6).

An allocation the system refuses, a size whose byte count overflows, and a panic anywhere
under a binding each raise a ``RuntimeError`` that ``except`` catches, after which the
interpreter keeps working, as PyTorch does; every case runs in this pytest process, so a
regression aborts the whole test run rather than failing one test. Then a table of common
mistakes checks that each raises the exception type PyTorch raises for it (written down from
PyTorch 2.x by hand: `python cases.py` with real torch; CI has no torch)."""

import pytest

import tinytorch as torch
import tinytorch.nn as nn
import tinytorch.nn.functional as F


def _still_alive():
    assert (torch.ones(2, 3) * 2).sum().item() == 12.0


# ---- allocations ------------------------------------------------------------------------

@pytest.mark.parametrize("make", [torch.empty, torch.zeros, torch.ones, torch.rand, torch.randn])
def test_an_allocation_the_system_refuses_is_a_runtime_error(make):
    # 4e18 bytes of float32: PyTorch says "DefaultCPUAllocator: not enough memory: you
    # tried to allocate 4000000000000000000 bytes"; before issue 48 this aborted Python.
    with pytest.raises(RuntimeError, match="you tried to allocate 4000000000000000000 bytes"):
        make(10**12, 10**6)
    _still_alive()


def test_other_creation_paths_refuse_too():
    with pytest.raises(RuntimeError, match="not enough memory"):
        torch.full((10**12, 10**6), 1.5)
    with pytest.raises(RuntimeError, match="not enough memory"):
        torch.randint(0, 5, (10**12, 10**6))
    with pytest.raises(RuntimeError, match="not enough memory"):
        torch.empty(10**9, 10**9, dtype=torch.float64)
    _still_alive()


def test_a_kernel_output_too_large_is_a_runtime_error():
    # The broadcast output of two small tensors: 10^12 float32 elements, 4 TB, allocated
    # inside a kernel, where the failure is a panic that reaches Python as RuntimeError.
    a = torch.ones(10**6, 1)
    b = torch.ones(1, 10**6)
    with pytest.raises(RuntimeError, match="not enough memory"):
        a + b
    _still_alive()


@pytest.mark.parametrize("shape", [(2**40, 2**40), (2**62, 4), (2**31, 2**31, 4)])
def test_a_size_that_overflows_is_a_runtime_error(shape):
    # PyTorch: "Storage size calculation overflowed with sizes=[1099511627776, 1099511627776]".
    with pytest.raises(RuntimeError, match="overflowed"):
        torch.empty(*shape)
    _still_alive()


def test_an_empty_tensor_with_huge_dims_needs_no_memory():
    assert torch.empty(0, 2**40, 2**40).numel() == 0


def test_out_of_memory_error_is_a_runtime_error():
    # torch.OutOfMemoryError (raised for a GPU out of memory) is a RuntimeError subclass.
    assert issubclass(torch.OutOfMemoryError, RuntimeError)
    assert torch.cuda.OutOfMemoryError is torch.OutOfMemoryError


# ---- panics -----------------------------------------------------------------------------

@pytest.mark.parametrize("released_gil", [False, True])
def test_a_panic_is_a_runtime_error_and_the_interpreter_survives(released_gil):
    with pytest.raises(RuntimeError, match="deliberate panic"):
        torch._C._test_panic(released_gil)
    # `except Exception` catches it too (pyo3's PanicException alone is a BaseException).
    try:
        torch._C._test_panic(released_gil)
    except Exception as e:  # noqa: BLE001
        assert isinstance(e, RuntimeError)
    _still_alive()
    # And again: the first panic leaves nothing poisoned behind.
    with pytest.raises(RuntimeError):
        torch._C._test_panic(released_gil)
    _still_alive()


def test_a_panic_inside_a_python_callback_chain_is_a_runtime_error():
    # A panic under a binding that Python called from inside another binding's callback
    # (backward of an autograd.Function): pyo3 resumes the unwind through the outer Rust
    # frame, which raises it again; it is still a RuntimeError.
    class Boom(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            torch._C._test_panic()

    x = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError):
        Boom.apply(x).sum().backward()
    _still_alive()


# ---- exception types: PyTorch's for the same mistake --------------------------------------

x = torch.zeros(3)

# (expression, PyTorch's exception type); every row checked against PyTorch 2.x.
CASES = [
    ("torch.empty(-1)", RuntimeError),
    ("x[5]", IndexError),
    ("x[1.5]", IndexError),
    ("x[torch.tensor([True, False])]", IndexError),
    ("x.sum(dim=5)", IndexError),
    ("torch.zeros(2, 3).transpose(0, 5)", IndexError),
    ("x.unsqueeze(5)", IndexError),
    ("torch.zeros(2, 2).squeeze(3)", IndexError),
    ("x.flatten(2)", IndexError),
    ("F.softmax(x, dim=3)", IndexError),
    ("x.select(0, 5)", IndexError),
    ("x.index_select(0, torch.tensor([5]))", IndexError),
    ("nn.Embedding(3, 2)(torch.tensor([5]))", IndexError),
    ("F.cross_entropy(torch.zeros(2, 3), torch.tensor([0, 5]))", IndexError),
    ("x.gather(0, torch.tensor([7]))", RuntimeError),
    ("torch.zeros(3) + torch.zeros(4)", RuntimeError),
    ("torch.zeros(2, 3) @ torch.zeros(4, 5)", RuntimeError),
    ("x.view(5)", RuntimeError),
    ("x.reshape(2, 2)", RuntimeError),
    ("torch.zeros(2, 3).t().view(6)", RuntimeError),
    ("nn.Linear(3, 4)(torch.zeros(2, 5))", RuntimeError),
    ("nn.Conv2d(3, 4, 3)(torch.zeros(1, 2, 5, 5))", RuntimeError),
    ("torch.zeros('a')", TypeError),
    ("torch.zeros(3, dtype='float')", TypeError),
    ("x.sum(dim='a')", TypeError),
    ("x + 'a'", TypeError),
    ("x < 'a'", TypeError),
    ("nn.Linear('a', 3)", TypeError),
    ("len(torch.tensor(1.0))", TypeError),
    ("iter(torch.tensor(1.0))", TypeError),
    ("torch.tensor('abc')", TypeError),
    ("x.item()", RuntimeError),
    ("float(x)", ValueError),
    ("torch.zeros(3, requires_grad=True).exp().backward()", RuntimeError),
    ("torch.zeros(3).sum().backward()", RuntimeError),
    ("torch.zeros(3, dtype=torch.int64).requires_grad_()", RuntimeError),
    ("torch.zeros(2, requires_grad=True).add_(1)", RuntimeError),
    ("torch.zeros(2, requires_grad=True).numpy()", RuntimeError),
    ("torch.arange(0, 10, 0)", RuntimeError),
    ("torch.zeros(4).view(-1, -1)", RuntimeError),
    ("torch.tensor([[1, 2], [3]])", ValueError),
    ("torch.optim.SGD([], lr=0.1)", ValueError),
    ("torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=-1)", ValueError),
    ("torch.optim.Adam([torch.zeros(1, requires_grad=True)], betas=(1.5, 0.9))", ValueError),
    ("nn.Linear(3, 4).load_state_dict({})", RuntimeError),
    ("torch.load('/nonexistent/file.pt')", FileNotFoundError),
    ("torch.device('foo')", RuntimeError),
    ("x.to('xyz')", RuntimeError),
    ("x.permute(0, 1)", RuntimeError),
    ("x.expand(2)", RuntimeError),
    ("x.masked_fill(torch.zeros(3), 1.0)", RuntimeError),
    ("x.topk(5)", RuntimeError),
    ("x.narrow(0, 2, 5)", RuntimeError),
    ("F.one_hot(torch.tensor([5]), 3)", RuntimeError),
    ("x.chunk(0)", RuntimeError),
    ("torch.cat([])", ValueError),
    ("torch.stack([])", RuntimeError),
    ("torch.cat([torch.zeros(2, 3), torch.zeros(2, 4)])", RuntimeError),
    ("F.pad(x, (1,))", RuntimeError),
    ("torch.multinomial(torch.tensor([0.0, 0.0]), 1)", RuntimeError),
    ("torch.randint(5, 3, (2,))", RuntimeError),
    ("F.mse_loss(torch.zeros(3), torch.zeros(3, 2))", RuntimeError),
    ("F.cross_entropy(torch.zeros(2, 3), torch.zeros(2))", RuntimeError),
    ("torch.tensor([1]) // torch.tensor([0])", RuntimeError),
    ("torch.tensor([5, 3]) % 0", RuntimeError),
    ("torch.utils.data.DataLoader([1, 2], batch_size=0)", ValueError),
    ("nn.Linear(2, 2).nonexistent", AttributeError),
    ("x.nonexistent", AttributeError),
    ("torch.zeros(0).max()", RuntimeError),
    ("torch.zeros(2, 2).repeat(2)", RuntimeError),
    ("x.split(0)", RuntimeError),
]


@pytest.mark.parametrize("expr,expected", CASES, ids=[c[0] for c in CASES])
def test_the_exception_type_is_pytorchs(expr, expected):
    with pytest.raises(Exception) as info:  # noqa: PT011 (the type is checked below)
        eval(expr)
    got = type(info.value)
    assert issubclass(got, expected), f"{expr}: raised {got.__name__}: {info.value}; PyTorch raises {expected.__name__}"
