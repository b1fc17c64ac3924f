"""What a reproducer checks: the model oracle's facts (`oracle.owed`) and held files
(`oracle.held`) for a crash right after the point, as shell words.

A fact is judged as `generate.judge` judges it: a path's kind always; its size, contents,
link count and xattrs only where the path is a regular file, a symlink's target only where it
is a symlink (else the path holds something the fact is not about). Contents are compared by
md5 (what every shell has), computed here from the model's data. Xattrs are checked only when
the workload sets or removes some (then getfattr is needed), and only when each owed value is
`user.pp` alone or nothing; otherwise they are left out, and the script says so. A file's
extents are read by xfs_io's fiemap (`reproducer.extents`): the owed blocks must be among those
they cover."""

import hashlib
import shlex
from dataclasses import dataclass

from plugpull.generate.judge import FACT_KIND
from plugpull.generate.ops import XATTR
from plugpull.generate.judge import kept_apart
from plugpull.generate.oracle import held, owed
from plugpull.generate.tree import FILE, digest
from plugpull.reproducer import ReproducerCase
from plugpull.reproducer.steps import needs_setfattr

SHELL_FACT = {"kind": "kind", "size": "size", "digest": "md5", "nlink": "nlink", "xattrs": "xattr",
              "target": "target", "extents": "extents"}
ABSENT = "absent"


@dataclass(frozen=True)
class Check:
    """`path`'s `fact` (kind, size, md5, nlink, xattr, target) is one of `allowed`, judged
    where the path is a `need` ("" for kind: always); of `extents`, the blocks the path's
    extents cover take in those of one of `allowed`."""

    path: str
    fact: str
    allowed: tuple[str, ...]
    need: str
    why: str


@dataclass(frozen=True)
class HeldCheck:
    """The `kind` owed at `names[0]` is under one of `names`, with contents `md5` if not ""."""

    names: tuple[str, ...]
    kind: str
    md5: str
    why: str


@dataclass(frozen=True)
class Checks:
    facts: tuple[Check, ...]
    held: tuple[HeldCheck, ...]
    skipped: tuple[str, ...]  # what is owed but not checked, and why
    apart: tuple[tuple[str, str], ...] = ()  # names no step makes one inode (generate.judge.kept_apart)

    @property
    def needs_getfattr(self) -> bool:
        return any(c.fact == "xattr" for c in self.facts)

    @property
    def needs_fiemap(self) -> bool:
        return any(c.fact == "extents" for c in self.facts)


def md5_of_digests(case: ReproducerCase) -> dict[str, str]:
    """Every file content of the workload's trees: its sha256 (the model's digest) -> md5."""
    out = {}
    for tree in case.workload.trees:
        for node in tree.inodes.values():
            if node.kind == FILE:
                out[digest(node.data)] = hashlib.md5(node.data).hexdigest()
    return out


def xattr_word(pairs) -> str | None:
    """An owed xattrs value as the shell reads it (`user.pp`'s value, "" for none); None if
    it is not that simple."""
    if pairs == ():
        return ""
    if len(pairs) == 1 and pairs[0][0] == XATTR:
        return pairs[0][1]
    return None


def _word(name: str, value, md5s: dict[str, str]) -> str | None:
    if name == "kind":
        return ABSENT if value is None else value
    if name == "digest":
        return md5s.get(value)
    if name == "xattrs":
        return xattr_word(value)
    return str(value)


def fact_check(o, md5s: dict[str, str], xattrs: bool) -> Check | str | None:
    """A Check for owed fact `o`; a reason if it is owed but left out; None if nothing is owed
    of it where it can be judged."""
    values = o.values if o.name == "kind" else o.values - {None}
    if not values:
        return None
    why = f"{o.rule}, point {o.point}"
    if o.name == "xattrs" and not xattrs:
        return None  # no operation touches xattrs: there is nothing of them to reproduce
    if o.name == "extents" and None in o.values:
        return None  # a value not judged accepts any blocks (judge.holds)
    if o.name not in SHELL_FACT:
        return f"{o.path} {o.name} ({why}): not read by a shell check"
    words = [_word(o.name, v, md5s) for v in values]
    if None in words:
        return f"{o.path} {o.name} ({why}): not simple enough for a shell check"
    return Check(o.path, SHELL_FACT[o.name], tuple(sorted(set(words))), "" if o.name == "kind" else FACT_KIND[o.name],
                 why)


def checks(case: ReproducerCase) -> Checks:
    """What a state cut right after `case.point` must show on `case.fs`."""
    md5s = md5_of_digests(case)
    xattrs = needs_setfattr(case)
    facts, skipped = [], []
    for o in owed(case.workload, case.rules, case.point):
        found = fact_check(o, md5s, xattrs)
        if isinstance(found, Check):
            facts.append(found)
        elif found:
            skipped.append(found)
    kept = tuple(HeldCheck(h.names, h.kind, md5s.get(h.digest, "") if h.digest else "", f"{h.rule}, point {h.point}")
                 for h in held(case.workload, case.rules, case.point))
    return Checks(tuple(facts), kept, tuple(skipped), tuple(kept_apart(case.workload)))


def reader_functions(mnt: str, getfattr: str) -> str:
    """Shell functions that read what the checks compare: `kind_of PATH` and `fact_of PATH
    FACT`, PATH relative to the mount point `mnt`."""
    return f"""kind_of() {{  # the kind of PATH: absent, file, dir, symlink or other
\tif [ -L "{mnt}/$1" ]; then echo symlink
\telif [ -f "{mnt}/$1" ]; then echo file
\telif [ -d "{mnt}/$1" ]; then echo dir
\telif [ -e "{mnt}/$1" ]; then echo other
\telse echo absent
\tfi
}}

fact_of() {{  # fact_of PATH FACT: size, nlink, md5 (of the contents), target or xattr ({XATTR}'s value)
\tcase $2 in
\tsize) stat -c %s "{mnt}/$1" ;;
\tnlink) stat -c %h "{mnt}/$1" ;;
\tmd5) md5sum <"{mnt}/$1" | cut -d' ' -f1 ;;
\ttarget) readlink "{mnt}/$1" ;;
\txattr) {getfattr} --only-values -n {XATTR} "{mnt}/$1" 2>/dev/null ;;
\tesac
}}

either() {{  # the words given, joined by "or" ("none" for an empty one)
\te_out=
\tfor e_word in "$@"; do e_out="${{e_out:+$e_out or }}${{e_word:-none}}"; done
\techo "$e_out"
}}
"""


def check_calls(found: Checks, call: str, held_call: str, apart_call: str) -> list[str]:
    """One shell line per check: `call PATH FACT NEED WHY ALLOWED...` (`call_extents` for
    extents: `reproducer.extents`), `held_call KIND MD5 WHY NAME...` (MD5 "-": any contents)
    and `apart_call NAME NAME`."""
    lines = [f"{call}{'_extents' if c.fact == 'extents' else ''} {c.path} {c.fact} {shlex.quote(c.need or '-')} "
             f"{shlex.quote(c.why)} "
             + " ".join(shlex.quote(a) for a in c.allowed) for c in found.facts]
    lines += [f"{held_call} {h.kind} {h.md5 or '-'} {shlex.quote(h.why)} {' '.join(h.names)}" for h in found.held]
    lines += [f"{apart_call} {p} {q}" for p, q in found.apart]
    return lines


def comment(found: Checks, case: ReproducerCase) -> list[str]:
    """What the script checks and leaves out, as comment lines."""
    lines = ["# Checked: what the model oracle says a crash right after this point owes on "
             f"{case.fs}, and nothing more",
             "# (a name's kind, a file's size, md5, link count, a symlink's target; xattrs only where",
             "# the workload sets some). A fact owed as one of several values accepts any of them.",
             "# And a rename's atomicity: no two names are one inode unless a step made them so."]
    if found.needs_fiemap:
        lines.append("# And where fsync owes a file's preallocated blocks: its extents (fiemap) cover them.")
    lines += [f"# Not checked: {s}" for s in found.skipped]
    if not needs_setfattr(case):
        lines.append("# Xattrs are not checked: no operation sets or removes one.")
    return lines
