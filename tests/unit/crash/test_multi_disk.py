"""N recorded disks: the sampler's consistent cuts across the disks' logs, and crash states
planned and built on every disk at once. No VM: hand-built logs on three disks."""

from pathlib import Path

import pytest

from plugpull.check.verdict import Ack, required_acks
from plugpull.crash.crashrun import within_budget
from plugpull.crash.judge import StateJob, build_state, plan_states
from plugpull.crash.record import Record, Sampler, _indexer, consistent_cuts
from plugpull.crash.crashrun import CrashSpec, crash_jobs, saved_others
from plugpull.powerloss.writelog import SECTOR, LogWriter, iter_entries
from plugpull.results import StateResult
from plugpull.testbed.bed import nth

# Three disks' writes in the order they completed, each depending on every one before it
# (the worst case: a cut is consistent only if it is a prefix of this order).
ORDER = [0, 1, 0, 2, 1, 1, 2, 0]
DISKS = 3


def payload(disk: int, n: int) -> bytes:
    return f"disk {disk} write {n}".encode().ljust(SECTOR, b"\0")


@pytest.fixture
def rec(tmp_path) -> Record:
    """A record of three disks: each log holds its disk's writes of ORDER, at sector n."""
    d = tmp_path / "record"
    d.mkdir()
    writers = [LogWriter(nth(d / "write.log", i)) for i in range(DISKS)]
    counts = [0] * DISKS
    for disk in ORDER:
        writers[disk].write(counts[disk], payload(disk, counts[disk]))
        counts[disk] += 1
    for i, writer in enumerate(writers):
        writer.close()
        nth(d / "base.img", i).write_bytes(bytes(64 << 10))
    return Record(d, {"disks": DISKS, "cuts": prefixes()}, [])


def prefixes() -> list[tuple[int, ...]]:
    """Every consistent cut of ORDER: the entries of each disk among its first k writes."""
    return [tuple(ORDER[:k].count(disk) for disk in range(DISKS)) for k in range(len(ORDER) + 1)]


def consistent(cut: tuple[int, ...]) -> bool:
    return tuple(cut) in prefixes()


class World:
    """The logs growing along ORDER: after a read of one log's size, the next writes may
    complete (`advance_after`: read number -> writes), as a real guest's would."""

    def __init__(self, rec: Record, advance_after: dict[int, int]):
        self.ends = [[e.end_offset for e in iter_entries(log)] for log in rec.logs]
        self.step, self.reads, self.advance_after = 0, 0, advance_after

    def size(self, disk: int) -> int:
        done = ORDER[:self.step].count(disk)
        self.reads += 1
        self.step = min(self.step + self.advance_after.get(self.reads, 0), len(ORDER))
        return self.ends[disk][done - 1] if done else SECTOR

    def sizes(self) -> tuple[int, ...]:
        return tuple(self.size(disk) for disk in range(DISKS))


def cut_of(rec: Record, sizes: tuple[int, ...]) -> tuple[int, ...]:
    [cut] = consistent_cuts([_indexer(log) for log in rec.logs], [sizes])
    return cut


def test_reading_the_logs_one_after_another_can_give_an_inconsistent_cut(rec):
    """Disk 0's first write completes after its log was read and before disk 1's, which
    depends on it: a single collect keeps disk 1's write without disk 0's."""
    world = World(rec, advance_after={1: 2})
    cut = cut_of(rec, world.sizes())
    assert cut == (0, 1, 0) and not consistent(cut)


def test_the_sampler_keeps_a_collect_only_when_a_second_one_agrees(rec):
    world = World(rec, advance_after={1: 2})
    sampler = Sampler(world.sizes, interval=3600)
    try:
        assert sampler.sample() is False, "the logs grew between the two collects"
        assert sampler.samples == []
        while world.step < len(ORDER):
            sampler.sample()
            world.step += 1
        assert sampler.sample() is True
    finally:
        sampler.stop()
    cuts = consistent_cuts([_indexer(log) for log in rec.logs], sampler.samples)
    assert cuts and all(consistent(c) for c in cuts)
    assert cuts[-1] == (3, 3, 2), "the quiet end is sampled whole"


def test_the_sampler_measures_its_widest_gap_between_kept_samples(rec):
    clock = iter([0.0, 0.01, 0.05, 0.06, 0.07]).__next__
    sampler = Sampler(World(rec, {}).sizes, interval=3600, clock=clock)
    try:
        assert sampler.sample() and sampler.sample()
    finally:
        sampler.stop()
    assert sampler.widest_gap == pytest.approx(0.04)


def test_a_job_plans_each_disk_by_its_own_cut_and_builds_one_image_per_disk(rec, tmp_path):
    planned = plan_states(rec, [StateJob("prefix", 2, (1, 0)), StateJob("prefix", 2, (1, 0)),
                                StateJob("prefix", 2, (1, 1))], seed=1)
    assert planned.which == [0, 0, 1], "the same cuts on every disk share one state"
    assert [[p.entry_index for p in disk] for disk in planned.plans[1]] == [[0, 1], [0], [0]]
    state = build_state(rec, planned.plans[1], tmp_path / "state.img")
    assert len(state.images) == DISKS and state.images[2] == tmp_path / "state3.img"
    heads = [image.read_bytes()[:SECTOR] for image in state.images]
    assert heads == [payload(0, 0), payload(1, 0), payload(2, 0)]
    assert state.images[0].read_bytes()[SECTOR:2 * SECTOR] == payload(0, 1)
    assert not state.images[2].read_bytes()[SECTOR:2 * SECTOR].strip(b"\0"), "disk 2 was cut after one write"
    state.remove()


def test_an_ack_is_owed_only_once_every_disks_log_reached_it():
    acks = [Ack(1, 0, 1, others=(1, 0)), Ack(2, 0, 3, others=(2, 2))]
    assert required_acks(acks, 3, (2, 1)) == [1]
    assert required_acks(acks, 3, (2, 2)) == [1, 2]
    assert required_acks(acks, 0, (9, 9)) == []


def test_the_runs_cuts_are_the_sampled_consistent_ones_on_every_disk(rec):
    jobs = crash_jobs(rec, list(iter_entries(rec.log)), CrashSpec(states=4, seed=1), ["prefix"])
    assert len(jobs) == 4 and all(consistent(job.cuts) for job in jobs)
    assert StateJob("prefix", 3, (3, 2)) in jobs, "the last sampled cut is always checked"
    every = crash_jobs(rec, [], CrashSpec(exhaustive=True), ["prefix"])
    assert [job.cuts for job in every] == prefixes()


def test_a_budget_counts_states_over_every_disk(rec):
    jobs = [StateJob("prefix", cut[0], cut[1:]) for cut in prefixes()]
    kept = within_budget(rec, list(iter_entries(rec.log)), jobs, budget=4, seed=1)
    assert [job.cuts for job in kept] == prefixes()[:4]


def test_a_record_from_before_n_disks_still_loads(tmp_path):
    """An extlog record of schema 3: `log2`, `cut_pairs`, acks with `position2`."""
    old = Record(tmp_path, {"log2": {}, "cut_pairs": [[1, 2], [3, 4]]}, [])
    old.save()
    text = (tmp_path / "record.json").read_text().replace('"acks": []', '"acks": [{"ident": 1, "stamp": 0, '
                                                          '"position": 3, "position2": 4}]')
    (tmp_path / "record.json").write_text(text)
    loaded = Record.load(tmp_path)
    assert loaded.disks == 2 and loaded.consistent_cuts == [(1, 2), (3, 4)]
    assert loaded.acks[0].others == (4,) and loaded.logs[1] == tmp_path / "write2.log"


def test_a_state_result_of_schema_3_reads_its_cut2_as_cuts():
    doc = StateResult("xfs", "extlog", "w", "reorder", 1, 80, "clean", "", 0, 0, 0).to_json()
    doc.pop("cuts")
    old = StateResult.from_json({**doc, "cut2": 44})
    assert old.cuts == (80, 44) and old.cut2 == 44
    assert StateResult.from_json(doc).cut2 is None
    assert saved_others({"cut2": 44}) == (44,) and saved_others({"cuts": [80, 44, 7]}) == (44, 7)
    assert saved_others({"cut2": None}) == ()


def test_nth_names_each_disks_file_beside_the_first():
    assert [nth(Path("d/write.log"), i).name for i in range(3)] == ["write.log", "write2.log", "write3.log"]
