import pytest

from plugpull.powerloss.flushorder import TraceFormatError, count_crossings

AHCI = "ahci(0x55b241faa7c0)"
IDE = "IDE exec cmd: bus 0x55b241facd28; state 0x55b241facdb0;"


def ncq(tag, op=0x61, port=0):
    return f"process_ncq_command {AHCI}[{port}][tag:{tag}]: NCQ op {op:#04x} on sectors [8,15]"


def done(tag, port=0):
    return f"ncq_finish {AHCI}[{port}][tag:{tag}]: NCQ transfer finished"


def command(code):
    return f"ide_exec_cmd {IDE} cmd {code:#04x}"


CMD_DONE = f"ahci_cmd_done {AHCI}[0]: cmd done"
FLUSH = command(0xE7)


def test_writes_that_finish_before_the_flush_do_not_cross_it():
    counts = count_crossings([ncq(1), ncq(2), done(2), done(1), FLUSH, CMD_DONE, ncq(3), done(3)])
    assert (counts.flushes, counts.writes, counts.unordered) == (1, 3, 0)
    assert counts.max_writes_in_flight == 2
    assert counts.share == 0.0


def test_a_write_still_in_flight_when_the_flush_is_issued_crosses_it():
    counts = count_crossings([ncq(1), ncq(2), done(1), command(0xEA), done(2), CMD_DONE])
    assert (counts.crossing_writes, counts.crossed_flushes, counts.issued_during_flush) == (1, 1, 0)
    assert counts.share == 0.5


def test_a_write_issued_while_the_flush_is_outstanding_is_counted():
    counts = count_crossings([FLUSH, ncq(4), done(4), CMD_DONE, ncq(5), done(5)])
    assert (counts.crossing_writes, counts.issued_during_flush, counts.unordered) == (0, 1, 1)


def test_reads_and_other_commands_are_not_writes():
    counts = count_crossings([ncq(1, op=0x60), FLUSH, CMD_DONE, command(0xEC), CMD_DONE, done(1)])
    assert (counts.writes, counts.flushes, counts.unordered) == (0, 1, 0)


def test_non_queued_writes_count_and_timestamps_and_other_events_are_skipped():
    lines = [f"123@1700000000.000001:{command(0xCA)}", f"123@1700000000.000002:{CMD_DONE}",
             "blk_co_pwritev blk 0x1 bs 0x2 offset 0 bytes 512 flags 0x0", "", "garbage"]
    counts = count_crossings(lines)
    assert (counts.writes, counts.flushes, counts.max_writes_in_flight) == (1, 0, 1)


def test_a_trace_of_two_ports_is_refused():
    with pytest.raises(TraceFormatError, match="ports"):
        count_crossings([ncq(1, port=0), ncq(1, port=1)])


def test_an_unreadable_ncq_line_is_refused():
    with pytest.raises(TraceFormatError):
        count_crossings([f"process_ncq_command {AHCI}: something else"])
