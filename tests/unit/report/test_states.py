"""The report's drill-down: each count of states that are not clean opens its cell's state page,
where each saved state shows its evidence, from a fixture results file and fixture artifact
directories shaped as `plugpull matrix` and `plugpull minimise` save them."""

import json
import shutil
from html.parser import HTMLParser

import pytest

from plugpull.report import report, report_main
from plugpull.report.headline import headline
from plugpull.report.links import broken_links
from plugpull.results import read_cells

KEY = "xfs/nobarrier/fsync-files/0a1b2c3d4e"
FSCK = "\n".join(f"fsck line {i}" for i in range(1, 21))
# verdict -> the states the cell saved with it: (name, digest, what differs from the plain one)
STATES = {
    "data-loss": [("reorder-cut40", "d1", {"lost": [{"ack": 3, "reason": "pp/f00003 is missing"},
                                                    {"ack": 4, "reason": "pp/f00004 has wrong content (0 bytes)"}],
                                           "acks_lost": 2}),
                  ("reorder-cut41", "d1", {"lost": [{"ack": 7, "reason": "record 7 of db.sqlite is missing or wrong"}],
                                           "acks_lost": 30})],
    "inconsistent": [("reorder-cut50", "d2", {"broken": ["a hole in the sequence: 5 missing, 6 present"]})],
    "fs-corrupt": [("reorder-cut60", "d3", {"fsck_rc": 4, "lost_member": 0, "cuts": [60, 33, 58], "lost": [
        {"ack": 6, "reason": "acked long before the cut and not rewritten since: wrong (pp/f00006 has wrong content)"}],
        "acks_lost": 1})],
    "unmountable": [("reorder-cut70", "d4", {"mount": "mount: Structure needs cleaning\nXFS (sda): log inconsistent"})],
    "kernel-crash": [("reorder-cut80", "d5", {"kernel_excerpt": "Kernel panic - not syncing: Comm: mount"})],
    "infra-error": [("reorder-cut90", "d6", {})],
}
COUNTS = {"clean": 3, **{v: len(s) for v, s in STATES.items()}}


def cell_line(key, mode, counts, artifacts=None, seconds=10.0, settings=None):
    summary = {v: counts.get(v, 0) for v in ("clean", "data-loss", "inconsistent", "fs-corrupt", "unmountable",
                                                "kernel-crash", "infra-error")}
    return json.dumps({"schema": 5, "kind": "cell", "key": key, "fs": "xfs", "mode": mode, "workload": "fsync-files",
                       "params": {"count": 30}, "throughput": {"phases": [{"name": "fsync", "seconds": seconds, "ops": 30}]},
                       "crash": {"states": sum(summary.values()), "models": ["reorder"], "summary": summary,
                                 "artifacts": artifacts}, "cell": settings})


def save_state(states_dir, verdict, name, digest, extra):
    """A state.json as crash.artifacts.save_artifact writes it."""
    where = states_dir / name
    where.mkdir(parents=True)
    evidence = {"fsck": FSCK, "mount": extra.pop("mount", ""), "kernel": "[ 1.0] XFS (sda): Mounting V5\n[ 1.2] ok",
                "kernel_crash": extra.get("kernel_excerpt")}
    doc = {"fs": "xfs", "mode": "nobarrier", "workload": "fsync-files", "model": "reorder", "seed": 1,
           "cut": int(name.rpartition("cut")[2]), "verdict": verdict, "reason": f"the {verdict} reason",
           "acks_required": 12, "acks_lost": 0, "fsck_rc": 0, "lost": [], "artifact": str(where),
           "record": "../../record-00ff", "digest": digest, "evidence": evidence, **extra}
    (where / "state.json").write_text(json.dumps(doc))
    return where


def minimise(state_dir):
    where = state_dir / "minimised"
    where.mkdir()
    doc = {"verdict": "data-loss", "reason": "1 of 1 acknowledged operations lost", "record": "record",
           "minimised": {"culprits": [{"disk": 0, "entry": 17, "sector": 96, "offset": 49152, "bytes": 4096,
                                       "kind": "write", "fate": "lost", "after_flush": 12,
                                       "meaning": "the inode of pp/f00003"}],
                         "legality": {"legal": True, "reason": "a write cache may do this"}}}
    (where / "state.json").write_text(json.dumps(doc))
    (where / "summary.txt").write_text(f"culprit writes (1)\nexplained: the inode of pp/f00003\n"
                                       f"reproduce: plugpull replay {where}\n")


@pytest.fixture
def run(tmp_path):
    """A results file with a barrier cell (all clean), a nobarrier cell with every verdict and
    its saved states, and a nocache cell whose artifacts are gone."""
    results = tmp_path / "run" / "m.jsonl"
    states = results.parent / "m-artifacts" / KEY.replace("/", "-") / "states"
    for verdict, saved in STATES.items():
        for name, digest, extra in saved:
            save_state(states, verdict, name, digest, dict(extra))
    minimise(states / "reorder-cut40")
    stale = save_state(states, "data-loss", "reorder-cut2", "d0", {})  # an earlier run of the cell
    doc = json.loads((stale / "state.json").read_text())
    (stale / "state.json").write_text(json.dumps({**doc, "record": "../../record-0011"}))
    shutil.copystat(states / "reorder-cut40" / "state.json", stale / "state.json")
    results.write_text("\n".join([cell_line("xfs/barrier/fsync-files/1", "barrier", {"clean": 10}, seconds=20.0),
                                  cell_line(KEY, "nobarrier", COUNTS, artifacts="elsewhere", seconds=5.0),
                                  cell_line("xfs/nocache/fsync-files/3", "nocache", {"clean": 8, "data-loss": 2},
                                            artifacts="gone", seconds=40.0)]) + "\n")
    return results


class Sections(HTMLParser):
    """Per section id: its articles' ids; and every link's href with its text."""

    def __init__(self):
        super().__init__()
        self.sections, self.links, self.where, self.href = {}, [], None, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section":
            self.where = self.sections.setdefault(attrs["id"], [])
        elif tag == "article" and "state" in attrs.get("class", ""):
            self.where.append(attrs["id"])
        elif tag == "a":
            self.href = attrs["href"]

    def handle_data(self, data):
        if self.href is not None:
            self.links.append((self.href, data))
            self.href = None


def parsed(path):
    page = Sections()
    page.feed(path.read_text())
    return page


def state_page(out):
    return out / "states" / (KEY.replace("/", "_") + ".html")


def article(out, name):
    text = state_page(out).read_text()
    start = text.index(f'<article class="state" id="{name}">')
    return text[start:text.index("</article>", start)]


def test_each_unsafe_count_links_to_exactly_as_many_listed_states(run, tmp_path):
    out = tmp_path / "rep"
    report(run, out)
    links = [(h, t) for h, t in parsed(out / "report.html").links if h.startswith("states/")]
    assert {h.split("#")[1] for h, _ in links if KEY.replace("/", "_") in h} == set(STATES)
    for href, count in links:
        page, _, verdict = href.partition("#")
        assert len(parsed(out / page).sections[verdict]) == int(count) == COUNTS[verdict], verdict
    assert "reorder-cut2" not in state_page(out).read_text()  # the earlier run's state is not this cell's
    assert parsed(state_page(out)).sections["clean"] == []
    assert "Counted, not listed" in state_page(out).read_text()
    assert not (out / "states" / "xfs_nocache_fsync-files_3.html").exists()
    assert "saved states not found beside the results file (moved or removed): xfs / fsync-files  (count=30): nocache." in (
        out / "report.html").read_text()


def test_a_clean_count_links_nowhere(run, tmp_path):
    out = tmp_path / "rep"
    report(run, out)
    assert not list(out.glob("states/xfs_barrier*"))
    assert '<td class="crash-start">10</td>' in (out / "report.html").read_text()


@pytest.mark.parametrize("verdict", list(STATES))
def test_each_state_shows_its_evidence(run, tmp_path, verdict):
    out = tmp_path / "rep"
    report(run, out)
    for name, digest, extra in STATES[verdict]:
        shown = article(out, name)
        assert "<dt>model</dt><dd>reorder</dd>" in shown and f"<dt>cut</dt><dd>{name.rpartition('cut')[2]}" in shown
        assert f"<code>{digest}</code>" in shown and f"the {verdict} reason" in shown
        assert f"12 owed, {extra.get('acks_lost', 0)} lost or read back wrong" in shown
        for lost in extra.get("lost", ()):
            assert f"<td>{lost['ack']}</td><td>{lost['reason']}</td>" in shown
        assert "fsck line 12\n" in shown and "fsck line 13" not in shown and "(8 more lines)" in shown
        assert f"plugpull replay ../run/m-artifacts/{KEY.replace('/', '-')}/states/{name}\n" in shown
        assert f"plugpull minimise ../run/m-artifacts/{KEY.replace('/', '-')}/states/{name}<" in shown
        for invariant in extra.get("broken", ()):
            assert invariant in shown
        if "mount" in extra:
            assert "mount: Structure needs cleaning\nXFS (sda): log inconsistent" in shown
        if "kernel_excerpt" in extra:
            assert "kernel excerpt" in shown and "Kernel panic - not syncing: Comm: mount" in shown
        else:
            assert "kernel log, the last lines" in shown and "Mounting V5" in shown


def test_a_state_through_a_stack_shows_its_lost_member_its_cuts_and_the_write_hole(run, tmp_path):
    report(run, tmp_path / "rep")
    shown = article(tmp_path / "rep", "reorder-cut60")
    assert "<dt>cut</dt><dd>60 / 33 / 58 (one per disk)</dd>" in shown
    assert "<dt>lost member</dt><dd>disk 0 of the stack" in shown
    assert "<dt>write hole</dt><dd>1 of the lost acks" in shown
    assert "write hole" not in article(tmp_path / "rep", "reorder-cut40")


def test_a_list_cut_short_says_how_many_acks_were_lost(run, tmp_path):
    report(run, tmp_path / "rep")
    assert "(the first 1 of 30)" in article(tmp_path / "rep", "reorder-cut41")
    assert "the same state as <a href=\"#reorder-cut41\">" in article(tmp_path / "rep", "reorder-cut40")


def test_a_minimised_state_shows_its_culprits_and_links_its_summary(run, tmp_path):
    out = tmp_path / "rep"
    report(run, out)
    shown = article(out, "reorder-cut40")
    assert "Minimised: 1 culprit write" in shown and "the inode of pp/f00003" in shown
    assert "<td>49152</td><td>4096</td><td>lost</td>" in shown and "a write cache may do this" in shown
    summary = [h for h, t in parsed(state_page(out)).links if t == "summary.txt"]
    assert len(summary) == 1
    saved = json.loads((out / "states" / KEY.replace("/", "_") / "reorder-cut40" / "state.json").read_text())
    assert saved["artifact"] == f"../run/m-artifacts/{KEY.replace('/', '-')}/states/reorder-cut40"
    assert saved["record"] == f"../run/m-artifacts/{KEY.replace('/', '-')}/record-00ff"
    copied = (state_page(out).parent / summary[0]).resolve()
    assert copied.is_file() and copied.is_relative_to(out.resolve())
    assert (f"reproduce: plugpull replay ../run/m-artifacts/{KEY.replace('/', '-')}/states/reorder-cut40/minimised"
            in copied.read_text())


def test_the_report_is_one_directory_without_absolute_paths(run, tmp_path):
    out = tmp_path / "rep"
    report(run, out)
    assert broken_links(out) == []
    for path in out.rglob("*"):
        if path.suffix in (".html", ".json", ".txt"):
            assert str(tmp_path) not in path.read_text(), path
    moved = shutil.copytree(out, tmp_path / "elsewhere" / "copy")
    shutil.rmtree(out)
    assert broken_links(moved) == []


def test_report_main_says_where_the_report_went(run, tmp_path, capsys):
    assert report_main(run, tmp_path / "rep") == 0
    out = capsys.readouterr().out
    assert f"report  {tmp_path / 'rep'}/" in out and f"states  {tmp_path / 'rep' / 'states'}" in out


def test_the_headline_says_what_each_mode_did_from_the_data(run):
    cells, _ = read_cells(run)
    line = headline(cells)
    assert line.startswith("In the one table below, barrier left 0 of 10 crash states unsafe; ")
    assert "nobarrier took x0.25 barrier's time and left 6 of 9 crash states unsafe (2 data-loss, " in line
    assert "nocache took x2.0 barrier's time and left 2 of 10 crash states unsafe (2 data-loss)." in line
    safe = [c for c in cells if c.mode != "nobarrier"]
    assert "nobarrier" not in headline(safe)


def write_page(root, name, body):
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"<!DOCTYPE html><html><body>{body}</body></html>")


def test_the_link_checker_reports_each_broken_link(tmp_path):
    root = tmp_path / "rep"
    write_page(root, "report.html", '<a href="states/a.html#data-loss">1</a> <a href="states/a.html#nope">2</a>'
                                    '<a href="missing.html">3</a> <a href="/etc/passwd">4</a>'
                                    f'<a href="file://{tmp_path}/x">5</a> <a href="../outside.html">6</a>'
                                    '<img src="data:image/png;base64,AAAA"> <a href="https://example.org/">7</a>')
    write_page(root, "states/a.html", '<section id="data-loss"></section><a href="../report.html">back</a>')
    write_page(tmp_path, "outside.html", "")
    broken = broken_links(root)
    assert [b.split(": ")[1] for b in broken] == ["states/a.html#nope", "missing.html", "/etc/passwd",
                                                    f"file://{tmp_path}/x", "../outside.html"]
    assert broken[0].endswith("no element with id 'nope'") and broken[1].endswith("no such file")


def test_a_table_too_wide_for_the_window_is_shown_as_two_led_by_the_mode():
    from plugpull.report.layout import breakable, parts

    header = ["mode", *(f"sequential phase {i} op/s" for i in range(11)), "vs barrier", "states", "clean",
              "data-loss", "unmountable"]
    rows = [["nobarrier", *["14410"] * 11, "x0.93", "20", "18", "2", "0"]]
    assert parts(header, rows, 13) == [list(range(13)), [0, 13, 14, 15, 16]]
    assert parts(header[:4] + header[13:], [rows[0][:4] + rows[0][13:]], 4) == [list(range(8))]
    assert breakable("unmountable") == "unmount\u00adable" and breakable("fsync op/s") == "fsync op/s"
    assert breakable("flushes/kop") == "flushes/\u200bkop"


def test_the_headline_names_a_stack_row_as_its_table_does(tmp_path):
    results = tmp_path / "stacks.jsonl"
    raid5 = {"stack": "md-raid5", "lose_disk": "0"}
    results.write_text("\n".join([
        cell_line("a", "barrier", {"clean": 10}, seconds=10.0),
        cell_line("b", "barrier", {"clean": 94, "data-loss": 5, "unmountable": 1}, seconds=12.5, settings=raid5),
        cell_line("c", "barrier", {"clean": 100}, seconds=20.0, settings={"stack": "md-raid5-ppl", "lose_disk": "0"}),
    ]) + "\n")
    line = headline(read_cells(results)[0])
    assert line == ("In the one table below, barrier left 0 of 10 crash states unsafe; md-raid5 lose 0 barrier took "
                    "x1.2 barrier's time and left 6 of 100 crash states unsafe (5 data-loss, 1 unmountable); "
                    "md-raid5-ppl lose 0 barrier took x2.0 barrier's time and left 0 of 100 crash states unsafe.")
