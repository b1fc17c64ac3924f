"""dm tables for a fault over a disk of `sectors` 512-byte sectors. The flakey target's
intervals count from the moment its table is loaded; "0 1" keeps it down from then on."""

from plugpull.faults.faultspec import FaultSpec

DEVICE = "pp-fault"  # /dev/mapper/pp-fault: the filesystem lives on it


def linear(sectors: int, disk: str) -> str:
    return f"0 {sectors} linear {disk} 0"


def fault_table(fault: FaultSpec, sectors: int, disk: str) -> str:
    flakey = f"0 {sectors} flakey {disk} 0"
    if fault.kind == "flaky":
        return f"{flakey} {fault.up} {fault.down}"
    if fault.kind in ("error-writes", "drop-writes"):
        return f"{flakey} 0 1 1 {fault.kind.replace('-', '_')}"
    nth, value = fault.corrupt_byte
    direction = "w" if fault.kind == "corrupt-writes" else "r"
    return f"{flakey} 0 1 5 corrupt_bio_byte {nth} {direction} {value} 0"


def swap(table: str) -> str:
    """The guest command that swaps the device's table as xfstests' common/dmflakey does:
    suspend without freezing the filesystem (--nolockfs), load, resume."""
    return (f"dmsetup suspend --nolockfs {DEVICE} && dmsetup load {DEVICE} --table '{table}' "
            f"&& dmsetup resume {DEVICE}")
