"""`plugpull doctor`'s rows of what a command needs of the host."""

import pytest

from plugpull.cli.guests import bisect_row


@pytest.mark.parametrize("which, says, ok", [
    (lambda tool: f"/usr/bin/{tool}", "git (/usr/bin/git)", True),
    (lambda tool: None, "missing git: install git (make deps)", False),
])
def test_the_bisect_row_names_git_or_its_package(which, says, ok):
    rows = []
    bisect_row(lambda name, value, good=True: rows.append((name, value, good)), which=which)
    assert rows == [("bisect", says, ok)]
