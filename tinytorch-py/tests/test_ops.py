"""Every expression of cases.py against PyTorch: values, dtypes, shapes, and the gradients of
each float input."""

import pytest

import tinytorch as torch
from cases import CASES, inputs
from conftest import check_op_case, fixture

REF = fixture("ops.safetensors")


@pytest.mark.parametrize("name,expr", CASES, ids=[c[0] for c in CASES])
def test_matches_pytorch(name, expr):
    check_op_case(name, expr, inputs(torch), REF)
