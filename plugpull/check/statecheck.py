"""One crash state's check in a checker guest, shared by every way of checking: the guest
command (recovery mount, collect, fsck), through the stack where there is one, the report it
prints and the observation made of it; and the verdict on a state the guest failed on.
"""

import re
import shlex
from dataclasses import dataclass, field, replace

from plugpull.check.console import EXCERPT_CHARS, ConsoleWatch, scan
from plugpull.check.fsckchoice import NOT_RUN
from plugpull.check.verdict import Observation, files_of, sums_of
from plugpull.errors import GuestError, GuestTimeout
from plugpull.guest.contract.backend import Guest
from plugpull.guest.contract.config import Bus, DiskSpec
from plugpull.powerloss.crashstate import CrashState
from plugpull.testbed.fs import Filesystem
from plugpull.testbed.stack import Stack, top_of, without

CHECK_TIMEOUT = 300.0
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
        create_error=create_error(keys),
    )


def create_error(keys: dict) -> str:
    """The step after recovery's failure (pp-check's create_rc and create_error), "" if it made
    every name or was not tried."""
    rc = keys.get("create_rc")
    if rc in (None, "0"):
        return ""
    return keys.get("create_error") or f"pp-check's new names failed (rc {rc})"


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


def state_disk(path) -> DiskSpec:
    """A state as the checker sees it: its writes go to a throwaway overlay, its file stays as it was."""
    return DiskSpec(path, Bus.SCSI, True, host_flush=False, snapshot=True)


@dataclass
class StateCheck:
    """How a state is checked once it is on disks of a guest: the filesystem, the work
    directory the oracle collects, the stack and the member left out (`--lose-disk`), how
    long a check may take before it counts as hung, and the test hooks (state index ->
    guest command run before its check; tests only)."""

    fs: Filesystem
    subdir: str = "pp"
    stack: Stack | None = None
    lost: int | None = None
    check_timeout: float = CHECK_TIMEOUT
    hooks: dict[int, str] = field(default_factory=dict)

    def hook(self, index: int, retried) -> str:
        """The test hook of a state, on its first try only: the retry after a rig failure
        is the state's own check."""
        return "" if index in retried else self.hooks.get(index, "")

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

    def failed_on(self, error: Exception, console: ConsoleWatch) -> Observation:
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
        return infra(error)


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


def infra(error: Exception) -> Observation:
    return Observation(-1, -1, infra_error=f"checker guest failed: {str(error).splitlines()[0]}")
