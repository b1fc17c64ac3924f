"""One hunt over several kernels, with a fake recording and judging (no VM): each workload is
judged on each kernel, kernel by kernel; the journal keeps the kernel per line, a stopped hunt
goes on with the kernel it stopped on, a hunt of other kernels is refused, the same kernel
under two names is refused, and the summary says which kernels each failing workload fails on."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from plugpull import cli
from plugpull.errors import UsageError
from plugpull.generate.space import Space
from plugpull.guest.image.build import KernelSource
from plugpull.hunt.findings import Hunt, across
from plugpull.hunt.journal import JOURNAL, SETTINGS, Journal, read_lines
from plugpull.hunt.hunter import HuntSpec, workload_ids
from plugpull.hunt.summary import summary, workload_line
from plugpull.results import StateResult

OLD, NEW = "6.1.0-x", "7.3.4-y"


def rig(release: str):
    return SimpleNamespace(image=SimpleNamespace(kernel_release=release))


def state(verdict: str) -> StateResult:
    lost = [{"ack": 1, "reason": "A/foo: digest is 00, owed 11 (fsync-data, point 1)"}] if verdict != "clean" else []
    return StateResult(fs="ext4", mode="barrier", workload="gen:x", model="prefix", seed=1, cut=3, verdict=verdict,
                       reason=f"{verdict} here", acks_required=1, acks_lost=len(lost), fsck_rc=0, lost=lost)


class FakeKernels:
    """Stands in for the recording and the judging of each kernel: notes which kernels got a
    recording guest and which workloads were recorded on each, and fails the workloads of
    `fails[kernel]`. `stop_on`: the kernel on which the recording is interrupted (Ctrl-C)."""

    def __init__(self, fails: dict[str, set[int]], stop_on: str | None = None):
        self.fails, self.stop_on = fails, stop_on
        self.booted: list[str] = []
        self.recorded: list[tuple[str, str]] = []
        self.boots = 1

    def __call__(self, rig, *args, **kwargs):  # the Recorder of one kernel
        self.booted.append(rig.image.kernel_release)
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def close(self):
        pass

    def record_chunk(self, ids, spec, recorder, work, place, run, stop):
        if place.kernel == self.stop_on:
            raise KeyboardInterrupt
        lines = []
        for ident in ids:
            self.recorded.append((ident, place.kernel))
            bad = int(ident[-6:]) in self.fails.get(place.kernel, set())
            artifact = None
            if bad:
                place.failing(ident).mkdir(parents=True)
                artifact = str(place.failing(ident).relative_to(place.out))
            results = [state("clean"), state("data-loss" if bad else "clean")]
            lines.append({**workload_line(ident, "creat A/foo, fsync A/foo", results, artifact, 1.0),
                          "kernel": place.kernel})
        return [], lines, 0.0


@pytest.fixture
def fake(monkeypatch, tmp_path):
    from plugpull.hunt import hunter as hunter_mod

    def install(fails, stop_on=None) -> FakeKernels:
        kernels = FakeKernels(fails, stop_on)
        monkeypatch.setattr(hunter_mod, "formatted", lambda *a: tmp_path / "mkfs.img")
        monkeypatch.setattr(hunter_mod, "Recorder", kernels)
        monkeypatch.setattr(hunter_mod, "record_chunk", kernels.record_chunk)
        monkeypatch.setattr(hunter_mod, "judge_chunk", lambda *a: [])
        return kernels
    return install


SPEC = HuntSpec(1, sample=4, chunk=3)
IDS = workload_ids(Space(1), 4, 1)


def hunted(out: Path, *releases: str):
    from plugpull.hunt.hunter import hunt
    return hunt(SPEC, Space(1), [rig(r) for r in releases], out)


def number(ident: str) -> int:
    return int(ident[-6:])


def test_each_workload_is_judged_on_each_kernel_one_kernel_after_the_other(tmp_path, fake):
    kernels = fake({OLD: {number(IDS[0]), number(IDS[1])}, NEW: {number(IDS[1])}})
    run = hunted(tmp_path / "h", OLD, NEW)
    assert kernels.booted == [OLD, NEW]  # one recording guest per kernel
    assert kernels.recorded == [(i, OLD) for i in IDS] + [(i, NEW) for i in IDS]
    lines = read_lines(tmp_path / "h" / JOURNAL)
    assert [(line["id"], line["kernel"]) for line in lines] == kernels.recorded
    assert run.total == 8 and len(run.lines) == 8 and run.new == 8
    settings = json.loads((tmp_path / "h" / SETTINGS).read_text())
    assert settings["kernels"] == [OLD, NEW] and "kernel" not in settings
    assert [line["artifact"] for line in lines if line["failing"]] == [
        f"failing/{IDS[0]}/{OLD}", f"failing/{IDS[1]}/{OLD}", f"failing/{IDS[1]}/{NEW}"]
    assert all((tmp_path / "h" / line["artifact"]).is_dir() for line in lines if line["failing"])


def test_a_hunt_stopped_on_the_second_kernel_goes_on_with_it_alone(tmp_path, fake):
    first = fake({}, stop_on=NEW)
    with pytest.raises(KeyboardInterrupt):
        hunted(tmp_path / "h", OLD, NEW)
    assert first.recorded == [(i, OLD) for i in IDS]
    assert set(Journal(tmp_path / "h", {"kernels": [OLD, NEW]}).done) == {(i, OLD) for i in IDS}
    again = fake({})
    run = hunted(tmp_path / "h", OLD, NEW)
    assert again.booted == [NEW], "the kernel done before got a recording guest again"
    assert again.recorded == [(i, NEW) for i in IDS]
    assert run.new == 4 and len(run.lines) == 8
    assert [(line["id"], line["kernel"]) for line in run.lines] == [(i, k) for k in (OLD, NEW) for i in IDS]


def test_a_hunt_of_one_kernel_keeps_its_old_settings_and_goes_on_from_lines_without_a_kernel(tmp_path, fake):
    out = tmp_path / "h"
    out.mkdir()
    old = SPEC.settings(OLD)
    assert old["kernel"] == OLD and "kernels" not in old
    (out / SETTINGS).write_text(json.dumps(old))
    before = {k: v for k, v in workload_line(IDS[0], "creat A/foo", [state("clean")], None, 1.0).items()}
    (out / JOURNAL).write_text(json.dumps(before) + "\n")  # a line as hunts wrote them before: no kernel
    kernels = fake({OLD: {number(IDS[2])}})
    run = hunted(out, OLD)
    assert kernels.recorded == [(i, OLD) for i in IDS[1:]]
    assert json.loads((out / SETTINGS).read_text()) == old
    assert len(run.lines) == 4 and run.lines[0] == before
    assert [line["artifact"] for line in run.lines if line["failing"]] == [f"failing/{IDS[2]}"]  # as before


@pytest.mark.parametrize("held, here", [
    ((OLD, NEW), (OLD, "5.10.0-z")),
    ((OLD, NEW), (OLD,)),
    ((OLD,), (OLD, NEW)),
    ((OLD, NEW), (NEW, OLD)),
])
def test_a_hunt_of_other_kernels_is_refused_before_any_guest(tmp_path, fake, held, here):
    out = tmp_path / "h"
    Journal(out, SPEC.settings(*held)).append([{**workload_line(IDS[0], "x", [state("clean")], None, 1.0),
                                                "kernel": held[0]}])
    before = (out / JOURNAL).read_text()
    kernels = fake({})
    with pytest.raises(UsageError, match="holds a hunt of other settings .*kernel"):
        hunted(out, *here)
    assert kernels.booted == [] and (out / JOURNAL).read_text() == before


def test_the_same_kernel_twice_is_refused_by_the_library_too(tmp_path, fake):
    with pytest.raises(UsageError, match=f"{OLD} is given twice"):
        hunted(tmp_path / "h", OLD, OLD)
    assert not (tmp_path / "h").exists()


def lines_of(kernel: str, failing: set[str]) -> list[dict]:
    return [{**workload_line(i, "creat A/foo, fsync A/foo", [state("clean"), state("data-loss" if i in failing
                                                                                   else "clean")],
                             f"failing/{i}/{kernel}" if i in failing else None, 1.0), "kernel": kernel} for i in IDS]


def test_the_summary_says_the_kernels_and_which_each_failing_workload_fails_on():
    settings = SPEC.settings(OLD, NEW)
    lines = lines_of(OLD, {IDS[0], IDS[1]}) + lines_of(NEW, {IDS[1]})[:3]
    text = summary(settings, lines, 8).splitlines()
    assert text[0] == (f"hunt: seq 1 (sample 4 seed 1) on ext4 (barrier), kernels {OLD}, {NEW}: 7 of 8 workload "
                       "runs (4 workloads on each), 14 states (7 distinct), 2 failing on one kernel or more")
    assert text[1:3] == [f"  on {OLD}: 4 of 4 workloads, 8 states (4 distinct), 2 failing",
                         f"  on {NEW}: 3 of 4 workloads, 6 states (3 distinct), 1 failing"]
    assert text[3] == "verdicts: clean 11, data-loss 3"
    assert text[4:6] == [f"failing on {OLD}, {NEW}: 1 workload: {IDS[1]}",  # the most kernels first
                         f"failing on {OLD}; not on {NEW}: 1 workload: {IDS[0]}"]
    assert text[6] == "findings: 1 from 2 failing workloads (by rule: fsync-data 3)"
    assert text[7] == "finding 1: 2 workloads: creat X/f, fsync X/f"
    assert f"  on: ext4, kernels {OLD}, {NEW}" in text
    rows = [t for t in text if t.startswith("    ")]
    assert sorted(rows) == sorted([
        f"    {IDS[0]}  creat A/foo, fsync A/foo  on {OLD} (1 of 2 states)  failing/{IDS[0]}/",
        f"    {IDS[1]}  creat A/foo, fsync A/foo  on {OLD} (1 of 2 states), {NEW} (1 of 2 states)  failing/{IDS[1]}/"])


def test_a_workload_not_judged_yet_on_a_kernel_is_said_so():
    settings = SPEC.settings(OLD, NEW)
    lines = lines_of(OLD, {IDS[3]}) + lines_of(NEW, set())[:2]
    assert f"failing on {OLD}; not judged yet on {NEW}: 1 workload: {IDS[3]}" in summary(settings, lines, 8)


def test_a_finding_takes_its_kernels_from_its_lines_and_counts_a_workload_once():
    settings = SPEC.settings(OLD, NEW)
    (found,) = across([Hunt(None, settings, lines_of(OLD, {IDS[1]}) + lines_of(NEW, {IDS[1]}))])
    assert found.kernels == [OLD, NEW] and found.count == 1 and len(found.workloads) == 2
    (only_new,) = across([Hunt(None, settings, lines_of(OLD, set()) + lines_of(NEW, {IDS[2]}))])
    assert only_new.kernels == [NEW]


class Started(BaseException):
    """A stand-in for the first step of real work."""


@pytest.fixture
def cli_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLUGPULL_CACHE", str(tmp_path / "cache"))
    return tmp_path


def refused(tmp_path, capsys, argv, *words) -> None:
    __tracebackhide__ = True
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and all(w in err for w in words), err
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == before, "a refusal made something"


def source(release: str) -> KernelSource:
    return KernelSource(Path("/nonexistent/vmlinuz"), Path("/nonexistent/lib/modules") / release)


def test_one_kernel_under_two_names_is_refused_before_any_image(cli_dir, capsys, monkeypatch):
    import plugpull.cli.hunt as hunt_cli
    import plugpull.guest.rig as rig_mod
    monkeypatch.setattr(hunt_cli, "kernel_list", lambda args, _: [("debian:6.12", source("6.12.117-amd64")),
                                                                ("debian:6.12.117-1", source("6.12.117-amd64"))])
    monkeypatch.setattr(rig_mod, "prepare_rig", lambda *a: (_ for _ in ()).throw(Started()))
    refused(cli_dir, capsys, ["hunt", "--seq", "1", "--sample", "2", "--kernel", "debian:6.12,debian:6.12.117-1"],
            "--kernel: debian:6.12 and debian:6.12.117-1 are one kernel (6.12.117-amd64): name it once")


def test_the_host_kernel_and_its_debian_name_are_refused_once_its_release_is_known(cli_dir, capsys, monkeypatch):
    import plugpull.cli.hunt as hunt_cli
    import plugpull.guest.rig as rig_mod
    monkeypatch.setattr(hunt_cli, "kernel_list", lambda args, _: [("host", None), ("debian:6.1", source(OLD))])
    monkeypatch.setattr(rig_mod, "prepare_rig", lambda accel, kernel: rig(OLD))
    refused(cli_dir, capsys, ["hunt", "--seq", "1", "--sample", "2", "--kernel", "host,debian:6.1"],
            f"--kernel: host and debian:6.1 are one kernel ({OLD})")


@pytest.mark.parametrize("held, argv_kernel", [((OLD, NEW), "host"), ((OLD,), "host,debian:7.3")])
def test_an_out_holding_a_hunt_of_other_kernels_is_refused_before_any_image(cli_dir, capsys, monkeypatch, held,
                                                                           argv_kernel):
    import plugpull.cli.hunt as hunt_cli
    import plugpull.guest.rig as rig_mod
    named = {"host": ("host", None), "debian:7.3": ("debian:7.3", source(NEW))}
    monkeypatch.setattr(hunt_cli, "kernel_list", lambda args, _: [named[t] for t in args.kernel.split(",")])
    monkeypatch.setattr(rig_mod, "prepare_rig", lambda *a: (_ for _ in ()).throw(Started()))
    (cli_dir / "h").mkdir()
    (cli_dir / "h" / SETTINGS).write_text(json.dumps(HuntSpec(1, sample=2).settings(*held)))
    refused(cli_dir, capsys, ["hunt", "--seq", "1", "--sample", "2", "--kernel", argv_kernel, "--out", "h"],
            "holds a hunt of other settings", "kernel")


def test_the_same_kernels_out_goes_on_to_the_images(cli_dir, monkeypatch):
    """With the host's release not known yet, the kernel held at its place stands in."""
    import plugpull.cli.hunt as hunt_cli
    import plugpull.guest.rig as rig_mod
    monkeypatch.setattr(hunt_cli, "kernel_list", lambda args, _: [("host", None), ("debian:7.3", source(NEW))])
    monkeypatch.setattr(rig_mod, "prepare_rig", lambda *a: (_ for _ in ()).throw(Started()))
    (cli_dir / "h").mkdir()
    (cli_dir / "h" / SETTINGS).write_text(json.dumps(HuntSpec(1, sample=2).settings(OLD, NEW)))
    with pytest.raises(Started):
        cli.main(["hunt", "--seq", "1", "--sample", "2", "--kernel", "host,debian:7.3", "--out", "h"])


def test_the_report_of_a_hunt_of_two_kernels_has_a_page_per_kernel_of_a_workload(tmp_path):
    import shutil
    from tests.unit.report.test_hunts import saved_states
    from plugpull.report.hunts import hunt_report
    hunt_dir = tmp_path / "h"
    hunt_dir.mkdir()
    (hunt_dir / SETTINGS).write_text(json.dumps(SPEC.settings(OLD, NEW)))
    lines = []
    for line in lines_of(OLD, {IDS[1]})[1:2] + lines_of(NEW, {IDS[1]})[1:2]:
        saved = saved_states(tmp_path / "scratch", line)  # failing/ID/ as one kernel's hunt keeps it
        shutil.move(tmp_path / "scratch" / saved["artifact"], hunt_dir / line["artifact"])
        shutil.rmtree(tmp_path / "scratch")
        lines.append(line)
    (hunt_dir / JOURNAL).write_text("".join(json.dumps(line) + "\n" for line in lines))
    hunt_report([hunt_dir], tmp_path / "report")
    pages = sorted(p.name for p in (tmp_path / "report" / "workloads").glob("*.html"))
    assert pages == [f"1-{IDS[1]}-{OLD}.html", f"1-{IDS[1]}-{NEW}.html"]
    assert f"kernels {OLD}, {NEW}" in (tmp_path / "report" / "findings.html").read_text()


def test_the_host_stands_in_for_a_held_kernel_only_where_the_others_match(tmp_path):
    """Before the host's image is made, a hunt going on puts the held kernel at the host's
    place; where the other kernels differ, the refusal shows `host`, not that release."""
    from plugpull.cli.hunt import early_settings
    (tmp_path / SETTINGS).write_text(json.dumps(HuntSpec(1).settings(OLD, NEW)))
    spec, third = HuntSpec(1), SimpleNamespace(release="6.12.117-z")
    assert early_settings(spec, [("host", None), ("debian:7.3", SimpleNamespace(release=NEW))], tmp_path)["kernels"] \
        == [OLD, NEW]
    assert early_settings(spec, [("host", None), ("debian:6.12", third)], tmp_path)["kernels"] == ["host", third.release]
    assert early_settings(spec, [("host", None)], tmp_path)["kernel"] == "host"
