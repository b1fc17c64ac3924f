"""`plugpull kernels`: the Debian kernels cached here, the kernels built here and those the archive
offers; with specs, fetch them (a CI job's warm-up). `plugpull kernels build SPEC`: build one
from source (plugpull.kernels.build). `plugpull kernels prune`: the cache pruned (plugpull.prune)."""

import argparse
import sys
import time

from plugpull.cli.common import EXIT_OK, print_table
from plugpull.errors import UsageError
from plugpull.files import a_path
from plugpull.log import add_log_options
from plugpull.values import decimal, shown

FETCH_USAGE = "kernels [fetch] [debian:VERSION ...] [--refresh]"
BUILD_USAGE = "kernels build SPEC [--patch FILE | --revert FILE]... [--name NAME] [--config FRAGMENT]"
PRUNE_USAGE = "kernels prune [--days N] [--dry-run]"
DEFAULT_DAYS = 30


def add_parsers(sub) -> None:
    k = sub.add_parser("kernels", help="kernels: what is cached and built here, what the archive offers; "
                                       "fetch some, or build one from source (kernels build SPEC)",
                       usage=f"%(prog)s [fetch] [debian:VERSION ...] [--refresh]\n       plugpull {BUILD_USAGE}"
                             f"\n       plugpull {PRUNE_USAGE}")
    words = k.add_subparsers(dest="kernels_command", metavar="{fetch,build,prune}", prog="plugpull kernels")
    _add_fetch(words)
    _add_build(words)
    _add_prune(words)
    k.default_to("fetch")  # `plugpull kernels debian:6.12`: the word is optional


def _add_fetch(words) -> None:
    f = words.add_parser("fetch", usage=f"plugpull {FETCH_USAGE}",
                         help="the kernels cached, built and offered (the default); fetch these first")
    f.add_argument("specs", nargs="*", metavar="debian:VERSION",
                   help="fetch and unpack these (e.g. debian:6.12 debian:7.3), then list")
    f.add_argument("--refresh", action="store_true", help="fetch the archive's package lists even if recent")
    add_log_options(f)
    f.set_defaults(func=cmd_kernels)


def _add_build(words) -> None:
    b = words.add_parser("build", usage=f"plugpull {BUILD_USAGE}", help="build a kernel from source")
    b.add_argument("spec", metavar="SPEC",
                   help="debian:VERSION (Debian's source, its patches applied) or src:DIR (a kernel tree, built "
                        "out of tree and left untouched)")
    b.add_argument("--patch", action="append", type=a_patch, default=[], metavar="FILE",
                   help="a -p1 patch applied on the source, in the order given (repeatable)")
    b.add_argument("--revert", action="append", type=a_revert, dest="patch", metavar="FILE",
                   help="a -p1 patch applied in reverse (patch -R: a fix taken out), in order with --patch "
                        "(repeatable)")
    b.add_argument("--name", help="the build's name, booted as --kernel build:NAME "
                                  "(default: the version and the patches' names)")
    b.add_argument("--config", type=a_path, metavar="FRAGMENT",
                   help="a config fragment (CONFIG_X=y lines) merged after plugpull's own")
    add_log_options(b)
    b.set_defaults(func=cmd_build)


def _add_prune(words) -> None:
    p = words.add_parser("prune", usage=f"plugpull {PRUNE_USAGE}", help="the cache pruned by its policy")
    p.add_argument("--days", type=positive_days, metavar="N",
                   help=f"keep what was used in the last N days (default {DEFAULT_DAYS}) and the newest of each "
                        "kind")
    p.add_argument("--dry-run", action="store_true", help="say what would go, remove nothing")
    add_log_options(p)
    p.set_defaults(func=cmd_prune)


def cmd_kernels(args) -> int:
    from plugpull.kernels import Kernels, parse_debian
    from plugpull.kernels.option import offered_once

    specs = [parse_debian(s, "kernels") for s in args.specs]
    kernels = Kernels()
    kernels.apt.archive  # no archive known: one line before anything is listed or made
    if args.refresh:
        kernels.refresh(force=True)
    offered_once(args.specs, "kernels", kernels)  # every spec offered, once, before anything is fetched
    for spec in specs:
        started = time.monotonic()
        got = kernels.resolve(spec)
        how = "fetched" if got.downloaded else "cached"
        times = ", ".join(f"{k} {v:.1f} s" for k, v in got.seconds.items())
        print(f"{spec}: {got.kernel.release} ({got.kernel.version}), {how} in "
              f"{time.monotonic() - started:.1f} s ({times})", file=sys.stderr)
    print_cached(kernels)
    print()
    print_built(kernels)
    print()
    print_offered(kernels)
    return EXIT_OK


def cmd_build(args) -> int:
    """Build, then say what was built; the last line on stdout is its spec (build:NAME)."""
    from plugpull.kernels.build import BuildRequest, build_kernel, parse_build_source

    request = BuildRequest(parse_build_source(args.spec), list(args.patch), args.name, args.config)
    result = build_kernel(request)
    how = "cached" if result.cached else "built"
    times = ", ".join(f"{k} {v:.0f} s" for k, v in result.seconds.items())
    print(f"{request.source}: {result.built.release} {how} in {times} ({result.built.entry})", file=sys.stderr)
    print(result.spec)
    return EXIT_OK


def a_patch(text: str):
    from plugpull.kernels.build.patches import Change
    return Change(a_path(text))


def a_revert(text: str):
    from plugpull.kernels.build.patches import Change
    return Change(a_path(text), reverse=True)


def positive_days(text: str) -> float:
    try:
        days = decimal(text)
    except ValueError:
        days = -1.0
    if not 0 <= days < 1e6:
        raise argparse.ArgumentTypeError(f"expected a number of days, 0 or more: {shown(text)}")
    return days


def cmd_prune(args) -> int:
    """The cache pruned by its policy (plugpull.prune): a line per kind of what went and how much."""
    from plugpull.paths import cache_dir
    from plugpull.prune import prune

    days = DEFAULT_DAYS if args.days is None else args.days
    root = cache_dir()
    kinds = cache_kinds()
    readable(root / kind.name for kind in kinds)
    outcomes = prune(root, kinds, days, args.dry_run)
    for outcome in outcomes:
        print(outcome.line(args.dry_run))
        for path, why in outcome.failed:
            print(f"plugpull: could not remove {path} ({why}); the rest went on", file=sys.stderr)
    if not outcomes:
        print(f"{root}: no cache yet")
    return EXIT_OK


def cache_kinds() -> list:
    """Every cache's kind, registered by the module that keeps the cache (`prune.register`),
    each imported here for it."""
    from plugpull import workdirs  # noqa: F401
    from plugpull.bisect import git  # noqa: F401
    from plugpull.cluster import workdir  # noqa: F401
    from plugpull.generate import counts  # noqa: F401
    from plugpull.kernels import resolve  # noqa: F401
    from plugpull.kernels.build import debsrc, store  # noqa: F401
    from plugpull.prune import registered
    from plugpull.reproducer import fstests_root  # noqa: F401
    from plugpull.testbed import tree  # noqa: F401
    return registered()


def readable(folders) -> None:
    """Every kind's folder there can be listed, or a UsageError names it before anything is
    removed (another user's cache, a folder of mode 000), not a harness failure half way."""
    import os
    for folder in folders:
        if folder.is_dir() and not folder.is_symlink():
            try:
                with os.scandir(folder) as entries:
                    next(entries, None)
            except OSError as e:
                raise UsageError(f"kernels prune: {folder} cannot be read ({e.strerror}): nothing was removed; "
                                 "prune the cache as the user who owns it") from None


def print_cached(kernels) -> None:
    cached = kernels.cached()
    print(f"cached ({kernels.root / 'trees'}): {len(cached) or 'none'}")
    if cached:
        rows = [(k.release, k.version, ",".join(k.manifest.get("suites", [])), f"{k.bytes() / 2**20:.0f} MiB",
                 f"debian:{k.version}") for k in cached]
        print_table(("release", "version", "suite", "size", "spec"), rows)


def print_built(kernels) -> None:
    from plugpull.kernels.build import BuildStore

    store = BuildStore(kernels.root / "builds")
    built = store.names()
    print(f"built ({store.root}): {len(built) or 'none'}")
    if built:
        rows = [(f"build:{name}", b.release, b.manifest.get("spec", "?"),
                 " ".join(("revert:" if p.get("reverse") else "") + p["file"] for p in b.manifest.get("patches", []))
                 or "-",
                 b.manifest.get("config") or "-", f"{b.bytes() / 2**20:.0f} MiB") for name, b in built]
        print_table(("spec", "release", "source", "patches", "config", "size"), rows)


def print_offered(kernels) -> None:
    """The newest kernel of each series in the package lists, fetching them when stale;
    the archive not answering (and no lists) is exit code 3, after the cached ones."""
    from plugpull.kernels.offers import newest_per_series

    kernels.refresh()
    offers = kernels.offers()
    cached = {(k.release, k.version) for k in kernels.cached()}
    age = kernels.apt.index_age() or 0
    when = f"{age / 60:.0f} min" if age < 7200 else f"{age / 3600:.0f} h"
    if not offers:
        print(f"offered by {kernels.where}, lists fetched {when} ago: no kernel")
        return
    print(f"offered by {kernels.where}, lists fetched {when} ago: "
          f"{len(offers)} kernels in {len({o.series for o in offers})} series; the newest of each:")
    rows = [(f"debian:{o.series}", o.version, o.suite, o.release, len(o.packages),
             "yes" if (o.release, o.version) in cached else "no") for o in newest_per_series(offers)]
    print_table(("spec", "newest", "suite", "release", "packages", "cached"), rows)
