"""The `extents` check as shell functions: the blocks `fsync-extents` owes (those an fallocate
gave a file past its end; `generate.prealloc`) are among the blocks the recovered file's extents
cover, as `generate.judge.holds` judges it. The extents are read as the checker's walk reads
them (pp-tree: every extent fiemap lists, past the size too), with `xfs_io -c fiemap`, whose
plain output gives each extent's range in 512-byte units (`0: [0..31]: 2048..2079`, a hole as
`hole`); they become 4 KiB block numbers, written as the judge writes them (`blocks {0, 1}`).

A script gets these functions only when it checks extents: one that does not is unchanged."""

from plugpull.generate.tree import BLOCK

SECTORS = BLOCK // 512  # xfs_io's fiemap counts in 512-byte units

READERS = r"""fiemap_blocks() {  # the 4 KiB blocks the extents in xfs_io's fiemap output (stdin) cover: blocks {0, 1}
	f_out= f_next=0
	while read -r f_index f_range f_where; do
		case $f_range in \[*..*\]:) ;; *) continue ;; esac
		if [ "$f_where" = hole ]; then continue; fi
		f_range=${f_range#\[}
		f_block=$((${f_range%%..*} / @SECTORS@))
		f_last=${f_range#*..}
		f_last=$((${f_last%\]:} / @SECTORS@))
		if [ "$f_block" -lt "$f_next" ]; then f_block=$f_next; fi
		while [ "$f_block" -le "$f_last" ]; do
			f_out="${f_out:+$f_out, }$f_block"
			f_block=$((f_block + 1))
		done
		if [ "$f_block" -gt "$f_next" ]; then f_next=$f_block; fi
	done
	echo "blocks {$f_out}"
}

extents_of() {  # extents_of PATH: the blocks PATH's extents cover (status 1: fiemap failed)
	f_map=$(@XFS_IO@ -r -c fiemap "@MNT@/$1") && echo "$f_map" | fiemap_blocks
}

covers() {  # covers HAVE OWED: every block of OWED (blocks {1, 3}) is one of HAVE's
	v_have=${1#blocks \{}
	v_have=" ${v_have%\}},"
	v_owed=${2#blocks \{}
	for v_block in ${v_owed%\}}; do
		case $v_have in *" ${v_block%,},"*) ;; *) return 1 ;; esac
	done
}
""".replace("@SECTORS@", str(SECTORS))

SH_CHECK = r"""check_extents() {  # check_extents PATH extents NEED WHY OWED...: where PATH is a NEED, its extents
	# cover the blocks of one OWED
	c_path=$1 c_need=$3 c_why=$4
	shift 4
	if [ "$(kind_of "$c_path")" != "$c_need" ]; then return 0; fi
	c_value=$(extents_of "$c_path") || die "xfs_io fiemap of $c_path failed"
	for c_ok in "$@"; do
		if covers "$c_value" "$c_ok"; then return 0; fi
	done
	wrong "$c_path: extents is $c_value, owed $(either "$@") ($c_why)"
}
"""

FSTESTS_SHOW = r"""show_extents() {  # show_extents PATH extents NEED WHY OWED...: as show, of PATH's extents
	# covering the blocks of one OWED
	local path=$1 need=$3 why=$4 label="$1 extents (if a $3)" value ok
	shift 4
	if [ "$(kind_of $path)" != "$need" ]; then
		echo "$label: cover $(either "$@")"
		return
	fi
	value=$(extents_of $path)
	for ok in "$@"; do
		if covers "$value" "$ok"; then echo "$label: cover $(either "$@")"; return; fi
	done
	echo "$label: ${value:-unread}, owed $(either "$@") ($why)"
}
"""


def readers(mnt: str, xfs_io: str) -> str:
    """`fiemap_blocks`, `extents_of PATH` (PATH relative to the mount point `mnt`) and `covers`."""
    return READERS.replace("@XFS_IO@", xfs_io).replace("@MNT@", mnt)


def sh_functions() -> str:
    """What the sh script adds to check extents (its `kind_of`, `either`, `wrong`, `die` beside)."""
    return readers("$mnt", "xfs_io") + "\n" + SH_CHECK


def fstests_functions() -> str:
    """What the fstests test adds to show extents (its `kind_of` and `either` beside)."""
    return readers("$SCRATCH_MNT", "$XFS_IO_PROG") + "\n" + FSTESTS_SHOW
