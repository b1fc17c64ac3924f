"""A booted guest, driven through testinfra: the disk and its write cache as the guest sees them."""

import pytest

from fixtures.plugin import VmParams
from plugpull.guest.contract.config import Bus, DiskSpec
from plugpull.guest.qemu.machine import create_disk

pytestmark = pytest.mark.vm

ALL = [VmParams(bus, wc) for bus in (Bus.AHCI, Bus.IDE) for wc in (True, False)]


@pytest.mark.parametrize("vm", ALL, indirect=True, ids=str)
def test_disk_and_cache_as_configured(vm, host):
    assert host.file("/dev/sda").exists
    assert host.run("test -b /dev/sda").succeeded
    wc = host.file("/sys/block/sda/queue/write_cache").content_string.strip()
    expected = "write back" if vm.spec.disks[0].write_cache else "write through"
    assert wc == expected
    driver = "ahci" if vm.spec.bus is Bus.AHCI else "ata_piix"
    assert host.run("ls /sys/module").stdout.split().count(driver) == 1


@pytest.mark.parametrize("vm", [VmParams(Bus.AHCI), VmParams(Bus.IDE)], indirect=True, ids=str)
def test_hdparm_turns_the_cache_off_and_on(host):
    path = "/sys/block/sda/queue/write_cache"
    assert host.file(path).content_string.strip() == "write back"
    assert host.run("hdparm -W0 /dev/sda").succeeded
    assert host.file(path).content_string.strip() == "write through"
    assert "write-caching =  0 (off)" in host.check_output("hdparm -W /dev/sda")
    assert host.run("hdparm -W1 /dev/sda").succeeded
    assert host.file(path).content_string.strip() == "write back"


def test_channel_carries_exit_codes_and_both_outputs(vm):
    r = vm.run("printf 'out\\0bin'; echo err >&2; exit 7")
    assert (r.rc, r.stdout, r.stderr) == (7, b"out\0bin", b"err\n")
    assert vm.run("echo %s", "a b;$(rm -rf /)").stdout == b"a b;$(rm -rf /)\n"


def test_ack_stream_delivers_lines_in_order(vm):
    vm.acks.set_stamp(lambda: "stamped")
    vm.run("for i in 1 2 3; do echo ack $i > $PLUGPULL_ACK; done").check()
    lines = [vm.acks.get(timeout=10) for _ in range(3)]
    assert [l.text for l in lines] == ["ack 1", "ack 2", "ack 3"]
    assert all(l.stamp == "stamped" for l in lines)


def test_filesystem_tools_work_on_the_disk(host):
    assert host.run("mkfs.xfs -q /dev/sda").succeeded
    assert host.run("xfs_repair -n /dev/sda").succeeded
    assert host.run("mount -t xfs /dev/sda /mnt && umount /mnt").succeeded
    assert host.run("mkfs.ext4 -q -F /dev/sda").succeeded
    assert host.run("e2fsck -fn /dev/sda").succeeded
    assert host.run("mount -t ext4 /dev/sda /mnt && echo hi > /mnt/f && umount /mnt").succeeded


@pytest.mark.parametrize("vm", [VmParams(bus, disks=2) for bus in Bus if bus is not Bus.SCSI] + [VmParams(Bus.SCSI, disks=3)],
                         indirect=True, ids=lambda p: f"{p}-{p.disks}disks")
def test_disks_have_stable_names(vm):
    for i in range(len(vm.spec.disks)):
        name = vm.run(f"readlink /dev/pp-disk{i}").check().text.strip()
        serial = vm.run(f"tail -c +5 /sys/block/{name}/device/vpd_pg80").check().text.strip()
        assert serial == f"plugpull{i}"


AWKWARD = (b"#!/bin/sh\necho 'quoted' \"twice\" $(reboot) `halt` \\\nPLUGPULL_EOF\nEOF\n\0\0\0 end\n"
           + bytes(range(256)) * 200)  # several upload chunks, every byte value


def test_write_file_carries_any_bytes(vm):
    vm.write_file("/tmp/upload.bin", AWKWARD, mode=0o750)
    assert vm.run("cat /tmp/upload.bin").stdout == AWKWARD
    assert vm.run("stat -c %a /tmp/upload.bin").text.strip() == "750"
    assert "pp-partial" not in vm.run("ls /tmp").text
    vm.write_file("/tmp/upload.bin", "short\n")
    assert vm.run("cat /tmp/upload.bin").stdout == b"short\n"


@pytest.mark.parametrize("vm", [VmParams(Bus.SCSI, disk_mib=64)], indirect=True, ids=str)
def test_attached_disk_is_seen_written_and_detached(vm, tmp_path):
    state = create_disk(tmp_path / "state.img", 16)
    with open(state, "r+b") as f:
        f.write(b"pattern!")
    before = state.read_bytes()
    disk = vm.attach_disk(DiskSpec(state, Bus.SCSI, host_flush=False, snapshot=True))
    assert disk.device != vm.run("readlink /dev/pp-disk0").check().text.strip()
    assert vm.run("head -c 8 /dev/%s", disk.device).stdout == b"pattern!"
    vm.run("printf overwritten | dd of=/dev/%s conv=fsync 2>/dev/null", disk.device).check()
    assert vm.run("head -c 11 /dev/%s", disk.device).stdout == b"overwritten"
    vm.detach_disk(disk)
    assert disk.device not in vm.run("ls /sys/block").text.split()
    assert state.read_bytes() == before, "a snapshot disk's file must stay byte-identical"
    again = vm.attach_disk(DiskSpec(state, Bus.SCSI, host_flush=False, snapshot=True))
    assert again.serial != disk.serial
    assert vm.run("head -c 8 /dev/%s", again.device).stdout == b"pattern!"
    vm.detach_disk(again)
