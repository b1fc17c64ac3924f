"""A guest restored instead of booted: its RAM and devices saved once, started again from there.

A checker guest that is up and idle (its agent waiting on the command port) is saved with
QMP `migrate` to a file, and further guests of the same machine start with `-incoming` from
that file: under TCG a restore is much faster than a boot. The file is cached beside the
image, under the image's directory and a key of everything the saved state depends on: the
QEMU command line (image, accelerator, machine, devices), the QEMU version. A state saved
under one accelerator never starts under another.

The restored guest's channels are the new process's sockets: the agent, blocked reading its
port, reads the next command from them. Its clock is the one it was saved with, so it is set
to the host's before the guest is used: a check must not see the recorded filesystem's
timestamps in its future.
"""

import hashlib
import logging
import shlex
import threading
import time
from pathlib import Path

from plugpull.errors import GuestError, LaunchError
from plugpull.files import atomic_path
from plugpull.guest.contract.config import Accel, ChannelFds, MachineSpec
from plugpull.guest.image.build import GuestImage
from plugpull.guest.qemu.argv import qemu_argv

log = logging.getLogger(__name__)

SAVED_DIR = "saved"
MIGRATE_TIMEOUT = 120.0
PLACEHOLDER_FDS = ChannelFds(0, 0, 0)
_saving = threading.Lock()
_unusable: set[Path] = set()  # saved states that did not come up in this process: boot instead


def state_key(spec: MachineSpec, image: GuestImage, accel: Accel, qemu_version: str) -> str:
    """What a saved state depends on: the command line it was saved under, but for the
    channels' fds and the console's path, which differ per process, and QEMU's version."""
    argv = qemu_argv(spec, image, accel, PLACEHOLDER_FDS, Path("console.log"))
    return hashlib.sha256(f"{qemu_version}\0{shlex.join(argv)}".encode()).hexdigest()[:16]


def saved_state_path(spec: MachineSpec, image: GuestImage, accel: Accel, qemu_version: str) -> Path:
    return image.kernel.parent / SAVED_DIR / f"{accel}-{state_key(spec, image, accel, qemu_version)}.vmstate"


def await_migration(qmp, timeout: float = MIGRATE_TIMEOUT) -> None:
    """Until QEMU's MIGRATION event says the stream is complete (either side)."""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        event = qmp.pull_event(wait=float(left))
        if not event or event.get("event") != "MIGRATION":
            continue
        status = event.get("data", {}).get("status")
        if status == "completed":
            return
        if status in ("failed", "cancelled"):
            raise GuestError(f"migration {status}")
    raise GuestError(f"migration did not complete within {timeout:.0f} s")


def save(qmp, dest: Path) -> None:
    """Save the running guest to `dest`, atomically; the guest stays paused after it."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(dest) as tmp:
        qmp.cmd("migrate-set-capabilities", capabilities=[{"capability": "events", "state": True}])
        qmp.cmd("migrate", uri=f"exec:cat > {shlex.quote(str(tmp))}")
        await_migration(qmp)


def load(qmp, source: Path) -> None:
    """Feed a guest started with `-incoming defer` its saved state; it runs once loaded."""
    qmp.cmd("migrate-set-capabilities", capabilities=[{"capability": "events", "state": True}])
    qmp.cmd("migrate-incoming", uri=f"exec:cat {shlex.quote(str(source))}")
    await_migration(qmp)


def ensure_saved(boot_for_saving, path: Path) -> bool:
    """Boot a guest with `boot_for_saving()` and save it at `path`, unless a state is there;
    one thread at a time. Whether a saved state may be used: not one that failed to come up."""
    if path in _unusable:
        return False
    with _saving:
        if path.is_file():
            return True
        started = time.monotonic()
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with boot_for_saving() as m:
                m.save_state(path)
        except (LaunchError, GuestError) as e:
            log.debug("saving a checker guest to %s failed, booting instead: %s", path, e)
            _unusable.add(path)
            return False
        log.debug("saved a booted checker guest in %.1f s: %s (%d MiB)", time.monotonic() - started, path,
                  path.stat().st_size >> 20)
        return True


def restored_or_booted(make_machine, path: Path, boot_for_saving):
    """A started guest: restored from the saved state at `path` (saved first, from a guest
    `boot_for_saving()` gives, if need be), or booted when it cannot be, with a debug line
    that says why. `make_machine(restore)` gives a guest not started yet, restored from
    `restore` unless it is None."""
    if ensure_saved(boot_for_saving, path):
        machine = make_machine(path)
        try:
            return machine.__enter__()
        except LaunchError as e:
            log.debug("restoring %s failed, booting instead: %s", path, str(e).splitlines()[0])
            _unusable.add(path)
            path.unlink(missing_ok=True)  # the next run saves a fresh one
    return make_machine(None).__enter__()
