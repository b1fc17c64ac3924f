"""A space's counts kept on disk (`plugpull.generate.counts`): read back, they give the counts
and ids the rules give, without walking the space again; a file of other rules, a damaged one
or a cache that cannot be written is ignored; a process that changed the rules keeps none. No VM."""

import json

import pytest

from plugpull.generate import counts, space as space_module
from plugpull.generate.shapes import shape_named
from plugpull.generate.space import Space, forget_counts

LINKS = 248832  # the shape links' count (test_generate_shapes pins it too)


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """A cache of the test's own and a process that has counted nothing yet; `again()` forgets
    the process's counts again (as a new process would start), keeping the disk's."""
    monkeypatch.setenv("PLUGPULL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(space_module._KEEP, "on", True)

    def again():
        monkeypatch.setattr(space_module, "_COUNTS", {})
        monkeypatch.setattr(space_module, "_STORED", {})
    again()
    return again


def walks(monkeypatch) -> list:
    """The steps a Space walks from now on (one entry a `choices` call)."""
    seen = []
    original = Space.choices

    def counted(self, sim, left, families=space_module.FAMILIES):
        seen.append(left)
        return original(self, sim, left, frozenset(families))
    monkeypatch.setattr(Space, "choices", counted)
    return seen


def kept_files(tmp_path):
    return sorted((tmp_path / "cache" / "counts").glob("*.json"))


def links_space() -> Space:
    shape = shape_named("links")
    return Space(len(shape.positions), shape=shape)


def test_kept_counts_give_the_same_count_and_ids_without_a_walk(fresh, tmp_path, monkeypatch):
    """A shape of six steps: its counts with two to six steps to go are kept."""
    cold = links_space()
    total = cold.count()
    ids = cold.sample(20, seed=3)
    made = [cold.workload(i) for i in ids]
    assert len(kept_files(tmp_path)) == 1
    fresh()
    seen = walks(monkeypatch)
    warm = links_space()
    assert total == warm.count() == LINKS and seen == []  # read, not walked
    assert [warm.workload(i) for i in ids] == made


def test_a_file_of_other_rules_or_damaged_is_ignored(fresh, tmp_path, monkeypatch):
    links_space().count()
    [path] = kept_files(tmp_path)
    doc = json.loads(path.read_text())
    assert doc["rules"] == counts.rules_digest() and doc["counts"]
    for damaged in ({**doc, "rules": "0" * 16, "counts": {k: 7 for k in doc["counts"]}},
                    {**doc, "counts": {k: "7" for k in doc["counts"]}}, [1, 2]):
        path.write_text(json.dumps(damaged))
        fresh()
        assert links_space().count() == LINKS
    path.write_text("{not json")
    fresh()
    assert links_space().count() == LINKS


def test_a_wrong_kept_count_is_what_a_count_gives(fresh, tmp_path):
    """The test above would pass if nothing were ever read: a count the file says, right rules
    and space, is believed (the file is the cache's, keyed by the rules' source)."""
    links_space().count()
    [path] = kept_files(tmp_path)
    doc = json.loads(path.read_text())
    top = max(doc["counts"], key=doc["counts"].get)
    doc["counts"][top] += 5
    path.write_text(json.dumps(doc))
    fresh()
    assert links_space().count() == LINKS + 5


def test_a_cache_that_cannot_be_written_is_no_error(fresh, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("PLUGPULL_CACHE", str(blocker))
    assert links_space().count() == LINKS


def test_a_process_that_changed_the_rules_keeps_nothing(fresh, tmp_path, monkeypatch):
    forget_counts()
    assert links_space().count() == LINKS
    assert kept_files(tmp_path) == []
