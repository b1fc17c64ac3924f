"""The libvirt claim cell (xfs, barrier, fsync-files count=6, cut at acks:4, drop-unflushed)
recorded ROUNDS times, two recordings at a time, every state judged on one kept checker guest
hot-plugged through libvirt, as the claim test does. Prints each state's verdict; a state that
is not clean is kept (with its record) under OUT.

    .venv/bin/python bench/hot_claim_repro.py OUT [ROUNDS] [STATES]
"""

import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from plugpull.guest.backends import prepare_backend
from plugpull.guest.image import build_image
from plugpull.guest.machine import resolve_accel
from plugpull.guest.config import Accel
from plugpull.guest.rig import Rig
from plugpull.lab.checker import Checker, _HotGuest
from plugpull.lab.crash import crash_jobs
from plugpull.lab.judge import judge, remove_states
from plugpull.lab.record import record
from plugpull.lab.spec import CrashSpec
from plugpull.powerloss.writelog import iter_entries


def cell(states: int) -> CrashSpec:
    return CrashSpec(fs="xfs", mode="barrier", workload="fsync-files", params=(("count", 6),),
                     models=("drop-unflushed",), states=states, seed=1, trigger="acks:4", workers=1)


class KeptGuestChecker(Checker):
    """Every state on one guest kept up across rounds, as the claim test checks them."""

    guest = None

    def check(self, states, progress=None, collect=None):
        out = []
        for index, (state, what) in enumerate(zip(states, collect)):
            obs, trusted = self._plug_and_check(self.guest, index, state, what)
            assert trusted, f"the kept checker guest cannot go on after state {index}: {obs}"
            out.append(obs)
        return out


def judge_on(guest, rig, spec, rec, root: Path, name: str) -> list[str]:
    plan = spec.resolve()
    checker = KeptGuestChecker(rig, plan.fs)
    checker.guest = guest
    entries = list(iter_entries(rec.log))
    judged = judge(rec, crash_jobs(rec, entries, spec, plan.models), checker, plan.workload, spec.seed,
                   root / f"states-{name}", entries)
    out = []
    for j in judged:
        verdict, image = str(j[0].verdict), j[2].images[0]
        out.append(verdict)
        print(name, image.name, verdict, j[0].reason, flush=True)
        if verdict != "clean":
            keep = root / "kept" / name
            keep.mkdir(parents=True, exist_ok=True)
            shutil.copy(image, keep / image.name)
            (keep / f"{image.name}.obs").write_text(repr(j[1]))
    remove_states([j[2] for j in judged])
    return out


def main() -> None:
    root = Path(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    states = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    prepared = prepare_backend("libvirt")
    image = build_image()
    rig = Rig(image, resolve_accel(Accel.AUTO, image).accel, prepared.backend)
    spec = cell(states)
    plan = spec.resolve()
    guest = _HotGuest(Checker(rig, None))
    tally: dict[str, int] = {}
    try:
        with ThreadPoolExecutor(2) as pool:
            for r in range(0, rounds, 2):
                names = [f"r{i:02d}" for i in range(r, min(r + 2, rounds))]
                recs = list(pool.map(lambda n: record(root / n, plan.recording_bed, plan.trigger, rig), names))
                for name, rec in zip(names, recs):
                    for v in judge_on(guest, rig, spec, rec, root, name):
                        tally[v] = tally.get(v, 0) + 1
                    if not (root / "kept" / name).exists():
                        shutil.rmtree(root / name, ignore_errors=True)
    finally:
        guest.close()
        prepared.close()
    print("tally", tally)


if __name__ == "__main__":
    main()
