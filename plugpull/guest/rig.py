"""A rig: what the lab boots its guests with, resolved once at the edge and passed down
as one object: the guest image, the accelerator it runs under and the backend that runs it."""

from dataclasses import dataclass

from plugpull.guest.backend import Backend, Guest
from plugpull.guest.config import Accel, MachineSpec
from plugpull.guest.image import GuestImage, KernelSource, build_image
from plugpull.guest.machine import QEMU, resolve_accel


@dataclass(frozen=True)
class Rig:
    image: GuestImage
    accel: Accel
    backend: Backend = QEMU

    def machine(self, spec: MachineSpec, *, console_log=None, name: str | None = None,
                boot_timeout: float = 120.0) -> Guest:
        """A guest of this rig, not booted yet: use it as a context manager."""
        return self.backend.machine(spec, self.image, self.accel, console_log=console_log, name=name,
                                    boot_timeout=boot_timeout)


def prepare_rig(accel: Accel = Accel.AUTO, kernel: KernelSource | None = None) -> Rig:
    """Build (or find cached) the guest image and settle the accelerator: KVM if a probe
    guest boots under it, TCG otherwise."""
    image = build_image(kernel)
    return Rig(image, resolve_accel(accel, image).accel)
