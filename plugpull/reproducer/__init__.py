"""A reproducer a maintainer can run without plugpull: a generated workload (`gen:ID`), cut
right after one of its persistence points by fstests' dm-flakey method, checked for what the
model oracle owes there.

`case_for` picks the workload and the point; `checks` turns what the oracle owes into shell
checks; `sh` writes a POSIX sh script, `fstests` a test in fstests' own form; `inguest` runs
the sh script in a plugpull guest. The workload is cut at the point: the operations after it are
not run, so nothing they would change is owed anything less (see `ReproducerCase.workload`)."""

from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

from plugpull.crash.saved import state_fields, state_file
from plugpull.errors import UsageError
from plugpull.generate.oracle import on_profile
from plugpull.generate.space import Workload, space_of
from plugpull.generate.workload import PREFIX
from plugpull.testbed.features import SEP, split
from plugpull.testbed.fs import FILESYSTEMS as FILESYSTEM_ROWS, filesystem

# What the reproducer makes and judges (f2fs-strict: f2fs with fsync_mode=strict), each with
# feature options too (checked_fs).
FILESYSTEMS = ("ext4", "xfs", "btrfs", "f2fs", "f2fs-strict")


@dataclass(frozen=True)
class ReproducerCase:
    """Generated workload `whole` on `fs`, dropping writes right after persistence point `point`
    (0: the setup's sync)."""

    whole: Workload
    fs: str
    point: int

    @property
    def ident(self) -> str:
        return f"{PREFIX}{self.whole.ident}"

    @property
    def rules(self) -> str:
        """The oracle's profile `fs` is judged by (f2fs-strict: f2fs's; a feature profile: its
        base's)."""
        return FILESYSTEM_ROWS[self.fs].rules

    @cached_property
    def workload(self) -> Workload:
        """The workload up to the point's persistence call: what the reproducer runs, and
        what the oracle is asked about, so that no later operation relaxes what is owed; the
        operations the filesystem refuses are not done."""
        end = self.whole.points()[self.point - 1] if self.point else 0
        return on_profile(replace(self.whole, steps=self.whole.steps[:end]), self.fs)

    def title(self) -> str:
        setup = "the setup's sync" if self.whole.synced else "the setup, not synced"
        what = setup if self.point == 0 else self.whole.steps[self.whole.points()[self.point - 1] - 1].persist.text()
        return f"{self.ident} on {self.fs}, writes dropped after point {self.point} ({what})"


def makes(fs: str) -> bool:
    """Whether the reproducer makes `fs`: one of FILESYSTEMS, or a profile of one."""
    try:
        checked_fs(fs)
    except UsageError:
        return False
    return True


def checked_fs(fs: str) -> str:
    """`fs` if the reproducer makes it: one of FILESYSTEMS, or a profile of one with options
    (`ext4+fast_commit`, testbed/features.py); else a UsageError saying what is wrong."""
    if fs in FILESYSTEMS:
        return fs
    if SEP not in fs or split(fs)[0] not in FILESYSTEMS:
        raise UsageError(f"--fs {fs!r}: expected one of {', '.join(FILESYSTEMS)}, or a profile of one "
                         "(FS+OPTION, e.g. ext4+fast_commit)")
    filesystem(fs)
    return fs


def case_for(ident: str, fs: str, point: int | None = None) -> ReproducerCase:
    """The case of `gen:ID`; `point` None: its last persistence point. UsageError on a bad id,
    filesystem or point."""
    if not ident.startswith(PREFIX):
        raise UsageError(f"{ident!r}: expected gen:ID (a generated workload) or a saved state directory")
    checked_fs(fs)
    name = ident[len(PREFIX):]
    workload = space_of(name).parse(name)
    if workload.extra:  # its checks would name each of 3,000 links or 2,000 xattrs
        raise UsageError(f"{ident}: a workload of the {workload.extra} setup has no reproducer (what its setup "
                         "adds to the synced one is not written into one)")
    last = len(workload.points())
    if point is None:
        point = last
    if not 0 <= point <= last:
        raise UsageError(f"--point {point}: {ident} has persistence points 0 to {last}")
    return ReproducerCase(workload, fs, point)


def state_target(state_dir: Path) -> tuple[str, str, int]:
    """A saved crash state's generated workload, filesystem and the highest ack it owes; a
    UsageError for a state of any other workload, or one that owes no ack."""
    path, doc = state_file(state_dir), state_fields(state_dir)
    workload = doc.get("workload")
    if not isinstance(workload, str) or not workload.startswith(PREFIX):
        raise UsageError(f"{path}: its workload is {workload!r}, not a generated one (gen:ID)")
    required = doc.get("acks_required")
    if not isinstance(required, int) or isinstance(required, bool) or required < 1:
        raise UsageError(f"{path}: acks_required is {required!r}: the state owes no ack to reproduce")
    return workload, str(doc.get("fs", "")), required - 1
