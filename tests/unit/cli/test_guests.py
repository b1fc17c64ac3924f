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


def test_a_package_row_for_each_package_the_image_copies_from():
    """Every package of the image recipe has a row, once (attr's setfattr and getfattr too); one
    dpkg does not know is missing, naming `make deps`."""
    from plugpull.cli.guests import package_rows
    from plugpull.guest.image.build import Recipe

    programs = Recipe.load().programs
    rows = []
    package_rows(lambda name, value, good=True: rows.append((name, value, good)),
                 lambda packages: {p: "1.0" for p in packages if p != "attr"}, programs.values())
    assert [name for name, _, _ in rows] == sorted(set(programs.values()))
    assert ("attr", "missing: install attr (make deps)", False) in rows
    assert all(good for name, _, good in rows if name != "attr")


def test_a_recipe_that_cannot_be_read_is_a_row_not_a_crash():
    from plugpull.cli.guests import image_recipe
    from plugpull.errors import PlugpullError

    class Broken:
        @staticmethod
        def load():
            raise PlugpullError("images/guest.toml: not TOML")

    rows = []
    assert image_recipe(lambda name, value, good=True: rows.append((name, value, good)), Broken) is None
    assert rows == [("image recipe", "cannot be read: images/guest.toml: not TOML", False)]
