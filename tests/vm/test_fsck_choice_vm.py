"""`hunt --fsck every:4` in guests: the journal says how many distinct states fsck read, never
more than the hunt's distinct states, and the summary says it too."""

import json

import pytest

from plugpull import cli
from plugpull.hunt.journal import JOURNAL, SETTINGS

pytestmark = pytest.mark.vm


def test_a_hunt_with_fsck_every_4_reads_some_states_and_says_how_many(tmp_path, capsys):
    out = tmp_path / "h"
    assert cli.main(["hunt", "--seq", "1", "--sample", "4", "--fsck", "every:4", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    lines = [json.loads(line) for line in (out / JOURNAL).read_text().splitlines()]
    assert len(lines) == 4 and all(0 <= line["fscked"] <= line["distinct"] for line in lines)
    read, distinct = sum(line["fscked"] for line in lines), sum(line["distinct"] for line in lines)
    assert f"fsck (every:4): read {read} of {distinct} distinct states" in text
    assert json.loads((out / SETTINGS).read_text())["fsck"] == "every:4"
    assert cli.main(["hunt", "--seq", "1", "--sample", "4", "--out", str(out)]) == 2, "another --fsck is refused"
