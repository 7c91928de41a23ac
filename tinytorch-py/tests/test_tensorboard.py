"""torch.utils.tensorboard.SummaryWriter: event files in TensorBoard's format (TFRecord
framing with masked CRC-32C, Event protocol buffers), read back field by field."""

import glob
import os

import pytest

import tinytorch as torch
from tinytorch.utils.tensorboard import SummaryWriter
from tinytorch.utils.tensorboard._event_file import crc32c, masked_crc32c, read_events


def test_crc32c_known_values():
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    assert crc32c(b"") == 0
    assert masked_crc32c(b"") == 0xA282EAD8


def test_scalars_round_trip(tmp_path):
    with SummaryWriter(str(tmp_path)) as w:
        assert w.get_logdir() == str(tmp_path)
        for step in range(3):
            w.add_scalar("loss/train", torch.tensor(1.5 - step), step)
        w.add_scalar("lr", 0.1, global_step=torch.tensor(7), walltime=123.0)
        w.add_scalars("acc", {"train": 0.9, "val": 0.8}, 2)
    files = glob.glob(str(tmp_path / "events.out.tfevents.*"))
    assert len(files) == 1
    events = read_events(files[0])
    assert events[0]["file_version"] == "brain.Event:2"
    scalars = [(e["step"], e["values"][0]) for e in events[1:]]
    assert scalars[:3] == [(0, ("loss/train", 1.5)), (1, ("loss/train", 0.5)),
                           (2, ("loss/train", -0.5))]
    assert scalars[3][0] == 7 and scalars[3][1][0] == "lr"
    assert scalars[3][1][1] == pytest.approx(0.1) and events[4]["wall_time"] == 123.0
    for name, value in (("train", 0.9), ("val", 0.8)):
        sub = glob.glob(str(tmp_path / f"acc_{name}" / "events.out.tfevents.*"))
        ev = read_events(sub[0])
        assert ev[1]["step"] == 2 and ev[1]["values"][0][0] == "acc"
        assert ev[1]["values"][0][1] == pytest.approx(value)


def test_histogram(tmp_path):
    pytest.importorskip("numpy")
    values = torch.tensor([-1.0, 0.5, 0.5, 2.0, 3.0])
    with SummaryWriter(str(tmp_path)) as w:
        w.add_histogram("weights", values, 1)
        w.add_histogram("coarse", values, 2, bins=4)
        w.add_histogram("merged", values, 3, max_bins=10)
    events = read_events(glob.glob(str(tmp_path / "events.out.tfevents.*"))[0])
    tag, h = events[1]["values"][0]
    assert tag == "weights" and events[1]["step"] == 1
    assert (h["min"], h["max"], h["num"], h["sum"], h["sum_squares"]) == (-1.0, 3.0, 5.0, 5.0,
                                                                          14.5)
    assert sum(h["bucket"]) == 5 and len(h["bucket"]) == len(h["bucket_limit"])
    # every value lies below its bucket's upper limit and above the previous one
    assert h["bucket_limit"][-1] >= 3.0
    _, coarse = events[2]["values"][0]
    assert sum(coarse["bucket"]) == 5
    _, merged = events[3]["values"][0]
    assert sum(merged["bucket"]) == 5 and len(merged["bucket"]) <= 11


def test_default_log_dir_and_graph_warning(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_exp")
    assert w.get_logdir().startswith("runs" + os.sep) and w.get_logdir().endswith("_exp")
    with pytest.warns(UserWarning, match="cannot trace"):
        w.add_graph(torch.nn.Linear(2, 2))
    w.close()
