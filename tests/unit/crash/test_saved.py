"""crash/saved: every state.json is read there, the lenient reader (`state_fields`) too."""

import json

import pytest

from plugpull.crash.saved import state_fields, state_file
from plugpull.errors import UsageError


def test_a_states_fields_are_read_unvalidated(tmp_path):
    state_file(tmp_path).write_text(json.dumps({"workload": "gen:seq1-000001", "acks_required": 2}))
    assert state_fields(tmp_path) == {"workload": "gen:seq1-000001", "acks_required": 2}
    state_file(tmp_path).write_text("[1, 2]")
    assert state_fields(tmp_path) == {}


@pytest.mark.parametrize("text, detail", [("{", "not JSON"), (None, "No such file or directory")])
def test_a_state_json_that_is_not_json_is_refused_naming_it(tmp_path, text, detail):
    if text is not None:
        state_file(tmp_path).write_text(text)
    with pytest.raises(UsageError, match=rf"state.json: not a saved crash state \({detail}\)"):
        state_fields(tmp_path)
