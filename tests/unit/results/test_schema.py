"""StateResult and its JSON: what a field may hold, read back as written."""


def test_a_state_fsck_did_not_read_keeps_fsck_rc_none():
    """`hunt --fsck failing` leaves fsck_rc None: the type says so, and it round-trips as None, never 0."""
    import typing
    from plugpull.results import StateResult
    assert type(None) in typing.get_args(typing.get_type_hints(StateResult)["fsck_rc"])
    state = StateResult(fs="xfs", mode="barrier", workload="w", model="reorder", seed=1, cut=1, verdict="clean",
                        reason="fsck not run", acks_required=0, acks_lost=0, fsck_rc=None)
    assert StateResult.from_json(state.to_json()).fsck_rc is None
