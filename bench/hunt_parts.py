"""Where a hunt's time goes, part by part, for bench/hunt_cpu.py's `--parts`.

`Parts` wraps, for the length of a `with` block, the hunt's own functions (nothing in
plugpull changes) and adds up per part:

- the CPU seconds of each guest command and QMP disk operation, read from the QEMU's
  /proc/PID/stat before and after it, told apart by the thread that sent it (the recorder's
  thread, `plugpull-recorder`, or a checker's); a plug's wait for the guest to see the disk
  is the plug's; the recording guest's CPU between its start command and its `umount` is the
  workload itself;
- the host's own work, in CPU seconds of the thread that does it (`time.thread_time`):
  recording a workload (copies, stamps, the record), planning and materialising states,
  copying them into slots, judging (the oracle), the journal line and a failing workload's
  artifacts;
- the host's fsck, in CPU seconds of its process (the children's rusage, one fsck at a time);
- inside the checker guest, its own clock (/proc/uptime, read by shell builtins only, so
  the guest starts no process for it) around the slots' `blockdev --flushbufs`, each
  recovery mount, the collect (`pp-tree`'s walk and the step after recovery) and each unmount: pp-check is sourced by the
  command, with `mount` and `umount` as shell functions that stamp the time, and the stamps
  are read from each checker guest before it closes. Guest seconds are wall seconds of the
  guest: on a quiet machine they are close to its QEMU's CPU, on a loaded one longer.
"""

import os
import resource
import shlex
import threading
import time
from collections import defaultdict
from contextlib import ExitStack, contextmanager

from plugpull.check import hostfsck, hotbatch
from plugpull.check.hotguest import HotGuest
from plugpull.check.slots import Slots
from plugpull.crash import judge
from plugpull.guest.qemu.machine import Machine
from plugpull.hunt import hunter
from plugpull.hunt.journal import Journal
from plugpull.hunt.record import Recorder

TICK = os.sysconf("SC_CLK_TCK")
STAMPS = "/tmp/pp-times"
STAMP = f'pp_t() {{ read pp_u pp_x </proc/uptime; echo "$1 $pp_u" >>{STAMPS}; }}; '
TIMED = ('mount() { pp_t m0; command mount "$@"; pp_r=$?; pp_t m1; return $pp_r; }; '
         'umount() { pp_t u0; command umount "$@"; pp_r=$?; pp_t u1; return $pp_r; }; ')


def qemu_cpu(m) -> float:
    """CPU seconds (user + system) of the guest's QEMU so far; 0 once it is gone."""
    try:
        with open(f"/proc/{m.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except (OSError, TypeError, IndexError, ValueError):
        return 0.0


def role() -> str:
    return "recording" if threading.current_thread().name.startswith("plugpull-recorder") else "checking"


class Parts:
    """The parts' seconds (`cpu`), counts (`count`) and the checker guests' clock (`guest`)."""

    def __init__(self):
        self.cpu: dict[str, float] = defaultdict(float)
        self.count: dict[str, int] = defaultdict(int)
        self.guest: dict[str, float] = defaultdict(float)
        self._lock, self._fsck, self._local = threading.Lock(), threading.Lock(), threading.local()
        self._since: dict[int, float] = {}  # recording QEMU pid -> its CPU when its start command ended

    def add(self, part: str, seconds: float, count: int = 1) -> None:
        with self._lock:
            self.cpu[part] += seconds
            self.count[part] += count

    def __enter__(self):
        self._stack = ExitStack()
        for owner, name, wrap in self._wrappers():
            self._stack.enter_context(_patched(owner, name, wrap(getattr(owner, name))))
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()

    def _wrappers(self):
        host = self._host_cpu
        return [(Machine, "run", self._run), (Machine, "attach_disk", self._qmp("attach")),
                (Machine, "detach_disks", self._qmp("detach")),
                (Recorder, "record", host("recording, host")), (judge, "plan_states", host("materialising")),
                (judge, "build_state", host("materialising")), (Slots, "fill", host("slots fill")),
                (judge, "_classified", host("judge")), (hunter, "_judged_line", host("journal and artifacts")),
                (Journal, "append", host("journal and artifacts")), (hostfsck, "run", self._fsck_run),
                (hotbatch, "many_command", self._timed_command), (Slots, "forget_command", self._stamped_forget),
                (hotbatch.HotBatch, "check_many", self._many), (HotGuest, "close", self._stamps_read)]

    def _host_cpu(self, part: str):
        def wrap(f):
            def timed(*args, **kwargs):
                t0 = time.thread_time()
                try:
                    return f(*args, **kwargs)
                finally:
                    self.add(part, time.thread_time() - t0)
            return timed
        return wrap

    def _run(self, f):
        def run(m, command, *args, **kwargs):
            if getattr(self._local, "plugging", False):
                return f(m, command, *args, **kwargs)  # a plug's wait for the guest: counted with the plug
            who, c0 = role(), qemu_cpu(m)
            what = "umount" if command.startswith("umount ") else "pp-check" if "pp-check" in command else "command"
            if who == "recording" and what == "umount" and m.pid in self._since:
                self.add("recording QEMU: the workload", c0 - self._since.pop(m.pid))
            try:
                return f(m, command, *args, **kwargs)
            finally:
                c1 = qemu_cpu(m)
                self.add(f"{who} QEMU: {what}s", c1 - c0)
                if who == "recording" and what == "command":
                    self._since[m.pid] = c1
        return run

    def _qmp(self, what: str):
        def wrap(f):
            def op(m, *args, **kwargs):
                c0, self._local.plugging = qemu_cpu(m), True
                try:
                    return f(m, *args, **kwargs)
                finally:
                    self._local.plugging = False
                    self.add(f"{role()} QEMU: {what}", qemu_cpu(m) - c0)
            return op
        return wrap

    def _fsck_run(self, f):
        def run(*args, **kwargs):
            with self._fsck:  # one at a time, so the children's rusage is this fsck's
                k0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                try:
                    return f(*args, **kwargs)
                finally:
                    k1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                    self.add("host fsck", k1.ru_utime + k1.ru_stime - k0.ru_utime - k0.ru_stime)
        return run

    def _many(self, f):
        def check_many(batch, guest, jobs):
            self.add("states a checker command", 0.0, len(jobs))
            return f(batch, guest, jobs)
        return check_many

    def _timed_command(self, f):
        def many_command(mount_type, subdir, collect, luns, fsck=True):
            words = shlex.split(f(mount_type, subdir, collect, luns, fsck))[1:]  # less `pp-check`
            return (STAMP + "pp_t c0; (" + TIMED + "set -- " + " ".join(map(shlex.quote, words))
                    + "; . /usr/bin/pp-check); pp_r=$?; pp_t c1; exit $pp_r")
        return many_command

    def _stamped_forget(self, f):
        def forget_command(slots, count):
            return STAMP + "pp_t f0; " + f(slots, count) + "pp_t f1; "
        return forget_command

    def _stamps_read(self, f):
        def close(guest):
            m = guest.machine
            if m is not None and m.alive():
                try:
                    self.read_stamps(m.run(f"cat {STAMPS} 2>/dev/null; rm -f {STAMPS}").text)
                except Exception:
                    pass  # a guest that no longer answers keeps its stamps
            return f(guest)
        return close

    def read_stamps(self, text: str) -> None:
        """Per part, the guest seconds between its stamps: f0-f1 the slots' flushbufs, c0-c1
        the command's pp-check, m0-m1 a mount, m1-u0 the collect (pp-tree's walk and the step
        after recovery, one process), u0-u1 an unmount."""
        last: dict[str, float] = {}
        spans = {"f1": ("f0", "guest: blockdev --flushbufs"), "c1": ("c0", "guest: pp-check --many, all of it"),
                 "m1": ("m0", "guest: recovery mount"),
                 "u0": ("m1", "guest: collect (pp-tree: the walk, the step after recovery)"),
                 "u1": ("u0", "guest: unmount")}
        with self._lock:
            for line in text.splitlines():
                try:
                    label, at = line.split()[0], float(line.split()[1])
                except (IndexError, ValueError):
                    continue
                if label in spans and spans[label][0] in last:
                    self.guest[spans[label][1]] += at - last[spans[label][0]]
                    if label == "m1":
                        self.guest["mounts"] += 1
                last[label] = at


@contextmanager
def _patched(owner, name: str, replacement):
    original = getattr(owner, name)
    setattr(owner, name, replacement)
    try:
        yield
    finally:
        setattr(owner, name, original)


def table(fs: str, parts: Parts, distinct: int, workloads: int, totals: dict) -> list[str]:
    """The parts as rows, CPU seconds per distinct state with how many of each a state and a
    workload took, then the checker guests' clock; `totals`, hunt_cpu's sums of the same run
    (its QEMUs sampled, this process, the other children), give each group's rest."""
    d, w = max(distinct, 1), max(workloads, 1)
    rest = {"recording QEMU: the rest (boot, idle, console)": totals["recording QEMU"] - _sum(parts, "recording QEMU"),
            "checking QEMU: the rest (boot, idle, slots plugged)": totals["checker QEMUs"] - _sum(parts, "checking QEMU"),
            "plugpull: the rest (threads, acks, progress, this sampler)": totals["plugpull"] - _sum(parts, "", host=True),
            "tools but fsck (mkfs, qemu-img)": totals["fsck and tools"] - parts.cpu["host fsck"]}
    rows = [f"{fs}: where the CPU goes, per distinct state ({distinct} distinct states, {workloads} workloads)",
            f"  {'part':52} {'CPU s':>7} {'a state':>8} {'a workload':>10}"]
    for part in sorted(k for k in parts.cpu if not k.startswith("states a")) + sorted(rest):
        seconds = parts.cpu[part] if part in parts.cpu else rest[part]
        counted = f"{parts.count[part] / d:8.2f} {parts.count[part] / w:10.2f}" if part in parts.cpu else ""
        rows.append(f"  {part:52} {seconds / d:7.4f} {counted}")
    rows.append(f"  {'sum':52} {sum(totals.values()) / d:7.4f}")
    for part in sorted(k for k in parts.guest if k != "mounts"):
        rows.append(f"  {part:52} {parts.guest[part] / d:7.4f} s of the guest's clock a state")
    per_command = parts.count["states a checker command"] / max(parts.count["checking QEMU: pp-checks"], 1)
    rows.append(f"  checker guests' mounts timed: {parts.guest['mounts']:.0f}; states a checker command: {per_command:.2f}")
    return rows


HOST_PARTS = ("recording, host", "materialising", "slots fill", "judge", "journal and artifacts")


def _sum(parts: Parts, prefix: str, host: bool = False) -> float:
    return sum(s for k, s in parts.cpu.items() if (k in HOST_PARTS if host else k.startswith(prefix)))
