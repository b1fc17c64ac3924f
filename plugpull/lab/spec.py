"""A crash run as the user names it (`CrashSpec`, plain values, stored with every result)
and as the lab runs it (`CrashPlan`: the real filesystem, mode, workload, models and
trigger, looked up once).

    plan = CrashSpec(fs="xfs", mode="nobarrier", models=("reorder",)).resolve()
"""

from dataclasses import asdict, dataclass

from plugpull.errors import UsageError
from plugpull.guest.config import Bus
from plugpull.lab.fs import Filesystem, Mode, filesystem, mode as mode_named
from plugpull.lab.record import Trigger
from plugpull.lab.testbed import BedSpec
from plugpull.lab.workloads import Workload, workload as workload_named
from plugpull.powerloss.models import ModelSpec, cut_points, parse_model


@dataclass(frozen=True)
class CrashSpec:
    fs: str = "xfs"
    mode: str = "barrier"
    workload: str = "fsync-files"
    params: tuple = ()  # (name, value) pairs for the workload
    models: tuple = ("reorder",)
    states: int = 30  # per model
    seed: int = 1
    trigger: str = "acks:30"
    disk_mib: int = 512
    bus: Bus = Bus.AHCI
    cuts: str = ""  # cut points: "" = `states` seeded ones and the kill point; else a cut_points spec
    batch: int = 16  # crash states per checker guest boot
    workers: int = 0  # checker guests at once; 0: one per core (at most 2)

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
        if self.batch < 1 or self.workers < 0:
            raise UsageError("--batch must be at least 1 and --workers at least 0")
        if self.cuts:
            try:
                cut_points([], self.cuts, self.seed)
            except ValueError as e:
                raise UsageError(f"--cuts: {e}") from None
        return CrashPlan(self, filesystem(self.fs), mode, workload_named(self.workload, **dict(self.params)),
                         tuple(models), Trigger.parse(self.trigger))


@dataclass(frozen=True)
class CrashPlan:
    """`models` are the models the states are judged by: under the lying mode each one
    ignores flushes (a barrier recording whose disk lies)."""

    spec: CrashSpec
    fs: Filesystem
    mode: Mode
    workload: Workload
    models: tuple[ModelSpec, ...]
    trigger: Trigger

    @property
    def recording_mode(self) -> Mode:
        """What the guest runs: a lying disk is a barrier recording judged by lying models."""
        return mode_named("barrier") if self.mode.lying else self.mode

    @property
    def recording_bed(self) -> BedSpec:
        return BedSpec(self.fs, self.recording_mode, self.workload, self.spec.disk_mib, self.spec.bus)
