"""Optimizers and schedulers: two short training runs (SGD with momentum and StepLR over a
DataLoader; a CNN with Adam and clipping) and every scheduler's learning-rate sequence,
against PyTorch's."""

import pytest

import tinytorch as torch
import tinytorch.nn as nn
import tinytorch.nn.functional as F
import tinytorch.optim as optim
import models
from conftest import assert_close, fixture


def test_training_runs_match_pytorch():
    ref = fixture("train.safetensors")
    for name, losses in models.training_runs(torch, nn, F).items():
        assert_close(torch.tensor(losses, dtype=torch.float64), ref[name], atol=2e-5,
                     rtol=2e-5, what=name)


def test_scheduler_sequences_match_pytorch():
    ref = fixture("lr.safetensors")
    for name, lrs in models.lr_sequences(torch).items():
        assert_close(torch.tensor(lrs, dtype=torch.float64), ref[name], atol=1e-12,
                     rtol=1e-12, what=name)


def test_param_groups_state_dict_round_trip():
    a = nn.Linear(3, 2)
    opt = optim.Adam([{"params": [a.weight]}, {"params": [a.bias], "lr": 0.5}], lr=0.1)
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[0]["betas"] == (0.9, 0.999)
    a(torch.ones(1, 3)).sum().backward()
    opt.step()
    sd = opt.state_dict()
    assert sorted(sd["state"]) == [0, 1] and "exp_avg" in sd["state"][0]
    b = nn.Linear(3, 2)
    b.load_state_dict(a.state_dict())
    opt2 = optim.Adam([{"params": [b.weight]}, {"params": [b.bias], "lr": 0.5}], lr=0.1)
    opt2.load_state_dict(sd)
    for m, o in ((a, opt), (b, opt2)):
        m.zero_grad()
        m(torch.ones(1, 3)).sum().backward()
        o.step()
    assert a.weight.equal(b.weight) and a.bias.equal(b.bias)


def test_lr_changes_in_param_groups_reach_the_engine():
    p = nn.Parameter(torch.zeros(1))
    opt = optim.SGD([p], lr=1.0)
    p.grad = torch.ones(1)
    opt.step()
    opt.param_groups[0]["lr"] = 0.25
    opt.step()
    assert p.item() == -1.25


def test_bad_arguments():
    with pytest.raises(ValueError):
        optim.SGD([nn.Parameter(torch.zeros(1))], lr=-1)
    with pytest.raises(TypeError):
        optim.SGD([nn.Parameter(torch.zeros(1))], lr=0.1, betas=(0.9, 0.9))
    with pytest.raises(ValueError):
        optim.Adam([], lr=0.1)
