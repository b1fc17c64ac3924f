"""Check crash states in a checker guest: recovery mount, the files for the oracle, fsck.

States reach the guest as virtio-scsi disks, in one of two ways (`Plug`). Hot: one guest per
worker stays up for the whole run and each state is plugged in, checked and unplugged, so the
boot (about 3 s under TCG) is paid once per worker; up to `per_command` states at a time, in
one guest command (`hotbatch`). Batch: `batch` states are cold-plugged
per boot; `batch=1` is the one-boot-per-state path, kept as the reference that the fast
paths must agree with.
"""

import os
import re
import shlex
import shutil
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from enum import StrEnum

from plugpull.check import hotbatch
from plugpull.check.fsckchoice import NOT_RUN
from plugpull.check.console import EXCERPT_CHARS, ConsoleWatch, scan
from plugpull.check.hotbatch import state_disk
from plugpull.check.hotguest import HotGuest, KeptGuests
from plugpull.check.verdict import Observation, files_of, sums_of
from plugpull.errors import GuestError, GuestTimeout, InfraError, LaunchError
from plugpull.guest.contract.backend import Guest, await_disk_command
from plugpull.guest.contract.config import MachineSpec
from plugpull.guest.rig import Rig
from plugpull.paths import make_tempdir
from plugpull.powerloss.crashstate import CrashState
from plugpull.testbed.fs import Filesystem
from plugpull.testbed.stack import Stack, top_of, without

CHECK_TIMEOUT = 300.0
LAUNCHES_TRIED = 2  # failed boots in a row after which a worker's remaining states are infra-errors
SECTIONS = ("fsck", "mount", "dmesg")
TREE = "pp-tree.out"  # the `tree` collect's one file: pp-tree's walk of the work directory
BLOBS = {"tar": "/tmp/check.tar", "sums": "/tmp/check.sums", "tree": "/tmp/check.tar"}  # what the oracle gets back, per collect
BLOB_LINE = re.compile(rb"^blob_bytes=(\d+)$", re.M)
REPORT_TAIL = ("; echo ---fsck; tail -n 40 /tmp/check.fsck; echo ---mount; cat /tmp/check.mount; "
               "echo ---dmesg; head -n 200 /tmp/check.dmesg")


def parse_report(text: str) -> tuple[dict, dict]:
    """key=value lines, then `---name` sections, from the guest's pp-check run."""
    keys, sections, current = {}, {}, None
    for line in text.splitlines():
        if line.startswith("---") and line[3:] in SECTIONS:
            current = line[3:]
            sections[current] = []
        elif current:
            sections[current].append(line)
        elif "=" in line:
            k, _, v = line.partition("=")
            keys[k.strip()] = v.strip()
    return keys, {k: "\n".join(v) for k, v in sections.items()}


def observation_from(keys: dict, sections: dict, files: dict | None) -> Observation:
    try:
        mount_rc = int(keys["mount_rc"])
        fsck_rc = None if keys.get("fsck_rc") == NOT_RUN else int(keys["fsck_rc"])
    except (KeyError, ValueError):
        return Observation(-1, -1, infra_error=f"incomplete report from pp-check: {keys}")
    umount = keys.get("umount_rc")
    trouble = scan(sections.get("dmesg", ""))
    return Observation(
        mount_rc=mount_rc, fsck_rc=fsck_rc, umount_rc=int(umount) if umount else None,
        files=files, collect_rc=keys.get("collect_rc"), mount_error=sections.get("mount", ""),
        fsck_output=sections.get("fsck", ""), kernel_log=sections.get("dmesg", ""),
        kernel_crash=trouble.summary if trouble else "", kernel_excerpt=trouble.excerpt if trouble else "",
    )


@dataclass(frozen=True)
class ScriptCollect:
    """The collect kind of a user's check script: run `script` in the work directory of the
    mounted state, given the `required` ack IDs; its output comes back as the "files"
    check-script.out, check-script.err and check-script.rc (its exit status, or "absent")."""

    script: str
    required: tuple[int, ...]


def _upload_check(m: Guest, collect: ScriptCollect) -> None:
    m.write_file("/tmp/user-check.sh", collect.script, mode=0o755)
    m.write_file("/tmp/user-check.ids", "".join(f"{i}\n" for i in collect.required))


def _script_files(m: Guest, status: str) -> dict:
    out = m.run("cat /tmp/check.script", timeout=CHECK_TIMEOUT).stdout
    err = m.run("tail -c 4096 /tmp/check.collecterr", timeout=CHECK_TIMEOUT).stdout
    return {"check-script.out": out, "check-script.err": err, "check-script.rc": status.encode()}


def default_workers() -> int:
    """One checker guest per core: under TCG each guest keeps one core busy."""
    return max(1, min(2, os.cpu_count() or 1))


class Plug(StrEnum):
    HOT = "hot"  # one guest per worker for the whole run; states plugged in and out
    BATCH = "batch"  # `batch` states cold-plugged per boot


@dataclass
class Checker(hotbatch.ManyStates):
    rig: Rig
    fs: Filesystem
    batch: int = 16
    plug: Plug = Plug.BATCH
    subdir: str = "pp"
    workers: int = 1
    stack: Stack | None = None  # the layers each state's disks are assembled through
    lost: int | None = None  # the stack's member each state is assembled without (--lose-disk)
    check_timeout: float = CHECK_TIMEOUT  # a check that takes longer hung: kernel-crash
    restore: bool = True  # hot: start checker guests from a saved one (`snapshot`) where the backend can
    per_command: int = 8  # hot: states plugged in and checked by one guest command (`hotbatch`); 1: one each
    host_fsck: bool = True  # hot, several per command: fsck on the host, through QEMU (`hostfsck`)
    slots: bool = False  # hot, host fsck: states of one size copied into disks the guest keeps plugged in (`slots`)
    hooks: dict[int, str] = field(default_factory=dict)  # tests only: state index -> guest command run before its check
    kept: KeptGuests | None = None  # hot: guests taken from here and left here clean, not started and closed
    _stop: threading.Event = field(default_factory=threading.Event, init=False, repr=False)
    _running: set = field(default_factory=set, init=False, repr=False)

    def check(self, states: list[CrashState], progress=None, collect: list[str] | None = None) -> list[Observation]:
        """Observations in the order of `states`, checked on `workers` guests, hot-plugged or in
        chunks of `batch` (`plug`). `collect` says per state what the oracle needs back: "tar",
        "sums" or "none"."""
        collect = collect or ["tar"] * len(states)
        jobs = list(zip(range(len(states)), states, collect))
        if self.rig.hosts:
            from plugpull.check.spread import check_on_hosts
            return check_on_hosts(self, jobs, progress)
        if Plug(self.plug) is Plug.HOT:
            return self._check_hot(jobs, progress)
        chunks = [jobs[i:i + self.batch] for i in range(0, len(jobs), self.batch)]
        if self.workers <= 1 or len(chunks) <= 1:
            return [obs for chunk in chunks for obs in self._check_chunk(chunk, progress)]
        lock = threading.Lock()

        def tick():
            with lock:
                _tick(progress)

        done = self._in_parallel([lambda chunk=chunk: self._check_chunk(chunk, tick) for chunk in chunks])
        return [obs for chunk_obs in done for obs in chunk_obs]

    @staticmethod
    def observe(text: str, blob: bytes, collect: str) -> Observation:
        return observe(text, blob, collect)

    def _in_parallel(self, tasks: list) -> list:
        """The tasks' results, run on `workers` threads; on any failure (Ctrl-C) every guest stops."""
        pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="plugpull-checker")
        try:
            return list(pool.map(lambda task: task(), tasks))
        except BaseException:
            self._stop.set()  # Ctrl-C: stop the other guests now, not when their chunks end
            for m in list(self._running):
                m.power_cut()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _check_chunk(self, chunk: list[tuple], progress, retried: frozenset = frozenset()) -> list[Observation]:
        """Check a chunk of (index, state, collect) in one guest. If the guest fails on a
        state, its console judges that state (`_failed_on`) and the rest go to a fresh guest;
        a state the rig failed on (an infra-error) is judged again there, once. If the guest
        never came up, all of them are infra-errors. After a failed unmount the rest go to a
        fresh guest too."""
        images = [p for _, state, _ in chunk for p in state.images]
        spec = MachineSpec(disks=tuple(state_disk(p) for p in images))
        out: list[Observation] = []
        booted = False
        scratch = make_tempdir("checker")
        console = ConsoleWatch(scratch / "console.log")
        machine = self.rig.machine(spec, name="checker", console_log=console.path)
        self._running.add(machine)
        try:
            with machine as m:
                devices = self._devices(m, len(images))
                booted = True
                lun = 0
                for index, state, collect in chunk:
                    if self._stop.is_set():
                        raise InfraError("checking was stopped")
                    console.set_mark()
                    names = [devices[lun + i] for i in range(len(state.images))]
                    obs = self.check_state(m, names, state, collect, self._hook(index, retried))
                    out.append(obs)
                    lun += len(state.images)
                    _tick(progress)
                    if obs.umount_rc not in (0, None):
                        break  # still mounted: the next state, with the same UUID, would not mount beside it
        except (GuestError, LaunchError, InfraError) as e:
            if self._stop.is_set():
                raise
            casualties = [self._failed_on(e, console)] if booted else [_infra(e)] * (len(chunk) - len(out))
            if booted and casualties[0].infra_error and chunk[len(out)][0] not in retried:
                retried, casualties = retried | {chunk[len(out)][0]}, []
            for failed in casualties:
                out.append(failed)
                _tick(progress)
        finally:
            self._running.discard(machine)
            shutil.rmtree(scratch, ignore_errors=True)
        if len(out) < len(chunk):
            out += self._check_chunk(chunk[len(out):], progress, retried)
        return out

    def _hot_worker(self, take, done) -> None:
        """Check states in one guest until none is left, several per command where they
        can be (`_next_jobs`). A guest that fails on a state, or cannot be trusted after it,
        is replaced for the next one; one that does not boot `LAUNCHES_TRIED` times in a row
        leaves this worker's remaining states infra-errors. The states of a command that
        failed are checked again one at a time, on a fresh guest, so a state's verdict is the
        one-state command's. A state the rig failed on (an infra-error) is judged again on
        the fresh guest, once. With `kept`, the first guest is a kept one if one is up, and
        a guest still trusted at the end is left there."""
        guest, failed_launches, launch_error = self.kept and self.kept.take(self._running), 0, None
        alone, retried, finished = deque(), set(), False
        try:
            while True:
                jobs, many = self._next_jobs(take, alone)
                if not jobs:
                    break
                if self._stop.is_set():
                    raise InfraError("checking was stopped")
                if guest is None and failed_launches < LAUNCHES_TRIED:
                    try:
                        guest, failed_launches = HotGuest(self.rig, self._running, self.restore), 0
                    except LaunchError as e:
                        if self._stop.is_set():
                            raise
                        failed_launches, launch_error = failed_launches + 1, e
                if guest is None:
                    for index, _, _ in jobs:
                        done(index, _infra(launch_error))
                    continue
                if many:
                    observed, trusted = self._check_many(guest, jobs)
                    alone.extend(jobs[len(observed):])
                else:
                    index, state, collect = jobs[0]
                    obs, trusted = self._plug_and_check(guest, index, state, collect, self._hook(index, retried))
                    observed = [] if obs.infra_error and index not in retried else [obs]
                    if not observed:
                        retried.add(index)
                        alone.appendleft(jobs[0])
                for (index, _, _), obs in zip(jobs, observed):
                    done(index, obs)
                if not trusted:
                    guest.close()
                    guest = None
            finished = True
        finally:
            if guest is not None and finished and self.kept is not None:
                self.kept.give(guest)
            elif guest is not None:
                guest.close()

    def _hook(self, index: int, retried) -> str:
        """The test hook of a state, on its first try only: the retry after a rig failure
        is the state's own check."""
        return "" if index in retried else self.hooks.get(index, "")

    def _plug_and_check(self, guest: HotGuest, index: int, state: CrashState,
                        collect, hook: str = "") -> tuple[Observation, bool]:
        """The state's observation, and whether the guest may check another state. A
        failure while plugging or checking is judged by `_failed_on` and not checked again;
        a state left mounted or a disk that would not unplug costs the guest, not the verdict."""
        m = guest.machine
        guest.console.set_mark()
        try:
            wait = self.stack is not None  # a stack is assembled by a command of its own, from named disks
            disks = [m.attach_disk(state_disk(path), wait=wait) for path in state.images]
            names = [disk.device or f"$pp_dev{i}" for i, disk in enumerate(disks)]
            prelude = "".join(await_disk_command(disk.serial, name[1:])
                              for disk, name in zip(disks, names) if not disk.device)
            obs = self.check_state(m, names, state, collect, hook, prelude)
        except (GuestError, InfraError) as e:
            if self._stop.is_set():
                raise
            return self._failed_on(e, guest.console), False
        if obs.umount_rc not in (0, None):
            return obs, False  # still mounted: a later state with the same UUID would not mount beside it
        try:
            for disk in reversed(disks):
                m.detach_disk(disk, wait=False)  # the next state's command waits for its own disk
        except (GuestError, InfraError):
            if self._stop.is_set():
                raise
            return obs, False
        return obs, True

    def _failed_on(self, error: Exception, console: ConsoleWatch) -> Observation:
        """The state the guest failed on. The kernel under test failed if the console shows
        it since the state's check began, or if the check hung (timed out); otherwise the
        rig broke (QEMU died, say): an infra-error, never a verdict."""
        trouble = console.trouble()
        if trouble:
            return Observation(-1, -1, kernel_crash=trouble.summary, kernel_excerpt=trouble.excerpt)
        if isinstance(error, GuestTimeout):
            return Observation(-1, -1, kernel_crash=f"kernel hung: the check did not finish in "
                                                    f"{self.check_timeout:g} s",
                               kernel_excerpt=console.since_mark()[-EXCERPT_CHARS:])
        return _infra(error)

    @staticmethod
    def _devices(m: Guest, count: int) -> dict[int, str]:
        """LUN -> kernel name, through the guest's /dev/pp-diskN links (serial plugpullN)."""
        names = m.run("cd /dev && for l in pp-disk*; do echo ${l#pp-disk} $(readlink $l); done").check().text
        devices = {int(n): dev for n, _, dev in (line.partition(" ") for line in names.splitlines()) if dev}
        if sorted(devices) != list(range(count)):
            raise InfraError(f"checker guest sees state disks {sorted(devices)}, expected {count}")
        return devices

    def check_state(self, m: Guest, devices: list[str], state: CrashState, collect, hook: str = "",
                    prelude: str = "") -> Observation:
        """A state on its disks (kernel names, in the state's order): through the stack,
        assembled first and taken down after (one that does not assemble is unmountable,
        with pp-stack's words; one that does not come down leaves the guest untrusted, as a
        failed unmount does); or the data disk with its log disk, if it has one."""
        if self.stack is None:
            return self.check_one(m, devices[0], collect, devices[1] if state.log_disk else None, hook, prelude)
        opened = m.run(self.stack.command("open" if self.lost is None else "force-open", without(devices, self.lost)),
                       timeout=self.check_timeout)
        try:
            top = top_of(opened.text) if opened.rc == 0 else None
        except ValueError as e:
            top, opened = None, replace(opened, stderr=str(e).encode())
        if top is None:
            m.run(f"{self.stack.command('close')} 2>/dev/null", timeout=self.check_timeout)
            reason = (opened.stderr.decode(errors="replace").strip() or f"pp-stack exited {opened.rc}")
            return Observation(mount_rc=opened.rc or 1, fsck_rc=-1,
                               mount_error=f"the stack did not assemble: {reason}")
        obs = self.check_one(m, top, collect, None, hook)
        closed = m.run(self.stack.command("close"), timeout=self.check_timeout)
        return obs if closed.rc == 0 else replace(obs, umount_rc=obs.umount_rc or closed.rc)

    def check_one(self, m: Guest, dev: str, collect: "str | ScriptCollect" = "tar",
                  logdev: str | None = None, hook: str = "", prelude: str = "") -> Observation:
        """One guest command: recovery mount, collect, fsck, and the report with what the
        oracle needs after it. `dev`, `logdev`: kernel names, or (`$name`) shell variables
        that `prelude`, run first, sets. `hook`: a guest command run first (tests only)."""
        script = collect if isinstance(collect, ScriptCollect) else None
        if script:
            _upload_check(m, script)
            collect = "script"
        blob = BLOBS.get(collect)
        words = [shlex.quote(w) for w in ("pp-check", self.fs.mount_type)] + [_device_word(dev)]
        words += [shlex.quote(w) for w in (self.subdir, collect)] + [_device_word(logdev) if logdev else "''"]
        command = (f"{hook}\n" if hook else "") + prelude + " ".join(words)
        if blob:
            command += f"; [ -f {blob} ] && echo blob_bytes=$(wc -c < {blob})"
        command += REPORT_TAIL + (f"; [ -f {blob} ] && cat {blob}; true" if blob else "")
        report = m.run(command, timeout=self.check_timeout)
        text, blob_bytes = split_blob(report.stdout)
        return observe(text, blob_bytes, collect, (lambda rc: _script_files(m, rc)) if script else None)


def observe(text: str, blob: bytes, collect: str, script_files=None) -> Observation:
    """A state's observation from its report and the file the oracle asked for (a check
    script's output: `script_files(collect_rc)`)."""
    keys, sections = parse_report(text)
    if "disk_missing" in keys:
        raise GuestError(f"disk {keys['disk_missing']} did not show up in the guest")
    files = None
    if script_files and keys.get("collect_rc") is not None:
        files = script_files(keys["collect_rc"])
    elif keys.get("collect_rc") not in (None, "absent", "skipped"):
        files = {"sums": lambda: sums_of(blob.decode(errors="replace")), "tree": lambda: {TREE: blob}}.get(
            collect, lambda: files_of(blob))()
    return observation_from(keys, sections, files)


def _device_word(dev: str) -> str:
    return f'"/dev/${{{dev[1:]}}}"' if dev.startswith("$") else shlex.quote(f"/dev/{dev}")


def split_blob(stdout: bytes) -> tuple[str, bytes]:
    """The report's text, and the file it ends with: `blob_bytes=N` says how long it is."""
    found = BLOB_LINE.search(stdout)
    size = int(found.group(1)) if found else 0
    if size > len(stdout):
        raise GuestError(f"the check's report is cut short: {len(stdout)} bytes for a {size}-byte file")
    text = stdout[:len(stdout) - size] if size else stdout
    return text.decode(errors="replace"), stdout[len(stdout) - size:] if size else b""


def _infra(error: Exception) -> Observation:
    return Observation(-1, -1, infra_error=f"checker guest failed: {str(error).splitlines()[0]}")


def _tick(progress) -> None:
    if progress:
        progress()
