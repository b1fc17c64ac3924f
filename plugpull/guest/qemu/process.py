"""Starting QEMU so that it dies with plugpull, whichever thread starts it.

`spawn` runs `subprocess.Popen` on one thread that lives as long as plugpull, with a
parent-death signal set in the child. That signal fires when the *thread* that started the
child ends, not the process (prctl(2), PR_SET_PDEATHSIG): a QEMU started on a worker thread
died with that thread, so a checker guest kept for the next check was gone by then.
"""

import ctypes
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor

PR_SET_PDEATHSIG = 1

_SPAWNER = ThreadPoolExecutor(1, thread_name_prefix="plugpull-spawner")


def die_with_parent() -> None:
    """Runs in the child before exec: it gets SIGKILL if plugpull dies without cleanup."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def spawn(argv: list[str], **kwargs) -> subprocess.Popen:
    """`subprocess.Popen(argv, **kwargs)`, the child killed when plugpull dies."""
    return _SPAWNER.submit(subprocess.Popen, argv, preexec_fn=die_with_parent, **kwargs).result()
