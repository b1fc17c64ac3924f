"""`plugpull kernels`: the Debian kernels cached here and those the archive offers; with specs,
fetch them (a CI job's warm-up)."""

import sys
import time

from plugpull.cli.common import EXIT_OK, print_table
from plugpull.log import add_log_options


def add_parsers(sub) -> None:
    k = sub.add_parser("kernels", help="Debian kernels: what is cached, what the archive offers; fetch some")
    k.add_argument("specs", nargs="*", metavar="debian:VERSION",
                   help="fetch and unpack these (e.g. debian:6.12 debian:7.3), then list")
    k.add_argument("--refresh", action="store_true", help="fetch the archive's package lists even if recent")
    add_log_options(k)
    k.set_defaults(func=cmd_kernels)


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
    print_offered(kernels)
    return EXIT_OK


def print_cached(kernels) -> None:
    cached = kernels.cached()
    print(f"cached ({kernels.root / 'trees'}): {len(cached) or 'none'}")
    if cached:
        rows = [(k.release, k.version, ",".join(k.manifest.get("suites", [])), f"{k.bytes() / 2**20:.0f} MiB",
                 f"debian:{k.version}") for k in cached]
        print_table(("release", "version", "suite", "size", "spec"), rows)


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
