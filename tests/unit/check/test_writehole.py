"""The write hole's evidence: a lost ack acknowledged long before the cut, whose data the
workload never wrote again, is told apart from ordinary loss. No VM."""

from plugpull.check.verdict import Ack, StateVerdict, Verdict
from plugpull.check.writehole import EVIDENCE, long_before, with_write_hole, write_hole_losses
from plugpull.testbed.workloads import workload
from plugpull.testbed.workloads.base import Lost

ACKS = [Ack(i, stamp=1000 * i, position=10 * i) for i in range(1, 6)]


def loss(*idents) -> StateVerdict:
    return StateVerdict(Verdict.DATA_LOSS, f"{len(idents)} of 5 acknowledged operations lost",
                        [Lost(i, f"f{i} has wrong content") for i in idents])


def test_an_ack_is_long_before_the_cut_with_two_owed_acks_after_it():
    assert long_before(ACKS, [1, 2, 3, 4, 5]) == {1, 2, 3}
    assert long_before(ACKS, [1, 2]) == set(), "the last owed acks are never long before"


def test_old_acked_data_read_back_wrong_is_the_write_hole():
    v = with_write_hole(loss(1, 5), workload("fsync-files"), ACKS, [1, 2, 3, 4, 5])
    assert v.lost[0].reason == f"{EVIDENCE} (f1 has wrong content)"
    assert v.lost[1].reason == "f5 has wrong content", "the newest owed ack is an ordinary loss"
    assert "1 acked long before the cut and not rewritten since, read back wrong" in v.reason
    assert write_hole_losses(v.lost) == 1 and write_hole_losses([{"reason": v.lost[1].reason}]) == 0


def test_recent_losses_and_rewriting_workloads_stay_ordinary():
    recent = loss(4, 5)
    assert with_write_hole(recent, workload("fsync-files"), ACKS, [1, 2, 3, 4, 5]) is recent
    rewrites = loss(1)
    assert with_write_hole(rewrites, workload("fsync-append"), ACKS, [1, 2, 3, 4, 5]) is rewrites
