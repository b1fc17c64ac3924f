"""A rig: what the lab boots its guests with, resolved once at the edge and passed down
as one object: the guest image, the accelerator it runs under and the backend that runs it."""

import shutil
from dataclasses import dataclass

from plugpull.guest.contract.backend import Backend, Guest
from plugpull.guest.contract.config import Accel, MachineSpec
from plugpull.guest.image.build import GuestImage, KernelSource, build_image
from plugpull.guest.qemu.machine import QEMU, resolve_accel
from plugpull.errors import LaunchError


@dataclass(frozen=True)
class Rig:
    image: GuestImage
    accel: Accel
    backend: Backend = QEMU
    hosts: tuple[Backend, ...] = ()  # --hosts: the backends the checker's work is spread over

    def on_host(self, backend: Backend) -> "Rig":
        return Rig(self.image, self.accel, backend)

    def machine(self, spec: MachineSpec, *, console_log=None, name: str | None = None,
                boot_timeout: float = 120.0) -> Guest:
        """A guest of this rig, not booted yet: use it as a context manager."""
        return self.backend.machine(spec, self.image, self.accel, console_log=console_log, name=name,
                                    boot_timeout=boot_timeout)


def prepare_rig(accel: Accel = Accel.AUTO, kernel: KernelSource | None = None, backend: Backend = QEMU,
                hosts: tuple[Backend, ...] = ()) -> Rig:
    """Build (or find cached) the guest image and settle the accelerator: KVM if a probe
    guest boots under it, TCG otherwise. A freshly built image boots once before it is used."""
    image = build_image(kernel)
    rig = Rig(image, resolve_accel(accel, image).accel, backend, hosts)
    if image.fresh:
        first_boot(rig)
    return rig


def first_boot(rig: Rig) -> None:
    """Boot a guest from a new image; if it does not come up, the image leaves the cache, so
    that a kernel that does not boot is not kept as if it were a good image."""
    try:
        with rig.machine(MachineSpec(), name="first-boot"):
            pass
    except LaunchError:
        shutil.rmtree(rig.image.kernel.parent, ignore_errors=True)
        raise
