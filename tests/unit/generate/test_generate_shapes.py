"""Shapes (generate/shapes.py): each shape's count and ids pinned; an id parsed back, located
from its steps and drawn in a sample names the same workload; a small shape's workloads are
exactly the valid sequences a plain recursion finds, in id order; shape ids never collide with
`seqN-...`; bad shape names and ids are refused in one line; the programs of a sample run on
the host leave the model's tree, and the model's own states are clean. No VM."""

import random
from dataclasses import replace

import pytest
from tests.cli_run import run_cli
from tests.unit.generate.test_oracle_own_states import assert_own_states_clean
from tests.unit.generate.test_program import host_refusals, host_tools, links, run_on_host, without_ino  # noqa: F401

from plugpull.errors import UsageError
from plugpull.generate.ops import OPS, Sim, apply, refusal
from plugpull.generate.points import followed
from plugpull.generate.shapes import ANY, NAMES, NO_POINT, OWN, SHAPES, Shape, at, shape_named
from plugpull.generate.space import Space, Step, block_of, shape_space, space_of, steps_of, whole_space
from plugpull.generate.tree import read_tree
from plugpull.hunt.hunter import HuntSpec

# measured when the shapes came (2026-11-29): a change to a shape, or to the operations or
# points its positions allow, changes these, and so every id of the shape
COUNTS = {"renames": 3148800, "write-rename": 2587392, "evict-rename": 351896, "nested-new": 733722,
          "rename-link": 12400656, "links": 248832, "four-names": 617210}
EXTENTS = 10032906240
PINNED = {  # an id of each shape, and its steps (the known table's ids among them)
    "seq5.renames-000000": "creat A/foo, sync; rename.file A/foo A/bar; rename.file A/bar A/foo; "
                           "write.append A/foo, fsync A/foo; again, sync",
    "seq5.renames-2794427": "creat A/bar, fsync A/bar; rename.file A/bar B/bar; rename.file A/foo B/foo; "
                            "resize.up B/bar, fsync-any B/foo; again, fsync-any B/bar",
    "seq5u.write-rename-1949089": "creat B/bar; write.append A/foo, fsync A/foo; rename.file A/foo A/bar; "
                                  "write.append A/bar, fsync-any B/bar; again, fsync-any A/bar",
    "seq4.evict-rename-029735": "creat A/bar, fsync A; evict; rename.file A/foo B/foo; creat B/bar, fsync B/bar",
    "seq4.nested-new-118290": "write.overwrite A/foo, fsync A/foo; nested.mkdir A/C; nested.creat A/C/foo; "
                              "rename.file A/foo A/bar, fsync A",
    "seq4.rename-link-177331": "creat A/bar, fsync A/bar; rename.file A/foo B/foo; link B/foo A/foo; "
                               "creat B/bar, fsync B/bar",
    "seq4.four-names-277893": "third.rename A/foo A/baz; fourth.rename A/bar A/qux; third.link A/baz A/bar; "
                              "creat A/foo, fsync A/foo",
    "seq4.four-names-209352": "creat A/bar, fsync A/bar; third.rename A/foo A/baz; third.link A/baz A/foo; "
                              "fourth.creat A/qux, fsync A/qux",
    "seq6.links-010469": "unlink A/bar; link A/foo A/bar; link A/foo B/foo; unlink A/bar; link A/foo A/bar; "
                         "link A/foo B/bar, fsync A/foo",
}
# shapes small enough to enumerate by a plain recursion: over four tables' blocks; and nested
# names made first and then offered as points where no nested operation may come
SMALL = Shape("small", "a test's", (at(("creat", "evict"), (NO_POINT, "sync", "fsync")),
                                    at(("rename", "link", "again"), (NO_POINT, "fsync", "fsync-any")),
                                    at(("write", "punch", "unlink"), ("fsync", "fdatasync", "sync"))))
NESTED = Shape("nested", "a test's", (at(("nested",), (NO_POINT,)), at(("nested", "write"), (NO_POINT,)),
                                      at(("rename", "creat"), ("fsync", "fsync-any"))))


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_each_shapes_count_is_pinned_and_its_first_and_last_ids_parse_back(name):
    space = shape_space(name)
    assert space.count() == COUNTS[name] and space.total() == COUNTS[name]
    for index in (0, space.count() - 1):
        workload = space.workload(index)
        assert workload.ident == f"seq{len(shape_named(name).positions)}.{name}-{index:06d}"
        assert space_of(workload.ident).parse(workload.ident) == workload
        assert space.locate(workload.steps) == index


def test_the_extents_shape_counts_in_one_walk():
    assert shape_space("extents").count() == EXTENTS


@pytest.mark.parametrize("ident, text", PINNED.items(), ids=list(PINNED))
def test_pinned_ids_name_their_steps(ident, text):
    workload = space_of(ident).parse(ident)
    assert workload.text() == text and workload.ident == ident
    assert workload.shape == ident.split(".")[1].rsplit("-", 1)[0]
    assert len(workload.trees) == len(workload.steps) + 1  # every step valid on the model


def test_a_sample_is_drawn_as_pinned_and_each_id_names_its_place():
    space = shape_space("evict-rename")
    assert space.sample(4, seed=1) == [33086, 70445, 133729, 298426]
    for index in space.sample(30, seed=2):
        workload = space.workload(index)
        assert space.locate(workload.steps) == index and space.parse(workload.ident) == workload
        assert all(allowed(p, s) for p, s in zip(shape_named("evict-rename").positions, workload.steps))


def allowed(position, step: Step) -> bool:
    return step.op.family in position[0] and (step.persist.kind if step.persist else NO_POINT) in position[1]


def brute_force(shape: Shape) -> list[tuple[Step, ...]]:
    """Every valid sequence of the shape's positions, by a plain recursion (no counts, no ids)."""
    found = []

    def walk(sim, steps):
        if len(steps) == len(shape.positions):
            found.append(tuple(steps))
            return
        families, points = shape.positions[len(steps)]
        for op in OPS:
            after = sim.copy()
            if op.family in families and apply(after, op, len(steps) + 1):
                for persist, then in followed(after, op, last=len(steps) + 1 == len(shape.positions)):
                    if (persist.kind if persist else NO_POINT) in points:
                        walk(then, [*steps, Step(op, persist)])
    walk(Sim(), [])
    return found


@pytest.mark.parametrize("shape, blocks", [(SMALL, 4), (NESTED, 2)], ids=["tables", "nested"])
def test_a_small_shapes_workloads_are_exactly_the_valid_sequences_in_id_order(shape, blocks):
    space = Space(3, shape=shape)
    every = brute_force(shape)
    assert len(every) == len(set(every)) == space.count() > 1000
    order = {steps: n for n, steps in enumerate(every)}
    by_id = sorted(every, key=lambda steps: (block_of(steps), order[steps]))  # table blocks, each depth-first
    assert [w.steps for w in space.workloads()] == by_id
    assert [space.workload(i).steps for i in range(0, len(by_id), 97)] == by_id[::97]
    assert len({block_of(s) for s in every}) >= blocks, "the shape spans several tables' blocks"


def test_a_filter_keeps_the_shapes_workloads_of_its_names_with_their_ids():
    space = Space(3, ("creat", "rename", "write", "link"), ("fsync", "sync", "fdatasync"), shape=SMALL)
    kept = [w for w in Space(3, shape=SMALL).workloads()
            if all(s.op.family in ("creat", "rename", "write", "link") and (s.persist is None or s.persist.kind in
                   ("fsync", "sync", "fdatasync")) for s in w.steps)]
    assert [(w.ident, w.steps) for w in space.workloads()] == [(w.ident, w.steps) for w in kept]
    assert space.total() == len(kept) and space.filtered
    assert sorted(space.index_of(r) for r in range(0, len(kept), 50)) == [w.index for w in kept[::50]]


def test_an_invalid_or_misplaced_step_is_located_nowhere():
    space = shape_space("evict-rename")
    with pytest.raises(UsageError, match="not a shape evict-rename workload"):
        space.locate(steps_of("evict; creat A/bar, fsync A; rename.file A/foo B/foo; creat B/bar, fsync B/bar"))
    with pytest.raises(UsageError):  # A/bar made twice
        space.locate(steps_of("creat A/bar, fsync A; evict; rename.file A/foo B/foo; creat A/bar, fsync A/bar"))


def test_shape_ids_and_seq_ids_never_meet():
    assert whole_space(1).workload(5).ident == "seq1-000005"
    assert shape_space("renames").workload(5).ident == "seq5.renames-000005"
    assert shape_space("renames", synced=False).workload(5).ident == "seq5u.renames-000005"
    with pytest.raises(UsageError, match="not of --shape renames"):
        shape_space("renames").parse("seq5-000005")
    with pytest.raises(UsageError, match="not of a --seq space"):
        whole_space(1).parse("seq1.renames-000005")
    with pytest.raises(UsageError, match="not of --setup synced"):
        shape_space("renames").parse("seq5u.renames-000005")


@pytest.mark.parametrize("ident, words", [
    ("seq5.nope-000001", "unknown shape 'nope'"),
    ("seq4.renames-000001", "shape renames has 5 operations, not 4"),
    ("seq5.renames-3148800", "no workload seq5.renames-3148800: shape renames has 3148800"),
    ("seq5.Renames-000001", "expected seqN-NNNNNN, seqNu-, seqNl-, seqNx-, seqNq-, seqNf-NNNNNN or seqN.SHAPE-NNNNNN"),
    ("seq5.renames2-000001", "expected seqN-NNNNNN"),
    ("seq5.renames-", "expected seqN-NNNNNN"),
])
def test_a_bad_shape_id_is_refused(ident, words):
    with pytest.raises(UsageError, match=words):
        space_of(ident).parse(ident)


def test_shape_names_are_ids_names_and_positions_name_known_steps():
    assert len(set(NAMES)) == len(SHAPES) and all(4 <= len(s.positions) <= 6 for s in SHAPES)
    for shape in SHAPES:
        assert shape_space(shape.name).workload(0).ident.startswith(f"seq{len(shape.positions)}.{shape.name}-")
    with pytest.raises(ValueError, match="'teleport'"):
        at(("creat", "teleport"), OWN)
    with pytest.raises(ValueError, match="'fsync-everything'"):
        at(("creat",), (*ANY, "fsync-everything"))
    with pytest.raises(UsageError, match="expected one of renames"):
        shape_named("nope")
    with pytest.raises(UsageError, match="has 5 operations, not 3"):
        Space(3, shape=shape_named("renames"))


def run(argv, capsys):
    return run_cli(["generate", *argv], capsys)


def test_the_commands_list_count_sample_and_show_a_shape(capsys):
    code, out, _ = run(["--shapes", "--ops", "creat,evict,rename,link,unlink,write,fsync,fdatasync,fsync-any,"
                        "fdatasync-any,sync,again,resize,truncate"], capsys)
    assert code == 0 and out.splitlines()[0].split() == ["shape", "ops", "workloads", "for"]
    assert [line.split()[:2] for line in out.splitlines()[1:]] == [[s.name, str(len(s.positions))] for s in SHAPES]
    rows = {line.split()[0]: line.split()[2] for line in out.splitlines()[1:]}
    assert rows["evict-rename"] == "344,912" and rows["extents"] == rows["nested-new"] == "0"  # no mkdir, falloc, nested
    assert "generic/640" in out and rows["renames"] == f"{COUNTS['renames']:,}"
    assert run(["--shape", "links"], capsys)[1] == "shape links: 248832 workloads of 248832\n"
    code, out, _ = run(["--shape", "evict-rename", "--sample", "2", "--seed", "1"], capsys)
    assert out.split("\n")[0].split()[0] == "seq4.evict-rename-070445" and len(out.splitlines()) == 2
    code, out, _ = run(["--show", "seq4.evict-rename-029735"], capsys)
    assert code == 0 and "echo 2 > /proc/sys/vm/drop_caches" in out and "# 4: creat B/bar" in out
    code, out, _ = run(["--owed", "seq4u.evict-rename-029735", "--fs", "btrfs"], capsys)
    assert code == 0 and out.startswith("seq4u.evict-rename-029735: creat A/bar, fsync A; evict;")


@pytest.mark.parametrize("argv", [["--shape", "nope"], ["--shape", "renames", "--seq", "2"],
                                  ["--shapes", "--seq", "1"], ["--shapes", "--show", "seq5.renames-000001"],
                                  ["--shape", "links", "--sample", "248833"], ["--show", "seq5.nope-000001"],
                                  ["--shape", "links", "--show", "seq5.renames-000001"],
                                  ["--shape", "links", "--ops", "frob"]])
def test_bad_shape_input_exits_2_in_one_line(argv, capsys):
    code, out, err = run(argv, capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("argv, words", [
    (["hunt", "--shape", "nope"], "expected one of renames"),
    (["hunt", "--shape", "links", "--seq", "1"], "not allowed with"),
    (["hunt", "--shape", "links", "--sample", "248833"], "shape links has only 248832 workloads"),
])
def test_bad_shape_hunts_are_refused_in_one_line_before_anything_is_made(argv, words, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(argv, capsys)
    assert code == 2 and words in err and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == []


def test_a_shape_hunt_keeps_its_shape_in_its_settings_and_refuses_another(tmp_path):
    from plugpull.hunt.journal import HUNT_DIR, check_out
    spec = HuntSpec(seq=5, shape="renames", sample=10)
    assert spec.settings("6.1")["shape"] == "renames" and "shape" not in HuntSpec(seq=1).settings("6.1")
    out = tmp_path / "hunt"
    HUNT_DIR.begin(out, spec.settings("6.1"))
    check_out(out, spec.settings("6.1"))  # the same hunt goes on
    for other in (HuntSpec(seq=5, shape="write-rename", sample=10), HuntSpec(seq=5, sample=10)):
        with pytest.raises(UsageError):
            check_out(out, other.settings("6.1"))


def test_the_default_out_of_a_shape_hunt_names_it():
    from types import SimpleNamespace
    from plugpull.cli.hunt import default_out
    args = SimpleNamespace(seq=None, shape="renames", fs="btrfs", mode="barrier", ops=None, setup=None, sample=100,
                           seed=1)
    assert str(default_out(args, [None])) == "results/hunt-shape-renames-btrfs-barrier-sample100-seed1"


def test_the_programs_of_a_sample_of_each_shape_leave_the_models_tree(host_tools, tmp_path):  # noqa: F811
    ran = 0
    for shape in SHAPES:
        space = shape_space(shape.name)
        for index in space.sample(4, seed=3):
            workload = space.workload(index)
            refused = {key for s in workload.steps if (key := refusal(s.op, host_refusals()))}
            workload = replace(workload, refused=frozenset(refused))
            where = tmp_path / f"w{ran}"
            acks = run_on_host(workload, where, host_tools)
            assert acks == [f"ack {k}" for k in range(len(workload.points()) + 1)]
            real, model = read_tree(where), workload.trees[-1].view()
            assert without_ino(real) == without_ino(model), (workload.ident, workload.text())
            assert links(real) == links(model), workload.ident
            ran += 1
    assert ran == 4 * len(SHAPES)


@pytest.mark.parametrize("synced", [True, False], ids=["synced", "unsynced"])
def test_the_models_own_states_of_shape_workloads_are_clean(synced):
    for shape in SHAPES:
        space = shape_space(shape.name, synced)
        assert_own_states_clean(space, sorted(random.Random(21).sample(range(space.count()), 3)))


def test_the_commands_that_take_gen_id_take_a_shapes():
    from plugpull.crash.spec import CrashSpec
    from plugpull.reproducer import case_for
    from plugpull.runs.settings import WorkloadName
    plan = CrashSpec(fs="btrfs", mode="barrier", workload="gen:seq5.renames-2794427").resolve()
    assert plan.workload.generated.shape == "renames" and "pp_acked 3" in plan.workload.script("/mnt")
    assert case_for("gen:seq4u.evict-rename-029735", "ext4", 1).workload.ident == "seq4u.evict-rename-029735"
    setting = WorkloadName("workload", lambda: ())
    assert setting.check("gen:seq6.links-010469") == "gen:seq6.links-010469"
    with pytest.raises(ValueError, match="unknown shape 'nope'"):
        setting.check("gen:seq6.nope-010469")
