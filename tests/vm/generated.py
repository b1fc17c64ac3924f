"""What each operation table's VM test asks of its workloads: recorded in a guest on the host's
kernel with barriers, crashed at states around its points, every state judged clean by the
oracle, and one of them cut after the last point (so that what the last point owes was judged)."""

from plugpull.crash.spec import CrashSpec
from plugpull.generate.space import Workload

STATES = 10


def judged_clean_with_barriers(crash_run, fs: str, workload: Workload) -> None:
    run = crash_run(CrashSpec(fs=fs, mode="barrier", workload=f"gen:{workload.ident}", models=("reorder",),
                              states=STATES, seed=1, trigger="end"))
    every_ack = len(workload.points()) + 1  # ack 0 ends the setup, synced or not
    assert any(s.acks_required >= every_ack for s in run.states), "no state after the last point"
    assert run.summary["infra-error"] == 0
    assert [(s.cut, s.verdict, s.reason) for s in run.states if s.verdict != "clean"] == []
