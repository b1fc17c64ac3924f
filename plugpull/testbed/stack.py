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
from plugpull.rng import stable_rng
from plugpull.values import shown, whole

MEMBERS_MAX = 64  # disks under a stack: far more than an md array here ever has


@dataclass(frozen=True)
class Layer:
    """`disks`: the recorded disks it takes (0: it sits on the device below it), `first`:
    it can only sit right on the recorded disks. `journal`: its last disk is a write journal,
    not a member: losing it is not what the array's redundancy covers."""

    name: str
    disks: int = 0
    summary: str = ""
    redundant: bool = False  # it still reads every block with one member lost
    journal: bool = False

    @property
    def first(self) -> bool:
        return self.disks > 0


LAYERS = {
    layer.name: layer
    for layer in (
        Layer("lvm", summary="a linear LVM logical volume"),
        Layer("dm-crypt", summary="LUKS2 with a fixed test key (PBKDF2, 1000 iterations)"),
        Layer("md-raid1", 2, "md RAID1 over two disks, with a write-intent bitmap", True),
        Layer("md-raid5", 3, "md RAID5 over three disks, with a write-intent bitmap", True),
        Layer("md-raid5-ppl", 3, "md RAID5 over three disks, with a partial parity log", True),
        Layer("md-raid5-journal", 4, "md RAID5 over three disks, with a write journal on a fourth", True, True),
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

    @property
    def members(self) -> int:
        """The recorded disks `--lose-disk` may leave out: all but a write journal."""
        return self.disks - LAYERS[self.layers[0]].journal

    def lost_member(self, text: str, seed: int) -> int | None:
        """The member `--lose-disk` leaves out of every checked state (0-based, in the disks'
        order): N, or `random`, drawn from the seed and the member count (md-raid5,
        md-raid5-ppl and md-raid5-journal lose the same one); None for "". UsageError, one
        line, for a member out of range (a journal disk is none) or a stack with nothing to
        lose a member from."""
        if not text:
            return None
        check_lose_disk(text)
        if not LAYERS[self.layers[0]].redundant:
            raise UsageError(f"bad --lose-disk {text}: --stack {self} has no redundancy to lose a disk from "
                             f"(one of {', '.join(n for n, l in LAYERS.items() if l.redundant)} comes first)")
        if text == "random":
            return stable_rng(seed, "lose-disk", self.members).randrange(self.members)
        if int(text) >= self.members:
            journal = f" (disk {self.members} is its write journal)" if self.members < self.disks else ""
            raise UsageError(f"bad --lose-disk {text}: --stack {self} has members 0 to {self.members - 1}{journal}")
        return int(text)

    def command(self, op: str, devices: list[str] = ()) -> str:
        """The guest's pp-stack command: create, open, force-open (the array degraded on
        purpose, started even if dirty; these print top=NAME) or close."""
        return " ".join(["pp-stack", op, str(self), *(f"/dev/{d}" for d in devices)])


def check_lose_disk(text: str) -> None:
    """`--lose-disk`'s spelling: "", a member number or `random` (the range is the stack's)."""
    if not text or text == "random":
        return
    try:
        whole(text, 0, MEMBERS_MAX - 1)
    except ValueError:
        raise UsageError(f"bad --lose-disk {shown(text)}: expected a member number from 0 to {MEMBERS_MAX - 1}, "
                         "or random") from None


def without(devices: list[str], lost: int | None) -> list[str]:
    """A state's disks as the checker assembles them: all but the lost member."""
    return [d for i, d in enumerate(devices) if i != lost]


def top_of(output: str) -> str:
    """The kernel name of the stack's top device, from pp-stack's `top=NAME` line."""
    for line in output.splitlines():
        if line.startswith("top="):
            return line[4:].strip()
    raise ValueError(f"pp-stack printed no top device: {output.strip()[:200]!r}")
