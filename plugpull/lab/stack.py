"""Storage stacks between the filesystem and the recorded disks: layers as table rows.

    stack = Stack.parse("md-raid1,lvm,dm-crypt")   # from the disks up
    stack.disks                                     # 2: md-raid1 takes two disks

The guest builds and assembles a stack with Debian's own tools (lvm2, cryptsetup, mdadm)
through its `pp-stack` script: the recording guest builds it on fresh disks and formats the
filesystem on its top; every other guest (the recording itself, each checker) assembles it
from the disks as they are.
"""

from dataclasses import dataclass

from plugpull.errors import UsageError


@dataclass(frozen=True)
class Layer:
    """`disks`: the member disks it takes (0: it sits on the device below it), `first`:
    it can only sit right on the recorded disks."""

    name: str
    disks: int = 0
    summary: str = ""

    @property
    def first(self) -> bool:
        return self.disks > 0


LAYERS = {
    layer.name: layer
    for layer in (
        Layer("lvm", summary="a linear LVM logical volume"),
        Layer("dm-crypt", summary="LUKS2 with a fixed test key (PBKDF2, 1000 iterations)"),
        Layer("md-raid1", 2, "md RAID1 over two disks, with a write-intent bitmap"),
        Layer("md-raid5", 3, "md RAID5 over three disks, with a write-intent bitmap"),
        Layer("md-raid5-ppl", 3, "md RAID5 over three disks, with a partial parity log"),
    )
}


@dataclass(frozen=True)
class Stack:
    layers: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> "Stack | None":
        """A stack from `lvm,dm-crypt` (or `+` between layers), from the disks up; None for
        "". UsageError, one line, for an unknown layer, a repeated one or one out of place."""
        if not text.strip():
            return None
        names = [name.strip() for name in text.replace("+", ",").split(",")]
        for i, name in enumerate(names):
            if name not in LAYERS:
                raise UsageError(f"bad --stack {text!r}: unknown layer {name!r}; known: {', '.join(LAYERS)}")
            if names.count(name) > 1:
                raise UsageError(f"bad --stack {text!r}: {name} is given twice")
            if LAYERS[name].first and i > 0:
                raise UsageError(f"bad --stack {text!r}: {name} sits on the disks, so it comes first")
        return cls(tuple(names))

    def __str__(self) -> str:
        return ",".join(self.layers)

    @property
    def disks(self) -> int:
        """The recorded disks under it."""
        return LAYERS[self.layers[0]].disks or 1

    def command(self, op: str, devices: list[str] = ()) -> str:
        """The guest's pp-stack command: create, open (both print top=NAME) or close."""
        return " ".join(["pp-stack", op, str(self), *(f"/dev/{d}" for d in devices)])


def top_of(output: str) -> str:
    """The kernel name of the stack's top device, from pp-stack's `top=NAME` line."""
    for line in output.splitlines():
        if line.startswith("top="):
            return line[4:].strip()
    raise ValueError(f"pp-stack printed no top device: {output.strip()[:200]!r}")
