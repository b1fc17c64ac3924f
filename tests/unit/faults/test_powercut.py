"""Fault, then power loss: the cuts after the fault, the options, the table column."""

import pytest

from plugpull.errors import UsageError
from plugpull.faults.powercut import PowerCuts, power_cuts, spread


def test_cuts_spread_from_after_the_fault_to_the_end():
    assert spread(10, 50, 4) == [20, 30, 40, 50]
    assert spread(10, 12, 4) == [11, 12]  # fewer entries than cuts: each once
    assert spread(0, 5, 1) == [5]
    assert spread(30, 30, 4) == [30] and spread(0, 0, 4) == []


def test_power_loss_options_are_checked_and_name_the_bad_one():
    assert power_cuts("prefix, reorder", 3) == PowerCuts(("prefix", "reorder"), 3)
    for models, cuts, bad in (("prefix,warp", 4, "'warp'"), ("prefix", 0, "--cuts 0"), (" , ", 4, "--power-loss")):
        with pytest.raises(UsageError, match=bad):
            power_cuts(models, cuts)


def test_bad_power_loss_exits_2_before_any_guest(capsys):
    from plugpull.cli import main

    assert main(["faults", "--fault", "error-writes@acks:1+3", "--power-loss", "sideways"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "sideways" in err


def test_the_table_shows_the_power_cuts_only_when_there_were_some():
    from plugpull.cli.faults import table

    run = {"fs": "ext4", "fault": "error-writes@acks:1+3", "workload": "fsync-retry", "verdict": "silent-loss",
           "told": {"errors": []}}
    header, _ = table([run])
    assert "after power loss" not in header
    header, rows = table([{**run, "power_loss": {"prefix": {"clean": 3, "data-loss": 1}}},
                          {**run, "power_loss": {"prefix": {"clean": 2}}}])
    assert dict(zip(header, rows[0]))["after power loss"] == "prefix clean:5 data-loss:1"
