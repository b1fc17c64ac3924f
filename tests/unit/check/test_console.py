"""The console scanner on kernel text: each sign it must find, and text it must leave alone."""

import pytest

from plugpull.check.console import ConsoleWatch, scan

BOOT = """\
[    0.000000] Linux version 6.1.0-18-amd64 (debian-kernel@lists.invalid)
[    0.412000] ACPI: PM-Timer IO Port: 0x608
[    2.101234] sd 0:0:0:0: [sda] Write cache: enabled, read cache: enabled, doesn't support DPO or FUA
[    3.200000] XFS (sda): Mounting V5 Filesystem
[    3.300000] XFS (sda): Ending clean mount
"""

PANIC = BOOT + """\
[   41.020001] sysrq: Trigger a crash
[   41.020503] Kernel panic - not syncing: sysrq triggered crash
[   41.021000] CPU: 0 PID: 211 Comm: sh Not tainted 6.1.0-18-amd64 #1  Debian 6.1.76-1
[   41.021500] Call Trace:
[   41.021600]  <TASK>
[   41.021700]  dump_stack_lvl+0x44/0x5c
"""

NULL_DEREF = BOOT + """\
[   12.500000] BUG: kernel NULL pointer dereference, address: 0000000000000008
[   12.500100] #PF: supervisor read access in kernel mode
[   12.500200] Oops: 0000 [#1] PREEMPT SMP NOPTI
[   12.500300] CPU: 0 PID: 312 Comm: mount Not tainted 6.1.0-18-amd64 #1
[   12.500400] RIP: 0010:ext4_fill_super+0x1234/0x3000 [ext4]
"""

EXT4_BUG_ON = BOOT + """\
[   20.000000] ------------[ cut here ]------------
[   20.000100] kernel BUG at fs/ext4/inode.c:1923!
[   20.000200] invalid opcode: 0000 [#1] PREEMPT SMP NOPTI
"""

GPF = BOOT + """\
[   30.100000] general protection fault, probably for non-canonical address 0xdead000000000100: 0000 [#1] PREEMPT SMP NOPTI
[   30.100100] CPU: 0 PID: 401 Comm: xfs_repair Not tainted 6.1.0-18-amd64 #1
"""

ARM_OOPS = """\
[   15.000000] Unable to handle kernel paging request at virtual address dead000000000108
[   15.000100] Internal error: Oops: 96000044 [#1] SMP
[   15.000200] Modules linked in: xfs
"""

FS_WARNING = BOOT + """\
[   25.000000] ------------[ cut here ]------------
[   25.000100] WARNING: CPU: 0 PID: 287 at fs/xfs/xfs_inode.c:1789 xfs_inactive+0x2a1/0x2c0 [xfs]
[   25.000200] Modules linked in: xfs libcrc32c
"""

HUNG = BOOT + """\
[  242.000000] INFO: task mount:233 blocked for more than 120 seconds.
[  242.000100]       Not tainted 6.1.0-18-amd64 #1 Debian 6.1.76-1
[  242.000200] "echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.
[  242.000300] task:mount           state:D stack:0     pid:233   ppid:1      flags:0x00004000
"""

HUNG_PANIC = "[  300.000000] Kernel panic - not syncing: hung_task: blocked tasks\n"


@pytest.mark.parametrize("text, kind, line", [
    (PANIC, "panic", "Kernel panic - not syncing: sysrq triggered crash"),
    (NULL_DEREF, "bug", "BUG: kernel NULL pointer dereference, address: 0000000000000008"),
    (EXT4_BUG_ON, "bug", "kernel BUG at fs/ext4/inode.c:1923!"),
    (GPF, "general-protection-fault", GPF.splitlines()[-2][15:]),
    (ARM_OOPS, "internal-error", "Internal error: Oops: 96000044 [#1] SMP"),
    (FS_WARNING, "fs-warning", FS_WARNING.splitlines()[-2][15:]),
    (HUNG, "hung", "INFO: task mount:233 blocked for more than 120 seconds."),
    (HUNG_PANIC, "panic", "Kernel panic - not syncing: hung_task: blocked tasks"),
])
def test_each_sign_of_kernel_trouble_is_found_with_its_line(text, kind, line):
    trouble = scan(text)
    assert trouble is not None
    assert (trouble.kind, trouble.line) == (kind, line)
    assert line in trouble.excerpt
    assert trouble.summary.startswith(f"kernel {kind}: ")


def test_the_excerpt_holds_the_lines_around_the_match_and_not_the_whole_boot():
    trouble = scan(PANIC)
    assert "sysrq: Trigger a crash" in trouble.excerpt
    assert "dump_stack_lvl" in trouble.excerpt
    assert "Linux version" not in trouble.excerpt


def test_the_first_sign_wins():
    trouble = scan(NULL_DEREF + PANIC)
    assert trouble.kind == "bug"


def test_a_lone_oops_line_is_found():
    assert scan("[    9.000000] Oops: 0002 [#1] SMP\n").kind == "oops"


@pytest.mark.parametrize("text", [
    BOOT,
    "",
    "[   25.000100] WARNING: CPU: 0 PID: 1 at kernel/workqueue.c:3066 __flush_work+0x2d/0x50\n",
    "[    1.000000] DEBUG: not a kernel BUG\n",
    "XFS (sda): Metadata corruption detected at xfs_buf_ioend+0x5c/0x1b0 [xfs], xfs_agf block 0x1\n",
    "EXT4-fs (sda): recovery complete\nEXT4-fs error (device sda): ext4_lookup:1785: deleted inode referenced\n",
    '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.\n',
    "Phase 1 - find and verify superblock...\nno BUGS found; Oopsie is a file name\n",
])
def test_ordinary_kernel_and_tool_output_is_not_trouble(text):
    assert scan(text) is None


def test_a_watch_reads_only_what_came_after_its_mark(tmp_path):
    log = tmp_path / "console.log"
    log.write_text(NULL_DEREF)
    watch = ConsoleWatch(log)
    watch.set_mark()
    assert watch.trouble() is None
    with open(log, "a") as f:
        f.write(PANIC)
    assert watch.trouble().kind == "panic"


def test_a_watch_without_a_console_finds_nothing(tmp_path):
    assert ConsoleWatch(None).trouble() is None
    assert ConsoleWatch(tmp_path / "absent.log").trouble() is None
