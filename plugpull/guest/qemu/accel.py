"""KVM or TCG. /dev/kvm can exist and still be useless (nested virtualization where a guest
hangs in early boot), so `auto` boots the real image once under KVM with a short timeout and
remembers the outcome per host kernel and QEMU version."""

import fcntl
import os
from dataclasses import dataclass

from plugpull.guest.contract.config import Accel
from plugpull.errors import UsageError

KVM_GET_API_VERSION = 0xAE00
KVM_API_VERSION = 12


@dataclass(frozen=True)
class Decision:
    accel: Accel
    reason: str
    needs_probe: bool = False


def kvm_device_usable(path: str = "/dev/kvm") -> tuple[bool, str]:
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except OSError as e:
        return False, f"{path}: {e.strerror}"
    try:
        version = fcntl.ioctl(fd, KVM_GET_API_VERSION)
    except OSError as e:
        return False, f"{path}: KVM_GET_API_VERSION failed: {e.strerror}"
    finally:
        os.close(fd)
    if version != KVM_API_VERSION:
        return False, f"{path}: unexpected KVM API version {version}"
    return True, f"{path} answers"


def decide(requested: Accel, device_ok: bool, device_reason: str, probe_ok: bool | None) -> Decision:
    """Pure decision; `probe_ok` is None when no probe result is known yet."""
    if requested is Accel.TCG:
        return Decision(Accel.TCG, "TCG requested")
    if not device_ok:
        if requested is Accel.KVM:
            raise UsageError(f"KVM requested but not usable: {device_reason}")
        return Decision(Accel.TCG, f"no usable KVM ({device_reason})")
    if requested is Accel.KVM:
        return Decision(Accel.KVM, "KVM requested")
    if probe_ok is None:
        return Decision(Accel.KVM, "probe needed", needs_probe=True)
    if probe_ok:
        return Decision(Accel.KVM, "a probe guest booted under KVM")
    return Decision(Accel.TCG, "a probe guest did not boot under KVM; using TCG")
