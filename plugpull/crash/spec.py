"""A crash run as the user names it (`CrashSpec`, plain values, stored with every result)
and as the lab runs it (`CrashPlan`: the real filesystem, mode, workload, models and
trigger, looked up once).

    plan = CrashSpec(fs="xfs", mode="nobarrier", models=("reorder",)).resolve()
"""

from dataclasses import asdict, dataclass, replace
from pathlib import Path

from plugpull.crash.record import Trigger
from plugpull.errors import UsageError
from plugpull.generate.workload import PREFIX as GEN_PREFIX, GeneratedWorkload, generated_workload
from plugpull.guest.contract.config import Bus
from plugpull.powerloss.cuts import cut_points
from plugpull.powerloss.models import ModelSpec, parse_model
from plugpull.testbed.bed import BedSpec
from plugpull.testbed.fs import Filesystem, Mode, filesystem, mode as mode_named
from plugpull.testbed.stack import Stack
from plugpull.testbed.workloads import SCRIPT_PREFIX, Script, GuestWorkload, read_script, workload as workload_named


@dataclass(frozen=True)
class CrashSpec:
    fs: str = "xfs"
    mode: str = "barrier"
    workload: str = "fsync-files"
    params: tuple = ()  # (name, value) pairs for the workload
    models: tuple = ("reorder",)
    states: int = 30  # cuts per model, when there is no budget
    seed: int = 1
    trigger: str = "acks:30"
    disk_mib: int = 512
    bus: Bus = Bus.AHCI
    cuts: str = ""  # cut points: "" = `states` seeded ones and the kill point; else a `cuts.cut_points` spec
    batch: int = 0  # crash states per checker guest boot; 0: hot-plugged (`Plug.HOT`)
    workers: int = 0  # checker guests at once; 0: one per core (at most 2)
    check_script: str = ""  # the path, until `load_user_scripts` reads it into `params`
    budget: int = 0  # distinct states per run, drawn from every cut (`cuts.spending_order`); 0: no budget
    exhaustive: bool = False  # every cut under every model
    stack: str = ""  # layers between the filesystem and the disks, from the disks up (testbed/stack)
    lose_disk: str = ""  # the stack's member left out after the cut: N, random (seeded) or ""

    def __post_init__(self):
        object.__setattr__(self, "bus", Bus(self.bus))
        object.__setattr__(self, "params", tuple(sorted(dict(self.params).items())))
        object.__setattr__(self, "models", tuple(self.models))

    def to_json(self) -> dict:
        """The spec's settings as a JSON object, as stored in `crash --json` results."""
        return {**asdict(self), "bus": str(self.bus), "params": dict(self.params)}

    def validate(self) -> None:
        self.resolve()

    def resolve(self) -> "CrashPlan":
        """The plan with every name looked up; UsageError names what is wrong."""
        if self.workload.startswith(SCRIPT_PREFIX) or self.check_script:
            raise UsageError("the user's scripts are not read yet (spec.load_user_scripts)")
        mode = mode_named(self.mode)
        models = []
        for text in self.models:
            try:
                model = parse_model(text)
                if mode.lying and not model.lying:
                    model = parse_model(f"{text}+lying")
            except ValueError as e:
                raise UsageError(str(e)) from None
            models.append(model)
        if not models:
            raise UsageError("no power-loss model given")
        if self.states < 1:
            raise UsageError("--states must be at least 1")
        if self.disk_mib < 64:
            raise UsageError("--disk-mib must be at least 64")
        filesystem(self.fs).check_size(self.disk_mib)
        if self.batch < 0 or self.workers < 0:
            raise UsageError("--batch and --workers must be at least 0")
        if self.budget < 0:
            raise UsageError("--budget must be at least 0")
        if self.exhaustive and self.cuts:
            raise UsageError("--exhaustive takes every cut: not with --cuts")
        if self.cuts:
            try:
                cut_points([], self.cuts, self.seed)
            except ValueError as e:
                raise UsageError(f"--cuts: {e}") from None
        if mode.external_log and filesystem(self.fs).mount_type != "xfs":
            raise UsageError(f"--mode extlog is implemented for xfs only, not {self.fs} (--fs)")
        stack = Stack.parse(self.stack)
        if stack is not None and mode.external_log:
            raise UsageError(f"bad --stack {self.stack!r}: the extlog mode keeps its log on a disk of its own")
        if self.lose_disk and stack is None:
            raise UsageError(f"bad --lose-disk {self.lose_disk}: it takes a member out of a --stack, and there is none")
        lost = stack.lost_member(self.lose_disk, self.seed) if stack else None
        return CrashPlan(self, filesystem(self.fs), mode, self._workload(), tuple(models), Trigger.parse(self.trigger),
                         stack, lost)

    def _workload(self) -> GuestWorkload:
        """A built-in workload, or a generated one (`gen:ID`, judged by this filesystem's rules)."""
        if self.workload.startswith(GEN_PREFIX):
            if self.params:
                raise UsageError(f"{self.workload} takes no --param: the id is the whole workload")
            return generated_workload(self.workload, self.fs)
        return workload_named(self.workload, **dict(self.params))


@dataclass(frozen=True)
class CrashPlan:
    """`models` are the models the states are judged by: under the lying mode each one
    ignores flushes (a barrier recording whose disk lies)."""

    spec: CrashSpec
    fs: Filesystem
    mode: Mode
    workload: GuestWorkload
    models: tuple[ModelSpec, ...]
    trigger: Trigger
    stack: Stack | None = None
    lost_member: int | None = None  # the stack's member each checked state is assembled without

    @property
    def recording_mode(self) -> Mode:
        """What the guest runs: a lying disk is a barrier recording judged by lying models."""
        return mode_named("barrier") if self.mode.lying else self.mode

    @property
    def recording_bed(self) -> BedSpec:
        return BedSpec(self.fs, self.recording_mode, self.workload, self.spec.disk_mib, self.spec.bus,
                       stack=self.stack)


def load_user_scripts(spec: CrashSpec, base: Path) -> CrashSpec:
    """The spec with a `script:PATH` workload and its check script read from their files
    (relative to `base`) into the workload's parameters: the run is named by their content,
    not their paths, and a saved state replays without them. UsageError (one line) if a
    file is missing, not a regular file or unreadable, or the check script is missing."""
    if not spec.workload.startswith(SCRIPT_PREFIX):
        if spec.check_script:
            raise UsageError(f"--check-script is for a {SCRIPT_PREFIX}PATH workload, not {spec.workload}")
        return spec
    if not spec.check_script:
        raise UsageError(f"{spec.workload} needs a check script (--check-script PATH): without one no "
                         "acknowledged operation can be checked (one that prints nothing and exits 0 "
                         "judges the states by recovery mount and fsck alone)")
    text = read_script(base / spec.workload[len(SCRIPT_PREFIX):], "workload script")
    check = read_script(base / spec.check_script, "check script")
    params = {**dict(spec.params), "text": text, "check": check}
    return replace(spec, workload=Script.name, params=tuple(params.items()), check_script="")


def recorded_workload(name: str, params: dict) -> GuestWorkload:
    """The workload a record names (its `workload` and `params`), a generated one too."""
    if name == GeneratedWorkload.name:
        return GeneratedWorkload(**params)
    return workload_named(name, **params)
