"""The result types, as frozen dataclasses with to_json/from_json."""

from dataclasses import asdict, dataclass, field
from typing import Any

from plugpull.results.diskio import DiskIO
from plugpull.results.fields import _Fields, _lenient, _of, _pairs, _settle, param_text

SCHEMA_VERSION = 5  # 4: the disk's writes and flushes per phase and run (`io`), a case's `seed`,
                    # a state's cuts on every disk (`cuts`) instead of `cut2`; 5: fault runs
                    # (`kind: "fault"` lines, results.faults)
MIB = 1 << 20
VERDICTS = ("clean", "data-loss", "inconsistent", "not-writable", "fs-corrupt", "unmountable", "kernel-crash", "infra-error")
UNSAFE_VERDICTS = ("data-loss", "inconsistent", "not-writable", "fs-corrupt", "unmountable", "kernel-crash")
NEW_IN_3 = ("inconsistent", "kernel-crash")  # a schema-2 summary that counted states had none
NEWER = (*NEW_IN_3, "not-writable")  # verdicts an older summary that counted states had none of
INFRA = "infra-error"


class SchemaError(ValueError):
    """A document written in a results schema this plugpull cannot read."""


def check_schema(doc: dict) -> None:
    """SchemaError unless the document's schema version (1 if it has none) is one this
    plugpull reads."""
    version = doc.get("schema", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise SchemaError(f"results schema {version!r} is not a schema version")
    if version > SCHEMA_VERSION:
        raise SchemaError(f"results schema {version} is newer than this plugpull reads "
                          f"(up to {SCHEMA_VERSION}): upgrade plugpull")


@dataclass(frozen=True)
class Phase(_Fields):
    """One timed part of a benchmark run.

    `seconds` is None when the benchmark gives only a rate (bonnie++) or no result at all.
    `mb_per_s` is in MiB/s (2**20 bytes): bonnie++'s K/sec are KiB, fio's bw_bytes are bytes.
    """

    name: str
    seconds: float | None
    ops: int | None = None
    bytes: int | None = None
    ops_per_s: float | None = None
    mb_per_s: float | None = None
    io: DiskIO | None = None  # what the disk did during the phase, when it was read around it

    @property
    def op_rate(self) -> float | None:
        """Operations per second: as printed, else derived from ops and seconds."""
        if self.ops_per_s is not None:
            return self.ops_per_s
        if self.ops is not None and self.seconds:
            return self.ops / self.seconds
        return None

    @property
    def mb_rate(self) -> float | None:
        """MiB per second: as printed, else derived from bytes and seconds."""
        if self.mb_per_s is not None:
            return self.mb_per_s
        if self.bytes is not None and self.seconds:
            return self.bytes / MIB / self.seconds
        return None

    @property
    def measured(self) -> bool:
        return self.seconds is not None or self.ops_per_s is not None or self.mb_per_s is not None

    def to_json(self) -> dict:
        return {**asdict(self), "io": self.io.to_json() if self.io else None}

    @classmethod
    def from_json(cls, doc: dict) -> "Phase":
        return _lenient(cls, doc, name=str(doc.get("name")), io=DiskIO.from_json(doc.get("io")))


@dataclass(frozen=True)
class Throughput:
    """One throughput measurement of a cell: its phases and how it was taken."""

    phases: tuple[Phase, ...] = ()
    recorder_overhead: float | None = None  # time under the recorder over time without it
    queue_write_cache: str | None = None  # the guest's /sys/block/.../queue/write_cache
    accel: str | None = None
    recorded: bool = False  # measured under the write recorder
    profile: dict | None = None  # the disk profile's settings, None on a real disk or none at all
    real_disk: str | None = None
    io: DiskIO | None = None  # what the disk did over all the timed steps

    def __post_init__(self):
        _settle(self, phases=tuple(self.phases), profile=self.profile)

    def to_json(self) -> dict:
        return {**asdict(self), "phases": [p.to_json() for p in self.phases],
                "io": self.io.to_json() if self.io else None}

    @classmethod
    def from_json(cls, doc: dict) -> "Throughput":
        phases = [p for p in _of(list, doc.get("phases")) or [] if isinstance(p, dict)]
        return _lenient(cls, doc, recorded=doc.get("recorded") is True, profile=_of(dict, doc.get("profile")),
                        io=DiskIO.from_json(doc.get("io")),
                        phases=tuple(Phase.from_json({**p, "name": p.get("name") or f"phase {i + 1}"})
                                     for i, p in enumerate(phases)))


@dataclass(frozen=True)
class StateResult(_Fields):
    """The verdict on one crash state, and where it came from."""

    fs: str
    mode: str
    workload: str
    model: str
    seed: int
    cut: int
    verdict: str
    reason: str
    acks_required: int
    acks_lost: int
    fsck_rc: int | None  # None: fsck did not read the state (`hunt --fsck`), never read as clean by fsck
    lost: list = field(default_factory=list)
    artifact: str | None = None
    cuts: tuple | None = None  # with more than one recorded disk (extlog, a stack): the cut in each disk's log
    kernel_excerpt: str | None = None  # kernel-crash: the guest kernel's words, from its console or log
    distinct: int | None = None  # the distinct state the cut shares with every cut of the same number
    acks_allowed: int = 0  # acknowledged operations lost as the workload's contract allows
    broken: list = field(default_factory=list)  # the workload's invariants the state broke

    def __post_init__(self):
        if self.cuts is not None:
            object.__setattr__(self, "cuts", tuple(self.cuts))

    @property
    def cut2(self) -> int | None:
        """The cut in the second disk's log (the extlog mode's log disk), if there is one."""
        return self.cuts[1] if self.cuts and len(self.cuts) > 1 else None

    @classmethod
    def from_json(cls, doc: dict) -> "StateResult":
        """Schema 3 and before kept the second disk's cut alone, as `cut2`."""
        if doc.get("cut2") is not None and not doc.get("cuts"):
            doc = {**doc, "cuts": (doc.get("cut"), doc["cut2"])}
        return super().from_json(doc)


def _verdict_field(verdict: str) -> str:
    return verdict.replace("-", "_")


@dataclass(frozen=True)
class CrashSummary:
    """The crash side of a matrix cell: how many states (one per cut), how many distinct ones
    were checked, under which models, and the count of each verdict (None where it is not
    known)."""

    states: int | None = None
    models: tuple[str, ...] = ()
    clean: int | None = None
    data_loss: int | None = None
    inconsistent: int | None = None
    not_writable: int | None = None
    fs_corrupt: int | None = None
    unmountable: int | None = None
    kernel_crash: int | None = None
    infra_error: int | None = None
    log: dict | None = None  # the record's write-log summary (writes, flushes, ...)
    states_per_minute: float | None = None
    artifacts: str | None = None  # where the states that are not clean were saved
    distinct: int | None = None  # distinct states checked; the cuts that share one share its check

    def __post_init__(self):
        _settle(self, models=tuple(self.models), log=self.log)
        if self.clean is not None:
            _settle(self, **{_verdict_field(v): self.count(v) or 0 for v in NEWER})

    def count(self, verdict: str) -> int | None:
        return getattr(self, _verdict_field(verdict))

    @property
    def unsafe(self) -> int | None:
        """States with a verdict against the filesystem; None if a count is missing."""
        counts = [self.count(v) for v in UNSAFE_VERDICTS]
        return None if None in counts else sum(counts)

    @property
    def unsafe_share(self) -> float | None:
        """The share of checked states that are not clean. Infra-errors are left out of both
        sides: they say nothing about the filesystem."""
        unsafe = self.unsafe
        if unsafe is None:
            return None
        if self.states is not None:
            checked = self.states - (self.infra_error or 0)
        elif self.clean is not None:
            checked = self.clean + unsafe
        else:
            return None
        return unsafe / checked if checked > 0 else None

    def to_json(self) -> dict:
        return {"states": self.states, "models": list(self.models),
                "summary": {v: self.count(v) for v in VERDICTS}, "record": self.log,
                "states_per_minute": self.states_per_minute, "artifacts": self.artifacts,
                "distinct": self.distinct}

    @classmethod
    def from_json(cls, doc: dict) -> "CrashSummary":
        summary = _of(dict, doc.get("summary")) or {}
        counts = {_verdict_field(v): summary.get(v) for v in VERDICTS}
        return _lenient(cls, {**doc, **counts}, models=tuple(str(m) for m in _of(list, doc.get("models")) or []),
                        log=_of(dict, doc.get("record")))


@dataclass(frozen=True)
class CrashTiming(_Fields):
    record_s: float
    check_s: float
    states_per_minute: float  # cuts judged per minute
    distinct_per_minute: float | None = None  # distinct states checked per minute


@dataclass(frozen=True)
class CrashRun:
    """One run of the power-cut engine, as `crash --json` writes it: the spec, the record's
    metadata (without its acks), the verdict on every state, the time it took."""

    spec: dict  # CrashSpec.to_json()
    record: dict
    states: tuple[StateResult, ...]
    timing: CrashTiming

    def __post_init__(self):
        _settle(self, states=tuple(self.states), spec=self.spec, record=self.record)

    @property
    def distinct(self) -> int | None:
        """Distinct states checked (None for a run that did not number them)."""
        numbers = {s.distinct for s in self.states}
        return None if None in numbers else len(numbers)

    @property
    def summary(self) -> dict[str, int]:
        """verdict -> how many states got it, every verdict named."""
        return {v: sum(s.verdict == v for s in self.states) for v in VERDICTS}

    def crash_summary(self, artifacts: str | None = None) -> CrashSummary:
        """What a matrix cell keeps of this run."""
        return CrashSummary(states=len(self.states), models=tuple(self.spec.get("models", ())),
                            log=self.record.get("log"), states_per_minute=self.timing.states_per_minute,
                            artifacts=artifacts, distinct=self.distinct,
                            **{_verdict_field(v): n for v, n in self.summary.items()})

    def to_json(self) -> dict:
        return {"schema": SCHEMA_VERSION, "spec": self.spec, "record": self.record,
                "states": [s.to_json() for s in self.states], "summary": self.summary,
                "timing": self.timing.to_json()}

    @classmethod
    def from_json(cls, doc: dict) -> "CrashRun":
        check_schema(doc)
        return cls(spec=_of(dict, doc.get("spec")) or {}, record=_of(dict, doc.get("record")) or {},
                   states=tuple(StateResult.from_json(s) for s in _of(list, doc.get("states")) or []),
                   timing=CrashTiming.from_json(_of(dict, doc.get("timing")) or {}))


@dataclass(frozen=True)
class Env:
    """What a cell ran on."""

    accel: str | None = None
    qemu: str | None = None
    kernel: str | None = None
    packages: tuple[tuple[str, str], ...] = ()  # (Debian package, version), sorted
    image: str | None = None  # the guest image's cache key
    host: str | None = None
    disk_backing: str | None = None
    disk_profile: str | None = None
    bus: str | None = None

    def __post_init__(self):
        _settle(self, packages=tuple((k, str(v)) for k, v in _pairs(self.packages)))

    def to_json(self) -> dict:
        return {**asdict(self), "packages": dict(self.packages)}

    @classmethod
    def from_json(cls, doc: dict) -> "Env":
        return _lenient(cls, doc, packages=_pairs(_of(dict, doc.get("packages")) or {}))


def _optional(kind, value):
    return kind.from_json(value) if isinstance(value, dict) else None


@dataclass(frozen=True)
class CellResult:
    """One matrix cell: both measurements of a filesystem, mode and workload. A cell the
    harness failed on keeps what was measured before, and says why in `error`."""

    key: str
    fs: str
    mode: str
    workload: str
    params: tuple[tuple[str, Any], ...] = ()  # the workload's parameters, sorted by name
    settings: dict | None = None  # matrix Cell.to_json(): everything that defines the cell
    env: Env | None = None
    started: str | None = None  # UTC, ISO 8601
    seconds: float | None = None
    throughput: Throughput | None = None
    crash: CrashSummary | None = None
    error: str | None = None
    seed: dict | None = None  # the case file's [seed] table: the seed's published figures

    def __post_init__(self):
        _settle(self, params=_pairs(self.params), settings=self.settings, seed=self.seed)

    @property
    def phases(self) -> tuple[Phase, ...]:
        return self.throughput.phases if self.throughput else ()

    def phase(self, name: str) -> Phase | None:
        return next((p for p in self.phases if p.name == name), None)

    def to_json(self) -> dict:
        return {"schema": SCHEMA_VERSION, "kind": "cell", "key": self.key, "fs": self.fs, "mode": self.mode,
                "workload": self.workload, "params": dict(self.params), "cell": self.settings,
                "env": self.env.to_json() if self.env else None, "started": self.started,
                "seconds": self.seconds, "throughput": self.throughput.to_json() if self.throughput else None,
                "crash": self.crash.to_json() if self.crash else None, "error": self.error,
                **({"seed": self.seed} if self.seed else {})}

    @classmethod
    def from_json(cls, doc: dict) -> "CellResult":
        """ValueError if the line names no fs, mode or workload; SchemaError (a ValueError)
        if it was written in a newer schema."""
        check_schema(doc)
        names = {f: doc.get(f) for f in ("fs", "mode", "workload")}
        absent = [f for f, v in names.items() if not isinstance(v, str) or not v]
        if absent:
            raise ValueError(f"a cell without {', '.join(absent)}")
        params = _pairs(_of(dict, doc.get("params")) or {})
        key = doc.get("key") if isinstance(doc.get("key"), str) else "/".join(
            [*names.values(), *(f"{k}={param_text(v)}" for k, v in params)])
        return _lenient(cls, doc, key=key, **names, params=params, settings=_of(dict, doc.get("cell")),
                        env=_optional(Env, doc.get("env")), throughput=_optional(Throughput, doc.get("throughput")),
                        crash=_optional(CrashSummary, doc.get("crash")), seed=_of(dict, doc.get("seed")))
