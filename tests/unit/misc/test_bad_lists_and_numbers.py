"""Comma lists, numbers and long values as a new user writes them: an empty name in any list
(`--fs 'ext4,'`), a number `float` takes but the rule does not (`--days 1_000`, Arabic-Indic
digits), and a 20 KB value are each one short line, exit 2, nothing made."""

import pytest

from plugpull.values import decimal, names, one_line
from tests.cli_run import exit_code, files_under

LONG = "x" * 20000


def refused_here(argv, capsys, tmp_path, monkeypatch, *words) -> str:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLUGPULL_CACHE", str(tmp_path / "cache"))
    assert exit_code(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and all(w in err for w in words), err
    assert files_under(tmp_path) <= {"cache"}, files_under(tmp_path)
    return err


@pytest.mark.parametrize("argv, flag", [
    (["matrix", "--fs", "ext4,"], "--fs"), (["matrix", "--mode", "barrier,"], "--mode"),
    (["matrix", "--fs", ",ext4"], "--fs"), (["crash", "--model", "prefix,,reorder"], "--model"),
    (["matrix", "--workload", "sqlite,"], "--workload"), (["generate", "--seq", "1", "--ops", "rename,"], "--ops"),
    (["faults", "--fs", "ext4,", "--fault", "error-writes"], "--fs"),
    (["faults", "--fs", "ext4", "--fault", "error-writes", "--power-loss", "prefix,"], "--power-loss"),
    (["crash", "--hosts", "qemu:///system,"], "--hosts"),  # it started libvirt's daemons, then ran on one host
])
def test_an_empty_name_in_a_list_is_refused_not_dropped(argv, flag, capsys, tmp_path, monkeypatch):
    refused_here(argv, capsys, tmp_path, monkeypatch, flag, "empty name")


@pytest.mark.parametrize("argv, flag", [
    (["kernels", "prune", "--days", "1_000"], "--days"), (["kernels", "prune", "--days", "٣٠"], "--days"),
    (["kernels", "prune", "--days", "1e3"], "--days"), (["kernels", "prune", "--days", "inf"], "--days"),
    (["kernels", "prune", "--days", "+30"], "--days"),
    (["reproduce", "x.toml", "--scale", "٠.5"], "--scale"), (["reproduce", "x.toml", "--scale", "1e-1"], "--scale"),
    (["crash", "--trigger", "time:1_0"], "trigger"), (["crash", "--trigger", "time:١"], "trigger"),
])
def test_a_number_float_takes_but_the_rule_does_not_is_refused(argv, flag, capsys, tmp_path, monkeypatch):
    refused_here(argv, capsys, tmp_path, monkeypatch, flag)


@pytest.mark.parametrize("argv", [
    ["matrix", "--fs", f"ext4,{LONG}"], ["crash", "--model", LONG], ["generate", "--seq", "1", "--ops", LONG],
    ["faults", "--fs", "ext4", "--fault", LONG], ["crash", "--cuts", LONG], ["crash", "--fsck", LONG],
    ["crash", "--fs", f"ext4+{LONG}"], ["crash", "--kernel", LONG], ["kernels", "build", LONG],
])
def test_a_20_kb_value_is_echoed_cut_short(argv, capsys, tmp_path, monkeypatch):
    assert len(refused_here(argv, capsys, tmp_path, monkeypatch)) < 700


def test_the_readers_by_themselves():
    assert names("ext4,xfs") == ("ext4", "xfs") and names("ext4") == ("ext4",)
    for text in ("ext4,", ",", "", "a,,b", "a, ,b"):
        with pytest.raises(ValueError, match="empty name"):
            names(text)
    assert decimal("30") == 30 and decimal("0.5") == 0.5 and decimal(".5") == 0.5 and decimal("2.") == 2
    for text in ("1_000", "٣٠", "1e3", "inf", "nan", "-1", "+1", " 1", "", ".", "1.2.3", "9" * 40):
        with pytest.raises(ValueError):
            decimal(text)
    path = "/" + "/".join(["directory"] * 20)  # 200 characters: a path a person types is kept whole
    assert one_line(f"no {path} here") == f"no {path} here"
    assert one_line(f"bad '{LONG}' here") == f"bad '{LONG[:119]}... (20002 characters) here"
