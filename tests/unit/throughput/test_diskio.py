"""The disk's counters around a measured window: /sys/block/DEV/stat lines made by hand."""

import pytest

from plugpull.errors import InfraError
from plugpull.results import DiskIO, Phase, StatError, Throughput
from plugpull.testbed.workloads.base import TimedStep
from plugpull.throughput.diskstat import phase_ios
from plugpull.throughput.measure import run_step

# fields: reads merges sectors ticks | writes merges sectors ticks | inflight io_ticks queue |
#         discards merges sectors ticks | flushes flush_ticks
BEFORE = "  48 0 133 80   18 0 4100 14   0 108 119   0 0 0 0   3 8\n"
AFTER = "  55 0 206 98  168 0 5462 357   0 416 670   0 0 0 0 153 214\n"


def test_a_window_is_the_difference_of_two_lines():
    io = DiskIO.between(BEFORE, AFTER, seconds=2.0, device="sda")
    assert (io.writes, io.sectors, io.flushes, io.flush_ms) == (150, 1362, 150, 206)
    assert io.flushes_per_kop(50) == 3000
    assert io.mib_per_flush == pytest.approx(1362 * 512 / (1 << 20) / 150)
    assert io.flush_share == pytest.approx(0.103)
    assert io.mean_flush_ms == pytest.approx(206 / 150)


def test_no_flush_no_division():
    io = DiskIO.between(BEFORE, BEFORE, seconds=0.0)
    assert io.mib_per_flush is None and io.flush_share is None and io.flushes_per_kop(None) is None


@pytest.mark.parametrize("line", [
    "48 0 133 80 18 0 4100 14 0 108 119",            # an old kernel: no discard and flush fields
    "48 0 133 80 18 0 4100 14 0 108 119 0 0 0 0 3",  # one flush field missing
    "48 0 133 80 18 0 4100 14 0 108 119 0 0 0 0 3 x8",
    "48 0 133 80 -18 0 4100 14 0 108 119 0 0 0 0 3 8",
    "",
])
def test_a_malformed_stat_line_is_rejected(line):
    with pytest.raises(StatError):
        DiskIO.between(line, AFTER)


def test_counters_that_go_backwards_are_rejected():
    with pytest.raises(StatError, match="backwards"):
        DiskIO.between(AFTER, BEFORE)


def test_io_round_trips_and_older_records_load_without_it():
    io = DiskIO.between(BEFORE, AFTER, 2.0, "sda")
    run = Throughput(phases=(Phase("create", 1.0, 10, io=io),), io=io)
    again = Throughput.from_json(run.to_json())
    assert again == run and again.phases[0].io == io
    old = Throughput.from_json({"phases": [{"name": "create", "seconds": 1.0}]})
    assert old.io is None and old.phases[0].io is None
    assert DiskIO.from_json({"writes": 1, "sectors": 2, "flushes": "3", "flush_ms": 4}) is None


def test_pp_smallfiles_stat_lines_give_each_phase_its_io():
    phases = [Phase("sequential create", 2.0, 100), Phase("random open", 1.0, 100)]
    output = f"pp-stat 0 {BEFORE}#1 ...\npp-stat 1 {AFTER}#2 ...\npp-stat 2 {AFTER}"
    create, open_ = phase_ios(output, phases, "sda")
    assert create.io.flushes == 150 and create.io.seconds == 2.0 and open_.io.flushes == 0
    assert phase_ios("#1 no stat lines", phases, "sda") == phases
    with pytest.raises(StatError, match="do not cover"):
        phase_ios(f"pp-stat 0 {BEFORE}pp-stat 1 {AFTER}", phases, "sda")


class Guest:
    """Answers `cat .../stat` from a list of lines, and a step with `output`."""

    def __init__(self, stats, output=""):
        self.stats, self.output, self.commands = list(stats), output, []

    def run(self, command, timeout=None):
        from plugpull.guest.contract.channel import GuestResult
        self.commands.append(command)
        out = self.stats.pop(0) if command.startswith("cat /sys/block/") else self.output
        return GuestResult(command, 0, out.encode(), b"")


def test_a_step_is_read_around_and_told_where_the_counters_are():
    guest = Guest([BEFORE, AFTER])
    (phase,), io = run_step(guest, TimedStep("extract", "tar -xf x", ops=10), "sda")
    assert phase.io == io and io.flushes == 150 and phase.ops == 10
    assert guest.commands[1] == "export PP_STAT=/sys/block/sda/stat; tar -xf x"
    with pytest.raises(InfraError, match="step extract"):
        run_step(Guest(["garbage", AFTER]), TimedStep("extract", "tar -xf x"), "sda")
