import pytest

from plugpull.guest.qemu.accel import decide, kvm_device_usable
from plugpull.guest.contract.config import Accel
from plugpull.errors import UsageError


def test_tcg_requested_never_touches_kvm():
    assert decide(Accel.TCG, True, "ok", True).accel is Accel.TCG


def test_auto_without_device_falls_back_to_tcg():
    d = decide(Accel.AUTO, False, "/dev/kvm: No such file or directory", None)
    assert d.accel is Accel.TCG and "No such file" in d.reason and not d.needs_probe


def test_auto_with_device_and_no_probe_asks_for_one():
    assert decide(Accel.AUTO, True, "ok", None).needs_probe


@pytest.mark.parametrize("probe_ok, expected", [(True, Accel.KVM), (False, Accel.TCG)])
def test_auto_follows_the_probe(probe_ok, expected):
    d = decide(Accel.AUTO, True, "ok", probe_ok)
    assert d.accel is expected and not d.needs_probe


def test_kvm_requested_but_unusable_is_a_usage_error():
    with pytest.raises(UsageError, match="KVM requested"):
        decide(Accel.KVM, False, "/dev/kvm: Permission denied", None)


def test_kvm_requested_skips_the_probe():
    d = decide(Accel.KVM, True, "ok", None)
    assert d.accel is Accel.KVM and not d.needs_probe


def test_missing_device_is_reported(tmp_path):
    ok, reason = kvm_device_usable(str(tmp_path / "kvm"))
    assert not ok and "kvm" in reason
