"""Known bugs as cases (suites/cases/known-*.toml): each names a generated workload by its id,
and the id must still name the operations the case describes, so a change to the generator
that renumbers ids fails here. The state each bug left, as its report describes it, is judged
by the oracle: the cases whose bug the oracle sees must find it not clean."""

from dataclasses import replace

import pytest

from plugpull.check.verdict import Verdict
from plugpull.generate.judge import judge
from plugpull.generate.space import space_of, workload_of
from plugpull.generate.tree import DIR, Entry
from plugpull.generate.workload import PREFIX, generated_workload
from plugpull.paths import ROOT
from plugpull.runs.cases import load_case

CASES = ROOT / "suites" / "cases"

# case -> (generated id, its operations): pinned
KNOWN = {
    "known-btrfs-rename-fsync": ("seq2-009642", "write.overwrite A/foo, fsync A/foo; rename.file A/foo A/bar, fsync A/bar"),
    "known-btrfs-xattr-delete": ("seq2-114652", "setxattr A/foo, sync; removexattr A/foo, fsync A/foo"),
    "known-btrfs-append-after-link": ("seq3-2772014", "write.overwrite A/foo, fsync A/foo; link A/foo A/bar, sync; "
                                                      "write.append A/foo, fsync A/foo"),
    "known-btrfs-rename-dir-new-dir": ("seq2-113405", "rename.dir A B; mkdir A, fsync A"),
    "known-btrfs-rename-file-new-file": ("seq3-24232848", "rename.file A/foo A/bar; creat A/foo; "
                                                          "write.append A/foo, fsync A/foo"),
    "known-btrfs-empty-symlink": ("seq1-000219", "symlink A/foo, fsync A"),
    "known-btrfs-link-fsync-names": ("seq2-006979", "mkdir B; link A/foo B/bar, fsync A/foo"),
    "known-btrfs-link-unlink": ("seq3-15972617", "link A/foo A/bar, sync; unlink A/bar; creat A/bar, fsync A/bar"),
    "known-btrfs-symlink-rename": ("seq2-080435", "symlink A/foo, fsync A; rename.file A/foo A/bar, fsync A"),
    "known-f2fs-posix-rename-file-new-file": ("seq3-24232848", "rename.file A/foo A/bar; creat A/foo; "
                                                               "write.append A/foo, fsync A/foo"),
    "known-f2fs-strict-rename-file-new-file": ("seq3-24232848", "rename.file A/foo A/bar; creat A/foo; "
                                                                "write.append A/foo, fsync A/foo"),
}
# the cases that expect the loss on every kernel: a filesystem's documented behaviour, not a bug
DOCUMENTED = {"known-f2fs-posix-rename-file-new-file"}


def test_every_known_case_is_pinned():
    assert sorted(p.stem for p in CASES.glob("known-*.toml")) == sorted(KNOWN)


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_a_known_case_names_the_workload_it_describes(name):
    ident, ops = KNOWN[name]
    case = load_case(CASES / f"{name}.toml")
    assert {c.spec.workload for c in case.cells} == {PREFIX + ident}
    assert space_of(ident).parse(ident).text() == ops  # the id still names these operations
    assert workload_of(ops).ident == ident  # and these operations still have this id
    summary = " ".join(case.summary.split())
    assert ops in summary and ident in summary, "the summary names the operations and the id"
    assert (case.unsafe if name in DOCUMENTED else case.safe) == ("barrier",)
    assert {c.spec.fs.partition("-")[0] for c in case.cells} >= {name.split("-")[1]}, "the name says the fs"


def bug_state(ident: str, change) -> tuple:
    """The workload, its last point, and the model's final tree changed as the bug left it."""
    workload = space_of(ident).parse(ident)
    view = dict(workload.trees[-1].view())
    change(view, workload)
    return workload, len(workload.points()), view


def _renamed_file_missing(view, w):  # 322: the file is back under its old name, not its new
    view["A/foo"] = view.pop("A/bar")


def _xattr_back(view, w):  # 066: the removed xattr is there after replay
    view["A/foo"] = replace(view["A/foo"], xattrs=(("user.pp", "v1"),))


def _append_lost(view, w):  # 090: the size and data before the append
    before = w.trees[2].view()
    for p in ("A/foo", "A/bar"):
        view[p] = replace(view[p], size=before[p].size, digest=before[p].digest)


def _renamed_dir_lost(view, w):  # 341: the new A, empty; B and its files gone
    view.clear()
    view["A"] = Entry(DIR, nlink=2)


def _empty_symlink(view, w):  # 348
    view["A/foo"] = replace(view["A/foo"], target="")


def _new_link_lost(view, w):  # bug 7: B/bar missing, the link count 1
    del view["B/bar"]
    view["A/foo"] = replace(view["A/foo"], nlink=1)


def _symlink_under_its_old_name(view, w):  # generic/779: A/foo still there, no A/bar
    view["A/foo"] = view.pop("A/bar")


def _renamed_file_lost(view, w):  # 342: the old file under neither name
    del view["A/bar"]


@pytest.mark.parametrize("name, change", [
    ("known-btrfs-rename-fsync", _renamed_file_missing),
    ("known-btrfs-xattr-delete", _xattr_back),
    ("known-btrfs-append-after-link", _append_lost),
    ("known-btrfs-rename-dir-new-dir", _renamed_dir_lost),
    ("known-btrfs-empty-symlink", _empty_symlink),
    ("known-btrfs-link-fsync-names", _new_link_lost),
    ("known-btrfs-symlink-rename", _symlink_under_its_old_name),
])
def test_the_oracle_finds_the_state_the_bug_left(name, change):
    workload, k, view = bug_state(KNOWN[name][0], change)
    assert judge(workload, "btrfs", k, workload.trees[-1].view()).verdict == Verdict.CLEAN
    found = judge(workload, "btrfs", k, view)
    assert found.verdict == Verdict.DATA_LOSS, found.reason


@pytest.mark.parametrize("fs", ["btrfs", "f2fs", "f2fs-strict"])
def test_the_renamed_file_lost_behind_a_new_file_is_data_loss_on_each_profile(fs):
    """generic_342 on btrfs and on f2fs in either fsync mode: f2fs-strict is judged by f2fs's rules."""
    workload, k, view = bug_state(KNOWN["known-btrfs-rename-file-new-file"][0], _renamed_file_lost)
    judged = generated_workload(PREFIX + workload.ident, fs)
    assert judged.profile == ("f2fs" if fs.startswith("f2fs") else fs)
    found = judge(workload, judged.profile, k, view)
    assert found.verdict == Verdict.DATA_LOSS and "(sync-all, point 0)" in found.reason


def test_the_oracle_sees_a_renamed_file_lost_behind_a_new_file():
    """generic_342's loss: the durable file renamed to A/bar is gone, a new A/foo is there. The
    oracle tells the two files apart by the old one's contents, pinned since the setup's sync."""
    workload, k, view = bug_state(KNOWN["known-btrfs-rename-file-new-file"][0], _renamed_file_lost)
    found = judge(workload, "btrfs", k, view)
    assert found.verdict == Verdict.DATA_LOSS and "under none of A/foo, A/bar" in found.reason
