"""docs/ci.md's commands are ones plugpull takes: every `plugpull reproduce` line of its code
blocks (the CI jobs' too) parses, and its case files load and pass the checks made before a
run (the kernels are named, not fetched)."""

import re
import shlex
from pathlib import Path

import pytest

from plugpull import cli

ROOT = Path(__file__).resolve().parents[3]
CI = ROOT / "docs" / "ci.md"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def blocks(kind: str | None = None) -> list[str]:
    return [body for lang, body in _FENCE.findall(CI.read_text()) if kind is None or lang == kind]


def reproduce_lines() -> list[str]:
    return [line.strip() for body in blocks() for line in body.splitlines()
            if re.search(r"plugpull reproduce ", line)]


def argv_of(line: str) -> list[str]:
    """The words after `plugpull`, case files globbed from the repository's root."""
    words = shlex.split(line.split("||")[0])
    words = words[words.index("reproduce"):]
    out = []
    for word in words:
        if word.endswith(".toml"):
            found = sorted(ROOT.glob(word))
            assert found, f"{word}: no such case file"
            out += [str(p) for p in found]
        else:
            out.append(word)
    return out


def test_the_page_shows_reproduce_with_junit_in_both_jobs():
    lines = reproduce_lines()
    assert len(lines) >= 5 and all("--junit" in line for line in lines if "seed-*" in line)


@pytest.mark.parametrize("line", sorted(set(reproduce_lines())))
def test_each_command_is_accepted_before_a_run(line, tmp_path, monkeypatch):
    import plugpull.cli.reproduce as reproduce_cli

    monkeypatch.chdir(tmp_path)
    named = []
    monkeypatch.setattr(reproduce_cli, "kernel_list", lambda args, filesystems, default, known:
                        known.get(args.kernel) or known.setdefault(args.kernel, named.append(args.kernel) or [("host", None)]))
    args = cli.parser().parse_args(argv_of(line))
    planned = reproduce_cli.checked_cases(args)
    assert planned and args.junit and named == [args.kernel] == ["host,debian:6.12"]
    if "seed-*" in line:
        assert len(planned) == len(list(ROOT.glob("suites/cases/seed-*.toml"))) > 5
