"""`plugpull doctor`, `shell` and `disks`: is everything here, and what does a guest see?"""

import shutil
import sys
import time
from pathlib import Path

from plugpull import __version__
from plugpull.cli.common import (EXIT_OK, EXIT_USAGE, add_guest_options, guest_backend, kernel_source, on_off,
                                 one_of, print_table)
from plugpull.errors import PlugpullError, ToolMissing, UsageError
from plugpull.guest.contract.config import Bus, DiskSpec, MachineSpec
from plugpull.guest.rig import prepare_rig
from plugpull.runs.settings import option_type


def add_parsers(sub) -> None:
    d = sub.add_parser("doctor", help="versions, KVM, the image cache: is everything here?")
    add_guest_options(d)
    d.set_defaults(func=cmd_doctor)

    s = sub.add_parser("shell", help="boot a guest with a scratch disk and get its shell")
    add_guest_options(s)
    s.add_argument("--bus", type=one_of(Bus), choices=list(Bus), default=Bus.AHCI)
    s.add_argument("--write-cache", type=on_off, default=True, metavar="on|off")
    s.add_argument("--disk-mib", type=option_type("disk_mib", "shell"), default=512)
    s.set_defaults(func=cmd_shell)

    k = sub.add_parser("disks", help="boot each bus/cache combination and show the guest's view")
    add_guest_options(k)
    k.add_argument("--disk-mib", type=option_type("disk_mib", "disks"), default=512)
    k.set_defaults(func=cmd_disks)


def cmd_doctor(args) -> int:
    from plugpull.guest.image import build as image_mod, cache as imagecache
    from plugpull.guest.qemu.accel import kvm_device_usable
    from plugpull.guest.libvirt.daemon import doctor_rows
    from plugpull.guest.qemu.machine import cached_probe, qemu_version

    rows, missing = [], []

    def row(name, value, ok=True):
        rows.append((name, value, ok))
        if not ok:
            missing.append(name)

    row("plugpull", __version__)
    if shutil.which("qemu-system-x86_64"):
        row("qemu", qemu_version())
    else:
        row("qemu", "missing: install qemu-system-x86 (make deps)", False)
    try:
        kernel = kernel_source(args, ()) or image_mod.host_kernel()
        row("guest kernel", f"{kernel.release} ({kernel.kernel})")
    except ToolMissing as e:
        kernel = None
        row("guest kernel", f"missing: {e.hint}", False)
    recipe = image_recipe(row, image_mod.Recipe)
    package_rows(row, image_mod.package_versions, recipe.programs.values() if recipe else ())
    build_row(row)
    bisect_row(row)
    device_ok, reason = kvm_device_usable()
    probe = cached_probe() if device_ok else None
    if not device_ok:
        row("kvm", f"unusable: {reason}; guests run under TCG")
    elif probe is None:
        row("kvm", "/dev/kvm answers; not probed yet (the first guest boot probes it)")
    else:
        verdict = "usable" if probe["ok"] else "unusable, guests run under TCG"
        row("kvm", f"{verdict}: probe {probe.get('detail', 'recorded no detail')}")
    cached = imagecache.cached_images()
    current = "unknown"
    if kernel is not None and recipe is not None and not missing:
        try:
            plan = image_mod.plan_image(recipe, kernel)
            key = image_mod.cache_key(recipe, kernel, plan)
            built = any(p.parent.name == key for p in cached)
            current = f"{key} {'built' if built else 'not built yet (the first boot builds it)'}"
        except PlugpullError as e:
            row("image", f"cannot be built: {e}", False)
    row("image cache", f"{image_mod.cache_dir() / 'images'}: {len(cached)} image(s); current {current}")
    for name, value, ok in [*doctor_rows(args.backend == "libvirt"), *profile_rows(kernel)]:
        row(name, value, ok)
    width = max(len(r[0]) for r in rows)
    for name, value, ok in rows:
        print(f"{name:<{width}}  {value}")
    if missing:
        print(f"\nmissing: {', '.join(missing)}. Run `make deps` (as root).", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def profile_rows(kernel) -> list[tuple[str, str, bool]]:
    """A row per feature option (`--fs ext4+fast_commit`): whether the guest kernel has it, and
    what it does. Informative: an option the kernel lacks is refused when named, not here."""
    from plugpull.kernels import dotconfig
    from plugpull.testbed.features import FEATURES, check_kernel
    from plugpull.testbed.fs import FILESYSTEMS

    config = dotconfig.read(dotconfig.beside(kernel.kernel, kernel.modules_dir)) if kernel is not None else None
    rows = []
    for feature in FEATURES.values():
        fs = FILESYSTEMS[f"{feature.fs}+{feature.name}"]
        try:
            if kernel is not None:
                check_kernel(fs, kernel.release, config)
            has = "this kernel has it" if kernel is not None else "kernel unknown"
        except PlugpullError as e:
            has = "not on this kernel: " + str(e).split(": ", 1)[-1]
        rows.append((f"--fs {fs.name}", f"{has}; {feature.summary}", True))
    return rows


def image_recipe(row, recipe_class):
    """The guest image's recipe (images/guest.toml), read once; None, with a row saying why,
    when it cannot be read."""
    try:
        return recipe_class.load()
    except PlugpullError as e:
        row("image recipe", f"cannot be read: {e}", False)
        return None


def package_rows(row, package_versions, packages) -> None:
    """A row per Debian package the guest image copies programs from (images/guest.toml)."""
    packages = sorted(set(packages))
    versions = package_versions(packages)
    for package in packages:
        if package in versions:
            row(package, versions[package])
        else:
            row(package, f"missing: install {package} (make deps)", False)


def build_row(row) -> None:
    """What `kernels build` needs of the host (plugpull.kernels.build.preflight)."""
    from plugpull.kernels.build.preflight import TOOLS, missing_tools

    missing = missing_tools()
    if missing:
        packages = " ".join(sorted({package for _, package in missing}))
        row("kernels build", f"missing {', '.join(t.rsplit('/', 1)[-1] for t, _ in missing)}: install {packages} "
                             f"(make deps)", False)
    else:
        row("kernels build", f"{len(TOOLS)} tools and the libelf and openssl headers present")


def bisect_row(row, which=shutil.which) -> None:
    """What `bisect` needs besides `kernels build`'s tools: git."""
    found = which("git")
    if found:
        row("bisect", f"git ({found})")
    else:
        row("bisect", "missing git: install git (make deps)", False)


def boot_spec(args, disk_dir: Path, interactive=False) -> MachineSpec:
    from plugpull.guest.qemu.machine import create_disk
    disks = [DiskSpec(create_disk(disk_dir / "sda.img", args.disk_mib), args.bus, args.write_cache)]
    return MachineSpec(disks=tuple(disks), accel=args.accel, interactive=interactive)


SCRIPT_LIMIT = 1 << 20  # a script piped into `plugpull shell`, read whole before the guest boots


def cmd_shell(args) -> int:
    """A person at a terminal gets the guest's shell on its serial console; anything else on
    stdin (a pipe, a file, /dev/null) is a script the guest's `sh` runs, as ssh runs one
    without a terminal: it ends when its input does, whatever the guest's shell would wait for."""
    from plugpull.paths import make_tempdir

    if args.backend != "qemu":
        raise UsageError("plugpull shell needs --backend qemu: its console is this terminal")
    kernel = kernel_source(args, ())
    if sys.stdin is None:  # closed (`<&-`): no input at all
        script = b""
    else:
        script = None if sys.stdin.isatty() else read_script(sys.stdin.buffer)
    rig = prepare_rig(args.accel, kernel, guest_backend(args))
    work = make_tempdir("shell")
    try:
        spec = boot_spec(args, work, interactive=script is None)
        print(f"booting {spec.test_id()} (disk {args.disk_mib} MiB, scratch) ...", file=sys.stderr)
        with rig.machine(spec) as m:
            if script is None:
                print(f"ready in {m.boot_seconds:.1f} s under {m.accel}; the guest's shell follows", file=sys.stderr)
                type_into(m, sys.stdin.fileno())
            else:
                run_script(m, script)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return EXIT_OK


def read_script(stream, limit: int = SCRIPT_LIMIT) -> bytes:
    """All of stdin, up to `limit` bytes; more is refused before anything boots."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise UsageError(f"plugpull shell: the script on stdin is over {limit >> 20} MiB; "
                         "copy it onto a disk or give it to --workload script:PATH")
    return data


def run_script(m, script: bytes) -> None:
    """`sh` runs the script in the guest, its commands reading no input; what it printed is
    printed here, each stream to its own, and a status other than 0 said on stderr."""
    m.write_file("/tmp/pp-shell-script", script)
    result = m.run("sh /tmp/pp-shell-script", timeout=None)
    sys.stdout.buffer.write(result.stdout)
    sys.stdout.buffer.flush()
    sys.stderr.buffer.write(result.stderr)
    if result.rc != 0:
        print(f"plugpull shell: the guest's sh exited with status {result.rc}", file=sys.stderr)


def type_into(m, fd: int) -> None:
    """What the person types goes to the guest's console from now on, not before: the guest
    is up (its agent answered, so init holds the console open and its tty keeps what
    arrives), while bytes sent during boot reach a serial port nobody has opened and are
    lost. Keys typed during boot wait in this terminal's own buffer, which `raw` keeps.
    Returns when the guest powers off, or when the terminal is gone (then the guest is too)."""
    import termios

    saved = termios.tcgetattr(fd)
    raw(fd)
    try:
        pump(fd, m.console_input, m.pid)
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)


def raw(fd: int) -> None:
    """The terminal in raw mode, its pending input kept (`tty.setraw`'s default would flush
    it): every key, Ctrl-C and Ctrl-D too, goes to the guest."""
    import termios
    import tty

    tty.setraw(fd, termios.TCSANOW)


def pump(fd: int, sink, pid: int) -> None:
    """Copy `fd` into `sink` until the process `pid` exits or `fd` ends (then `sink` is closed)."""
    import os
    import select

    process = os.pidfd_open(pid)
    try:
        while True:
            ready, _, _ = select.select([fd, process], [], [])
            if process in ready:
                return
            data = os.read(fd, 4096)
            if not data:
                sink.close()
                return
            try:
                while data:  # an unbuffered sink may take part of it
                    data = data[sink.write(data):]
                sink.flush()
            except BrokenPipeError:  # QEMU is gone; the next select says so
                continue
    finally:
        os.close(process)


def cmd_disks(args) -> int:
    """Boot one guest per bus and cache setting and show the disk as the guest sees it."""
    from plugpull.paths import make_tempdir

    started = time.monotonic()
    rig = prepare_rig(args.accel, kernel_source(args, ()), guest_backend(args))
    print(f"image {rig.image.key} ({rig.image.kernel_release}) ready in {time.monotonic() - started:.1f} s",
          file=sys.stderr)
    header = ("bus", "qemu write-cache", "guest queue/write_cache", "hdparm -W", "accel", "boot s")
    rows = []
    combos = [(bus, wc) for bus in Bus for wc in (True, False)]
    work = make_tempdir("disks")
    try:
        for i, (bus, wc) in enumerate(combos, 1):
            print(f"[{i}/{len(combos)}] booting {bus}, write cache {'on' if wc else 'off'} ...", file=sys.stderr)
            args.bus, args.write_cache = bus, wc
            with rig.machine(boot_spec(args, work)) as m:
                queue = m.run("cat /sys/block/sda/queue/write_cache").check().text.strip()
                hd = m.run("hdparm -W /dev/sda").check().text
                hd_state = "on" if "(on)" in hd else "off" if "(off)" in hd else "?"
                rows.append((str(bus), "on" if wc else "off", queue, hd_state, str(m.accel), f"{m.boot_seconds:.1f}"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_table(header, rows)
    return EXIT_OK
