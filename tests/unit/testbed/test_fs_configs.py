"""The seeds' filesystem configurations (xfs-2008, ext3): their option sets, the filesystems
the host's mkfs makes from them, and, in a guest, that each mounts with its options."""

import shutil
import subprocess

import pytest

from plugpull.cli import main
from plugpull.errors import UsageError
from plugpull.testbed import bed as bed_of
from plugpull.testbed.bed import BedSpec, format_disks
from plugpull.testbed.fs import filesystem, mode
from plugpull.testbed.workloads import FsyncFiles

XFS_2008 = filesystem("xfs-2008")
EXT3 = filesystem("ext3")
needs = pytest.mark.skipif


def _disk(tmp_path, mib=1024):
    path = tmp_path / "disk.img"
    with open(path, "wb") as f:
        f.truncate(mib << 20)
    return path


def test_xfs_2008_is_v4_with_seed_000s_log_and_log_buffers():
    argv = XFS_2008.mkfs_argv("/dev/x")
    assert argv[0] == "mkfs.xfs" and argv[-1] == "/dev/x"
    assert "crc=0" in argv and "size=2625b,lazy-count=1" in argv
    assert set(XFS_2008.mount_options) == {"logbsize=32k", "logbufs=2"}
    assert XFS_2008.mount_type == "xfs" and XFS_2008.fsck == filesystem("xfs").fsck


def test_an_external_log_replaces_the_internal_logs_options():
    argv = XFS_2008.mkfs_argv("/dev/x", ("-l", "logdev=/dev/y,size=64m"))
    assert "size=2625b,lazy-count=1" not in argv and "logdev=/dev/y,size=64m" in argv


def test_ext3_is_made_by_mkfs_ext3_and_mounted_by_ext4_without_delalloc():
    assert EXT3.mkfs_argv("/dev/x")[0] == "mkfs.ext3"
    assert EXT3.mount_type == "ext4" and EXT3.mount_options == ("nodelalloc",)
    assert mode("nobarrier").mount_options(EXT3) == ["nobarrier"]
    assert mode("nobarrier").guest_setup(XFS_2008, "sda") == ['echo "write through" > /sys/block/sda/queue/write_cache']


def test_the_default_filesystems_are_unchanged():
    xfs, ext4 = filesystem("xfs"), filesystem("ext4")
    assert xfs.mkfs_argv("d") == ["mkfs.xfs", "-q", "-f", "d"] and not xfs.mount_options
    assert ext4.mount_type == "ext4" and not ext4.mount_options and not ext4.mkfs_env


def test_an_unknown_filesystem_is_bad_input(capsys):
    with pytest.raises(UsageError, match="xfs-2008"):
        filesystem("xfs-1999")
    with pytest.raises(SystemExit) as exited:
        main(["matrix", "--fs", "xfs-1999", "--mode", "barrier", "--workload", "fsync-files"])
    assert exited.value.code == 2
    assert "xfs-1999" in capsys.readouterr().err


@needs(not shutil.which("xfs_db"), reason="xfsprogs is not installed")
def test_the_host_makes_a_v4_xfs_with_a_2625_block_log(tmp_path):
    disk = _disk(tmp_path)
    format_disks(XFS_2008, mode("barrier"), disk, None)
    sb = subprocess.run(["xfs_db", "-r", "-c", "sb 0", "-c", "p logblocks versionnum", str(disk)],
                        capture_output=True, text=True, check=True).stdout
    fields = dict(line.split(" = ") for line in sb.splitlines())
    assert int(fields["logblocks"]) == 2625
    assert int(fields["versionnum"], 16) & 0xF == 4, "a v4 superblock (no CRC)"


@needs(not shutil.which("dumpe2fs"), reason="e2fsprogs is not installed")
def test_the_host_makes_ext3s_format(tmp_path):
    disk = _disk(tmp_path, 256)
    format_disks(EXT3, mode("barrier"), disk, None)
    header = subprocess.run(["dumpe2fs", "-h", str(disk)], capture_output=True, text=True).stdout
    features = next(line for line in header.splitlines() if line.startswith("Filesystem features:")).split()
    assert "has_journal" in features
    assert not {"extent", "flex_bg", "64bit", "metadata_csum"} & set(features)


@pytest.mark.vm
@pytest.mark.parametrize("fs, shows", [(XFS_2008, ("logbufs=2", "logbsize=32k")), (EXT3, ("nodelalloc",))],
                         ids=["xfs-2008", "ext3"])
def test_each_configuration_formats_and_mounts(fs, shows, rig, tmp_path):
    bed = BedSpec(fs, mode("barrier"), FsyncFiles(count=1), disk_mib=512)
    with bed_of.testbed(tmp_path / fs.name, bed, rig) as bed_up:
        line = bed_up.machine.run("grep ' /mnt/test ' /proc/mounts").check().text.split()
        assert line[2] == fs.mount_type
        assert all(option in line[3].split(",") for option in shows), line
        if fs is XFS_2008:
            dmesg = bed_up.machine.run("dmesg").check().text
            assert "Deprecated V4 format" in dmesg, "the guest kernel mounted a v4 XFS"
