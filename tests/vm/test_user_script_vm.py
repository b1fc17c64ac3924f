"""The user's own workload in guests: the check script in the checker guest, and a whole
`plugpull crash` run of the shipped example through the CLI, which must find the loss that
nobarrier causes and none with barriers."""

import json
import shutil
import subprocess

import pytest

from plugpull.check.checker import Checker, ScriptCollect
from plugpull.cli import main
from plugpull.paths import ROOT
from plugpull.powerloss.crashstate import CrashState
from plugpull.testbed.fs import filesystem

pytestmark = pytest.mark.vm

EXAMPLE = ROOT / "suites" / "cases" / "own-script"
PROBE = """
echo "cwd $(pwd) mnt $PP_MNT dir $PP_DIR ids $PP_REQUIRED_IDS file $(cat $PP_REQUIRED | tr '\\n' ' ')"
for id in $PP_REQUIRED_IDS; do [ -e rec-$id ] || echo "lost $id rec-$id is missing"; done
sleep 600 &
exit 3
"""


@pytest.fixture
def populated(tmp_path):
    """An ext4 image whose work directory holds rec-1 and rec-3, made on the host."""
    if shutil.which("mkfs.ext4") is None:
        pytest.skip("e2fsprogs is not installed (make deps)")
    (tmp_path / "tree" / "pp").mkdir(parents=True)
    for n in (1, 3):
        (tmp_path / "tree" / "pp" / f"rec-{n}").write_text(f"record {n}\n")
    image = tmp_path / "state.img"
    with open(image, "wb") as f:
        f.truncate(64 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-d", str(tmp_path / "tree"), str(image)], check=True)
    return image


def test_the_check_script_runs_in_the_work_directory_with_the_owed_ids(rig, populated):
    checker = Checker(rig, filesystem("ext4"), batch=1)
    [obs] = checker.check([CrashState.of(populated)], collect=[ScriptCollect(PROBE, (1, 2, 3))])
    out = obs.files["check-script.out"].decode()
    assert "cwd /mnt/check/pp mnt /mnt/check dir /mnt/check/pp ids 1 2 3 file 1 2 3" in out
    assert "lost 2 rec-2 is missing" in out and "lost 1" not in out and "lost 3" not in out
    assert obs.files["check-script.rc"] == b"3"
    assert obs.umount_rc == 0, "a process the script left behind must not keep the state mounted"
    assert obs.mount_rc == 0 and obs.fsck_rc == 0


def crash(tmp_path, accel, mode: str) -> dict:
    out = tmp_path / mode
    rc = main(["crash", "--accel", str(accel), "--fs", "ext4", "--mode", mode, "--disk-mib", "64",
               "--workload", f"script:{EXAMPLE / 'records.sh'}", "--check-script", str(EXAMPLE / "records-check.sh"),
               "--model", "cache:32:random", "--states", "8", "--trigger", "end", "--seed", "1",
               "--out", str(out), "--json", str(tmp_path / f"{mode}.json")])
    assert rc == 0
    return json.loads((tmp_path / f"{mode}.json").read_text())


def test_a_user_script_loses_acknowledged_records_under_nobarrier_and_none_with_barriers(tmp_path, accel):
    nobarrier = crash(tmp_path, accel, "nobarrier")
    assert nobarrier["spec"]["workload"] == "script"
    assert nobarrier["spec"]["params"]["text"] == (EXAMPLE / "records.sh").read_text()
    lost = [s for s in nobarrier["states"] if s["verdict"] == "data-loss"]
    assert lost, [(s["cut"], s["verdict"], s["reason"]) for s in nobarrier["states"]]
    assert main(["replay", "--accel", str(accel), lost[0]["artifact"]]) == 0, "a saved state replays as judged"

    barrier = crash(tmp_path, accel, "barrier")
    assert sum(s["acks_required"] for s in barrier["states"]) > 0, "no state owed an ack"
    assert [s for s in barrier["states"] if s["verdict"] != "clean"] == []


def test_acks_sent_with_dev_fd_4_arrive_and_a_script_that_sends_none_is_refused(tmp_path, accel, capsys):
    """`echo "ack N" >> /dev/fd/4` opens the acks again: through the relay every ack arrives
    and the states owe them; a script that sends no ack stops after its recording, exit 2."""
    text = (EXAMPLE / "records.sh").read_text()
    assert 'echo "ack $i" >&4' in text
    scripts = {"relayed": text.replace('echo "ack $i" >&4', 'echo "ack $i" >> /dev/fd/4'),
               "silent": text.replace('echo "ack $i" >&4', ":")}
    codes = {}
    for name, script in scripts.items():
        (tmp_path / f"{name}.sh").write_text(script)
        codes[name] = main(["crash", "--accel", str(accel), "--fs", "ext4", "--mode", "barrier", "--disk-mib", "64",
                            "--workload", f"script:{tmp_path / f'{name}.sh'}",
                            "--check-script", str(EXAMPLE / "records-check.sh"), "--model", "reorder",
                            "--states", "4", "--trigger", "end", "--seed", "1", "--out", str(tmp_path / name),
                            "--json", str(tmp_path / f"{name}.json")])
    err = capsys.readouterr().err
    assert codes == {"relayed": 0, "silent": 2}, err
    assert "the workload script sent no ack before the power cut (end)" in err.strip().splitlines()[-1]
    assert not (tmp_path / "silent.json").exists()
    relayed = json.loads((tmp_path / "relayed.json").read_text())
    assert max(s["acks_required"] for s in relayed["states"]) == 20, "the acks did not all arrive"
    assert [s for s in relayed["states"] if s["verdict"] != "clean"] == []
