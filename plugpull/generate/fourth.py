"""The fifteenth table's model (docs/generate.md, "The fifteenth table"): a fourth file name in
A, `A/qux` (`B/qux` where a rename of A takes it), fstests' four names in one directory:
a rename of foo or bar to it (generic/526's `mv fname2 fname4`) and a file made at it
(generic/479's `touch f2`, the name made after the special file was renamed to the third name
and linked back). With the tenth table's third name those two are every fourth-name step the
two tests take. Each runs as its first table's twin (`TWINS`), so the program, the points and
the oracle's rules are that operation's. Plain tuples, so that `ops` (which owns the operation
table and its `Op`) builds the rows.

Only A has it, and only these three rows: each row multiplies the seq-3 space, and neither test
does more to the fourth name (no link to or from it, no write, no rename back)."""

from plugpull.generate.tree import FOURTH

FAMILY = "fourth"
NAME = FOURTH[0]  # A/qux
# variant -> the first table's (family, variant) it runs as
TWINS = {(FAMILY, "rename"): ("rename", "file"), (FAMILY, "creat"): ("creat", "")}
FOURTH_ROWS = ((FAMILY, "rename", ("A/foo", NAME)), (FAMILY, "rename", ("A/bar", NAME)), (FAMILY, "creat", (NAME,)))
