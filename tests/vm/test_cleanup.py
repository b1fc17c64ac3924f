"""Nothing outlives a guest: not QEMU, not plugpull's temp dirs, whatever stops the run."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from plugpull.paths import ROOT, our_tempdirs, sweep_stale_tempdirs

pytestmark = pytest.mark.vm

BOOT_AND_WAIT = textwrap.dedent("""
    import sys, time
    from plugpull.guest.contract.config import MachineSpec, Accel
    from plugpull.guest.image.build import build_image
    from plugpull.guest.qemu.machine import Machine
    with Machine(MachineSpec(), build_image(), Accel(sys.argv[1])) as m:
        print("qemu", m.pid, flush=True)
        time.sleep(600)
""")


def children_qemu(pid: int) -> list[int]:
    """The guests (QEMUs started with -nodefaults) whose parent is `pid`. A `qemu-system-x86_64
    --version` that plugpull runs to name the QEMU it uses is not one: counting it made a test
    see a guest that was not there yet, then miss it on the next look."""
    out = subprocess.run(["pgrep", "-f", "qemu-system"], capture_output=True, text=True).stdout
    found = []
    for q in map(int, out.split()):
        try:
            status = Path(f"/proc/{q}/status").read_text()
            argv = Path(f"/proc/{q}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"PPid:\t{pid}\n" in status and b"-nodefaults" in argv:
            found.append(q)
    return found


def gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.split(") ", 1)[1].startswith("Z")


def dirs_of(pid: int) -> list[Path]:
    return [p for p in our_tempdirs() if p.name.startswith(f"plugpull-{pid}-")]


def start(accel):
    return subprocess.Popen([sys.executable, "-c", BOOT_AND_WAIT, accel], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)


def test_sigint_after_boot_leaves_nothing(accel):
    proc = start(accel.value)
    qemu_pid = int(proc.stdout.readline().split()[1])
    assert not gone(qemu_pid) and dirs_of(proc.pid)
    proc.send_signal(signal.SIGINT)
    proc.wait(30)
    assert gone(qemu_pid), "QEMU outlived its Machine"
    assert dirs_of(proc.pid) == []


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_killed_plugpull_takes_qemu_along_and_a_later_run_sweeps_its_dir(sig, accel):
    proc = start(accel.value)
    qemu_pid = int(proc.stdout.readline().split()[1])
    proc.send_signal(sig)
    proc.wait(30)
    deadline = time.monotonic() + 10
    while not gone(qemu_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(qemu_pid)
    assert dirs_of(proc.pid), "expected the killed run's temp dir to be left behind"
    sweep_stale_tempdirs()
    assert dirs_of(proc.pid) == []


def inner_pytest_with_a_guest(test: Path):
    """An inner pytest run of `test`, once its guest is up: (process, its QEMUs, its output so
    far). An inner run that ends before it starts a guest is run once more: one ended within a
    second, its output not yet read, in one `make test` of many (not explained); a second such
    end fails, with the inner run's exit code and output."""
    __tracebackhide__ = True
    for attempt in (1, 2):
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "fixtures.plugin", "--rootdir",
             str(ROOT), "-c", str(ROOT / "pytest.ini"), str(test)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        lines: list[str] = []  # read as it comes: a full pipe would stop the inner pytest
        reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
        reader.start()
        deadline = time.monotonic() + 240
        while not children_qemu(proc.pid) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        qemus = seen_again(proc)
        if qemus or proc.poll() is None or attempt == 2:
            break
        reader.join(10)
    if not qemus:
        code = proc.poll()
        proc.kill()  # its guest goes with it (parent-death signal)
        reader.join(10)
        assert qemus, f"the inner pytest never started a guest (exit {code}): " + "".join(lines[-30:])
    return proc, qemus, lines, reader


def seen_again(proc) -> list[int]:
    """The inner run's guests, looked for again for up to 2 s (a guest is looked for until it
    stays: before `children_qemu` left out `qemu --version`, one look saw that, the next none)."""
    deadline = time.monotonic() + 2
    while not (qemus := children_qemu(proc.pid)) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    return qemus


def test_interrupted_pytest_vm_run_leaves_nothing(tmp_path):
    test = tmp_path / "test_slow_guest.py"
    test.write_text("def test_boot(vm):\n    vm.run('sleep 600', timeout=None)\n")
    proc, qemus, lines, reader = inner_pytest_with_a_guest(test)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    reader.join(10)
    out = "".join(lines)
    time.sleep(0.2)
    assert all(gone(q) for q in qemus), out
    assert dirs_of(proc.pid) == [], out


CHECK_AND_WAIT = textwrap.dedent("""
    import sys
    from pathlib import Path
    from plugpull.check.checker import Checker
    from plugpull.guest.contract.config import Accel
    from plugpull.guest.image.build import build_image
    from plugpull.guest.qemu.machine import create_disk
    from plugpull.guest.rig import Rig
    from plugpull.powerloss.crashstate import CrashState
    from plugpull.testbed.fs import filesystem
    d = Path(sys.argv[2])
    states = [CrashState.of(create_disk(d / f"s{i}.img", 64)) for i in range(48)]
    print("checking", flush=True)
    Checker(Rig(build_image(), Accel(sys.argv[1])), filesystem("xfs"), batch=24, workers=2).check(
        states, progress=lambda: print("checked", flush=True))
""")


def test_sigint_while_checking_on_two_guests_stops_both(accel, tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", CHECK_AND_WAIT, accel.value, str(tmp_path)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout.readline().strip() == "checking"
    assert proc.stdout.readline().strip() == "checked", "no state was checked"
    qemus = children_qemu(proc.pid)
    assert len(qemus) == 2, "expected two checker guests at once"
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=60)
    checked = 1 + rest.split().count("checked")
    assert checked < 48, "Ctrl-C let the guests check every state before stopping"
    assert all(gone(q) for q in qemus)
    assert dirs_of(proc.pid) == []
