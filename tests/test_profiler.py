"""chainrule.profiler / autograd.profiler: what is recorded, the rows and the table's
layout, schedules, Chrome traces; compared with PyTorch's API where it is installed."""

import json

import numpy as np

import chainrule as cr
from chainrule import _state

try:
    import torch
except ImportError:
    torch = None


def test_profile_records_ops_and_ranges():
    x = cr.ones(4, 4)
    w = cr.ones(4, 4, requires_grad=True)
    with cr.profiler.profile(activities=[cr.profiler.ProfilerActivity.CPU]) as prof:
        with cr.profiler.record_function("block"):
            y = (w * x).sum()
        for _ in range(3):
            z = x + 1
    assert not _state.STATE.flags & _state.SLOW  # off again after the profile
    rows = {r.key: r for r in prof.key_averages()}
    assert set(rows) == {"block", "aten::mul", "aten::sum", "aten::add"}
    assert rows["aten::add"].count == 3 and rows["block"].count == 1
    block = rows["block"]
    inner = rows["aten::mul"].cpu_time_total + rows["aten::sum"].cpu_time_total
    assert block.cpu_time_total >= inner
    np.testing.assert_allclose(block.self_cpu_time_total, block.cpu_time_total - inner)
    np.testing.assert_allclose(rows["aten::add"].cpu_time,
                               rows["aten::add"].cpu_time_total / 3)
    assert y.item() == 16.0 and z.tolist() == (x + 1).tolist()  # outputs unchanged


def test_table_layout():
    x = cr.ones(2)
    with cr.autograd.profiler.profile() as prof:
        with cr.autograd.profiler.record_function("my_block"):
            x * 2
    lines = prof.key_averages().table(sort_by="cpu_time_total", row_limit=10).splitlines()
    width = len("aten::mul") + 4
    rule = "-" * width + "  " + "  ".join(["-" * 12] * 6) + "  "
    assert lines[0] == rule and lines[2] == rule and lines[-2] == rule
    assert lines[1] == ("Name".rjust(width) + "    Self CPU %      Self CPU   CPU total %     "
                        "CPU total  CPU time avg    # of Calls  ")
    assert lines[3].split()[0] == "my_block" and lines[4].split()[0] == "aten::mul"
    assert lines[-1].startswith("Self CPU time total: ") and lines[-1].endswith("us")


def test_nothing_recorded_outside_and_when_disabled():
    with cr.autograd.profiler.profile(enabled=False) as prof:
        cr.ones(2) * 2
    assert len(prof.key_averages()) == 0
    with cr.profiler.record_function("alone"):  # no profile: nothing to do
        cr.ones(2) * 2


def test_schedule_and_trace(tmp_path):
    sch = cr.profiler.schedule(wait=1, warmup=1, active=2, repeat=1)
    A = cr.profiler.ProfilerAction
    assert [sch(i) for i in range(5)] == [A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE,
                                          A.NONE]
    seen = []
    x = cr.ones(2)
    with cr.profiler.profile(schedule=sch, on_trace_ready=lambda p: seen.append(
            [r.count for r in p.key_averages()])) as prof:
        for _ in range(6):
            x * 2
            prof.step()
    assert seen == [[2]]
    handler = cr.profiler.tensorboard_trace_handler(str(tmp_path / "tb"), worker_name="w")
    with cr.profiler.profile(on_trace_ready=handler):
        x * 2
    (path,) = (tmp_path / "tb").iterdir()
    assert path.name.startswith("w.") and path.name.endswith(".pt.trace.json")
    trace = json.loads(path.read_text())
    (event,) = trace["traceEvents"]
    assert event["name"] == "aten::mul" and event["ph"] == "X" and event["dur"] >= 0


def test_api_names_match_torch():
    if torch is None:
        return
    for name in ("profile", "record_function", "ProfilerActivity", "schedule",
                 "tensorboard_trace_handler", "ProfilerAction"):
        assert hasattr(cr.profiler, name) and hasattr(torch.profiler, name)
    A, T = cr.profiler.ProfilerAction, torch.profiler.ProfilerAction
    kw = {"wait": 2, "warmup": 1, "active": 3, "repeat": 2, "skip_first": 1}
    assert [A(cr.profiler.schedule(**kw)(i)).name for i in range(20)] == \
        [T(torch.profiler.schedule(**kw)(i)).name for i in range(20)]
    with torch.profiler.profile() as tp:
        torch.ones(2) * 2
    with cr.profiler.profile() as cp:
        cr.ones(2) * 2
    want = {a for a in dir(tp.key_averages()[0]) if not a.startswith("_")}
    got = {a for a in dir(cp.key_averages()[0]) if not a.startswith("_")}
    assert {"key", "count", "cpu_time_total", "self_cpu_time_total", "cpu_time"} <= want & got
    assert "aten::mul" in {r.key for r in tp.key_averages()} & {r.key for r in cp.key_averages()}
