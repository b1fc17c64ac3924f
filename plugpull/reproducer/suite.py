"""suites/reproducers/: one sh reproducer per live finding (findings.LIVE) and its fstests test
under fstests/FS/NNN with NNN.out, as `plugpull reproducer` writes them.

    python -m plugpull.reproducer.suite [DIR]     # (re)writes DIR (suites/reproducers)

`make reproducers` runs it; tests/unit/reproducer/test_suite.py checks the files are current."""

import sys
from pathlib import Path

from plugpull.errors import UsageError
from plugpull.files import atomic_write, check_output
from plugpull.reproducer import case_for
from plugpull.reproducer.findings import LIVE, Live
from plugpull.reproducer.forms import Target, texts

DIR = Path(__file__).resolve().parents[2] / "suites" / "reproducers"


def target(live: Live) -> Target:
    case = case_for(live.target, live.fs) if live.fs else None
    return Target(case, live.form, "the finding's form (plugpull/reproducer/findings.py)")


def sh_text(live: Live, fs: str | None = None) -> str:
    """The finding's sh reproducer, on `fs` instead of its own if given (the same workload
    and form, where a correct filesystem PASSes)."""
    t = target(live)
    if fs is not None:
        t = Target(case_for(live.target, fs), live.form, t.why)
    return texts(t, "sh")[0]


def files() -> dict[str, tuple[str, int]]:
    """Each file of the suite, relative to its directory: (text, mode)."""
    out = {}
    for live in LIVE:
        t = target(live)
        out[f"{live.name}.sh"] = (texts(t, "sh")[0], 0o755)
        test, golden = texts(t, "fstests", live.number)
        out[f"fstests/{live.fstests_dir}/{live.number}"] = (test, 0o755)
        out[f"fstests/{live.fstests_dir}/{live.number}.out"] = (golden, 0o644)
    return out


def write(where: Path) -> list[Path]:
    """Every file of the suite under `where`, each checked first (a symlink or a file that is
    not regular is refused, nothing written)."""
    made = files()
    for name in made:
        check_output(where / name, "the suite's file", parents=True)
    for name, (text, mode) in made.items():
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        atomic_write(where / name, text, mode)
    return [where / name for name in made]


def main(argv: list[str]) -> int:
    where = Path(argv[0]) if argv else DIR
    try:
        for path in write(where):
            print(f"wrote {path}")
    except UsageError as e:
        print(f"plugpull.reproducer.suite: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
