"""`kernels build`: a kernel built from source, cached by what it is made of.

    built = build_kernel(BuildRequest(parse_build_source("debian:7.3"), [Path("fix.patch")], None, None))
    built.name   # "7.3.4-1-fix": boot it with --kernel build:7.3.4-1-fix

Everything the user gave is checked before anything is built (the spec, the name, the patches
as files, the tools, the free disk); the patches are tried on the source, in order, before
the build starts. A refusal is a `UsageError` (exit code 2) and caches nothing; a build that
fails is `BuildFailed` (exit code 3), its log kept and named.
"""

import fcntl
import hashlib
import json
import shutil
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from plugpull.errors import UsageError
from plugpull.files import atomic_write_json
from plugpull.kernels import dotconfig
from plugpull.kernels.build import config as kconfig
from plugpull.kernels.build.debsrc import source_path, source_tree
from plugpull.kernels.build.estimate import estimated_lines
from plugpull.kernels.build.make import CCACHE, Make, expected_lines, remember_lines
from plugpull.kernels.build.patches import as_change, check_patches, read_patch
from plugpull.kernels.build.preflight import check_disk, check_tools, needed_bytes
from plugpull.kernels.build.buildspec import BUILD, TreeSource, check_name, default_name
from plugpull.kernels.build.store import Built, BuildStore, build_key
from plugpull.kernels.build.worktree import Workspace, refuse_configured, tree_identity
from plugpull.kernels.naming import DebianKernel


@dataclass(frozen=True)
class BuildRequest:
    source: DebianKernel | TreeSource
    patches: list  # `Change`s (a path: applied as it is), in the order given
    name: str | None
    config: Path | None
    beside: bool = False  # a tree plugpull keeps as `src` (a bisect's clone): its objects go to `../out`

    def __post_init__(self):
        object.__setattr__(self, "patches", [as_change(p) for p in self.patches])


@dataclass(frozen=True)
class BuildResult:
    name: str
    built: Built
    cached: bool
    seconds: dict = field(default_factory=dict)

    @property
    def spec(self) -> str:
        return f"{BUILD}{self.name}"


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class BuildPlan:
    """A request resolved: what the source is, the key, the name; nothing fetched or built yet."""

    request: BuildRequest
    identity: dict
    version: str
    suites: tuple[str, ...]
    patch_bytes: list[bytes]
    fragment: str
    key: str
    name: str


def plan_build(request: BuildRequest, kernels, store: BuildStore) -> BuildPlan:
    if request.name is not None:
        check_name(request.name)
    patch_bytes = [read_patch(p.path, p.flag) for p in request.patches]
    check_tools()
    fragment = kconfig.fragment_text(request.config)
    kconfig.parse_fragment(fragment, "the config fragments")
    if isinstance(request.source, TreeSource):
        refuse_configured(request.source.path)
        identity, version, suites = tree_identity(request.source.path), "", ()
    else:
        offer = kernels.choose(request.source, "kernels build")
        identity, version, suites = {"debian": offer.version}, offer.version, offer.suites
    key = build_key(identity, patch_bytes, fragment, [p.reverse for p in request.patches])
    name = request.name or default_name(request.source, version, request.patches)
    store.check_name_free(name, key)
    return BuildPlan(request, identity, version, suites, patch_bytes, fragment, key, name)


def build_kernel(request: BuildRequest, kernels=None, store: BuildStore | None = None) -> BuildResult:
    from plugpull.kernels.resolve import Kernels
    kernels = kernels or Kernels()
    store = store or BuildStore(kernels.root / "builds")
    started = time.monotonic()
    plan = plan_build(request, kernels, store)
    workspace = workspace_for(plan, kernels, store)
    source_ready = isinstance(request.source, TreeSource) or (workspace.source / "Makefile").is_file()
    if source_ready:  # checked again even when cached: a build made before a stricter check stays refused
        check_patches(workspace.source, request.patches)
    cached = store.load(plan.key)
    if cached is not None:
        store.name(plan.name, plan.key)
        return BuildResult(plan.name, cached, True, {"total": time.monotonic() - started})
    check_disk(store.root, needed_bytes(source_ready, not (workspace.out / ".config").is_file()))
    seconds = {}
    if not source_ready:
        _, how = source_tree(kernels, plan.version, plan.suites, progress=say)
        seconds["source"] = how.get("seconds", 0)
        check_patches(workspace.source, request.patches)
    with locked(workspace.root):
        built = store.load(plan.key)  # built meanwhile by another process
        if built is None:
            try:
                built = _build(plan, workspace, store, seconds)
            except UsageError:  # a refusal (the config) leaves no log behind; a failure keeps it
                store.log(plan.key).unlink(missing_ok=True)
                raise
    store.name(plan.name, plan.key)
    seconds["total"] = time.monotonic() - started
    return BuildResult(plan.name, built, False, seconds)


def workspace_for(plan: BuildPlan, kernels, store: BuildStore) -> Workspace:
    source = plan.request.source
    if isinstance(source, TreeSource):
        copied = bool(plan.request.patches)
        tag = f"src-{build_key({'tree': str(source.path)}, [], '')[:12]}-{'copy' if copied else 'direct'}"
        return Workspace(store.root / "work" / tag, source.path, copied, pristine=False,
                         beside=not copied and plan.request.beside)
    return Workspace(store.root / "work" / f"debian-{plan.version.replace(':', '%')}",
                     source_path(kernels, plan.version), copied=True, pristine=True)


@contextmanager
def locked(folder: Path):
    """One build at a time in a workspace (its objects are shared)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _build(plan: BuildPlan, workspace: Workspace, store: BuildStore, seconds: dict) -> Built:
    log = store.log(plan.key)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(f"plugpull kernels build {plan.request.source} -> {BUILD}{plan.name} (key {plan.key})\n")
    cold = not (workspace.out / "vmlinux").is_file()  # a configure that failed leaves .config
    step = time.monotonic()
    workspace.prepare(plan.request.patches)
    make = Make(workspace.tree, workspace.out, log, ccache=store.ccache if shutil.which(CCACHE) else None)
    configure(plan, workspace, make)
    seconds["configure"] = time.monotonic() - step
    step = time.monotonic()
    kind = "cold" if cold else "incremental"
    history = workspace.root / "lines.json"
    if cold:
        expected = estimated_lines(workspace.tree, dotconfig.values((workspace.out / ".config").read_text()))
        basis = "estimated from the tree's Makefiles and this .config"
    else:
        expected, basis = expected_lines(history, kind), "the last incremental build of this source"
    say(f"building {plan.request.source} ({kind}; log {log})")
    lines = make.run("bzImage", "modules", expected=expected, label=f"make ({kind})", basis=basis)
    remember_lines(history, kind, lines)
    seconds["make"] = time.monotonic() - step
    step = time.monotonic()
    built = _install(plan, workspace, make, store, seconds)
    seconds["install"] = time.monotonic() - step
    return built


def configure(plan: BuildPlan, workspace: Workspace, make: Make) -> None:
    """The .config: allnoconfig, the kernel's kvm_guest.config, the fragments, olddefconfig; an
    asked option the tree does not declare, or that Kconfig would not give, is refused."""
    guest = kconfig.guest_config(workspace.tree)
    user = f" + {plan.request.config.name}" if plan.request.config else ""
    say(f"configuring ({kconfig.BASE}{' + ' + guest if guest else ''} + {kconfig.FRAGMENT.name}{user})")
    version = kconfig.tree_version(workspace.tree)
    wanted = {**kconfig.parse_fragment(plan.fragment, "the config fragments", version),
              "CONFIG_LOCALVERSION": f'"-{plan.key[:8]}"', "CONFIG_LOCALVERSION_AUTO": None}
    where = str(plan.request.source)
    kconfig.refuse_undeclared(workspace.tree, wanted, where)
    make.run(kconfig.BASE, label=kconfig.BASE)
    if guest:
        make.run(guest, label=guest)
    else:
        say(f"this tree has no {kconfig.GUEST}: {kconfig.BASE} and {kconfig.FRAGMENT.name} only")
    kconfig.merge(workspace.out / ".config", wanted)
    make.run("olddefconfig", label="olddefconfig")
    kconfig.check_config(workspace.out / ".config", wanted, where)


def _install(plan: BuildPlan, workspace: Workspace, make: Make, store: BuildStore, seconds: dict) -> Built:
    """The kernel and its modules tree into the cache entry, whole or not at all."""
    final = store.entry(plan.key)
    staging = final.with_name(f".{plan.key}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        make.run("modules_install", f"INSTALL_MOD_PATH={staging}", "INSTALL_MOD_STRIP=1", label="modules_install")
        release = (workspace.out / "include" / "config" / "kernel.release").read_text().strip()
        modules = staging / "lib" / "modules" / release
        for link in ("build", "source"):
            (modules / link).unlink(missing_ok=True)
        shutil.copyfile(workspace.out / "arch" / "x86" / "boot" / "bzImage", staging / "bzImage")
        shutil.copyfile(workspace.out / ".config", staging / "config")
        request = plan.request
        manifest = {"spec": str(request.source), "name": plan.name, "release": release, "source": plan.identity,
                    "patches": [{"file": p.name, "sha256": hashlib.sha256(b).hexdigest(),
                                 **({"reverse": True} if p.reverse else {})}
                                for p, b in zip(request.patches, plan.patch_bytes)],
                    "config": request.config.name if request.config else None, "log": str(make.log),
                    "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "seconds": {k: round(v, 1) for k, v in seconds.items()}}
        atomic_write_json(staging / "manifest.json", manifest)
        staging.rename(final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return Built(final, json.loads((final / "manifest.json").read_text()))
