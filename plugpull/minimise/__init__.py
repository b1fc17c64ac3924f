"""Minimising and explaining: a failing crash state -> its culprit writes, in the filesystem's terms.

Takes a saved state that is not clean (a crash run's artifact) and a rig; gives the smallest
set of volatile writes whose loss (or survival) still gives the state's verdict, judged by
the real checker, each named in ext4, XFS or btrfs terms, as a small artifact that `replay`
rechecks and a bug report.

    ddmin           delta debugging over a batch oracle
    culprits        the search on the checker guests (`minimise`), resumable
    artifact        the minimised state as an artifact and its bug report
    explain         what a culprit write is, read on the host (ext4, XFS)
    explain_btrfs   the same for btrfs
    xfslog          an XFS log record read from a logged write
"""
