"""grpolab drill: rubrics as data, the interview plan, scripted and interactive sessions."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grpolab.cli.main import main
from grpolab.drill import exercises, quiz
from grpolab.drill.interview import QUIZ_TOPICS, Step, parse_ticks, plan, run_interview
from grpolab.drill.progress import Progress
from grpolab.drill.rubrics import load, parse, sheet_wrong_answers

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
RUBRICS = load()
SRC = str(ROOT / "src")


@pytest.fixture(autouse=True)
def _no_real_home(tmp_path, monkeypatch):
    """No test may read or write the real ~/.local/share/grpolab."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-default"))
    monkeypatch.setenv("HOME", str(tmp_path / "home-default"))


# ------------------------------------------------------------------------------------------
# The rubric file
# ------------------------------------------------------------------------------------------
def _pages() -> set[str]:
    return {p.relative_to(BOOK).with_suffix("").as_posix() for p in BOOK.rglob("*.md")
            if "_build" not in p.parts}


def _section_anchors(doc: str) -> set[str]:
    """The ids Sphinx gives the sections of a page: each heading's docutils id and each
    MyST label, read from the source."""
    from docutils.nodes import make_id

    text = re.sub(r"^(```|~~~).*?^\1[ \t]*$", "", (BOOK / f"{doc}.md").read_text(encoding="utf-8"),
                  flags=re.M | re.S)  # a "# comment" in a code cell is no heading
    ids = {make_id(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}
    return ids | {make_id(lbl) for lbl in re.findall(r"^\(([\w-]+)\)=$", text, re.M)}


def test_every_section_anchor_of_the_drill_names_a_section():
    """Rubric points (docname#anchor) and quiz questions link to sections that exist."""
    refs = [p.chapter for i in RUBRICS.items.values() for p in i.rubric]
    refs += [q.page for seed in range(30) for q in quiz.generate_questions(12, seed)]
    anchored = {r for r in refs if "#" in r}
    assert len(anchored) >= 8
    for ref in sorted(anchored):
        doc, _, anchor = ref.partition("#")
        assert anchor in _section_anchors(doc), ref
    with pytest.raises(AssertionError):  # a planted bad anchor is caught
        assert "no-such-section" in _section_anchors("theory/03-zero-variance")


def test_every_chapter_link_resolves_to_a_book_page():
    pages = _pages()
    links = [(i.id, p.chapter.partition("#")[0]) for i in RUBRICS.items.values()
             for p in i.rubric]
    links += [("topics", c) for c in RUBRICS.topics.values()]
    missing = [(who, c) for who, c in links if c not in pages]
    assert missing == [], missing
    assert len(links) > 60


def test_every_item_has_the_parts_and_3_to_5_points():
    for item in RUBRICS.items.values():
        assert 3 <= len(item.rubric) <= 5, item.id
        assert item.question.strip() and item.trap.strip() and item.why_wrong.strip()
        # a 30-second answer: roughly 40-110 words
        assert 30 <= len(item.answer_30s.split()) <= 110, (item.id, len(item.answer_30s.split()))


def test_every_card_follow_up_and_common_wrong_answer_has_an_item():
    sources = " | ".join(i.source for i in RUBRICS.items.values())
    for n in (1, 2, 3, 4):
        assert f"Card 1, follow-up {n}" in sources
    for n in (1, 2, 3):
        assert f"Card 2, follow-up {n}" in sources
        assert f"Card 2, common wrong answer {n}" in sources
    kinds = {i.kind for i in RUBRICS.items.values()}
    assert kinds == {"follow-up", "wrong-answer"}


def test_every_item_is_asked_in_some_chain_and_chains_mix_numeric_items():
    used = {s for c in RUBRICS.chains for s in c.steps}
    assert set(RUBRICS.items) <= used
    for c in RUBRICS.chains:
        assert c.steps[0] in RUBRICS.items
        assert any(s.startswith(("exercise:", "quiz:")) for s in c.steps), c.id
    assert set(QUIZ_TOPICS) == set(quiz.KINDS)
    assert set(QUIZ_TOPICS.values()) <= set(RUBRICS.topics)


def test_rubric_claims_agree_with_the_fact_sheet():
    """The facts the corrected audit insists on are stated, and the folklore only as traps."""
    def said(i):
        return " ".join([i.question, i.answer_30s, *(p.point for p in i.rubric), i.why_wrong])

    text = {i.id: said(i) for i in RUBRICS.items.values()}
    stab = text["card1-stability"]
    assert "O(1/G²)" in stab and "oracle" in stab and "G/(G−1)" in stab
    assert "0.7" in text["wrong-deepseek-g"] and "inferen" in text["wrong-deepseek-g"]
    assert "64" in text["wrong-deepseek-g"] and "16" in text["wrong-deepseek-g"]
    assert "ddof = 1" in text["wrong-ddof"] and "√(G/(G−1))" in text["wrong-ddof"]
    assert "(G−1)/G" in text["wrong-baseline-unbiased"]
    assert "0.25" in text["wrong-variance-rule"]
    # The card's folklore appears in the trap only, never as the answer.
    for i in RUBRICS.items.values():
        assert "β ∝ 1/√G" not in i.answer_30s.replace("No paper states β ∝ 1/√G", "")
        assert "the 1/G term is the cost of estimating" not in said(i)
    assert "1/√G" in RUBRICS.items["card2-beta"].trap
    # The corrected audit: DeepSeekMath -> R1 is confounded, it is no evidence either way.
    assert "tests nothing" in text["card2-beta"] and "confounded" in text["card2-beta"]
    assert "contradict" not in text["card2-beta"]
    # A live group's advantage variance is the std convention: 1 (ddof = 1) or G/(G−1).
    assert "ddof = 0" in RUBRICS.items["card1-stability"].why_wrong


def test_five_wrong_answers_for_the_sheet():
    five = sheet_wrong_answers()
    assert len(five) == 5
    assert all(RUBRICS.items[w["id"]].kind in ("wrong-answer", "follow-up") for w in five)


def test_rubric_parser_names_what_is_wrong():
    doc = json.loads((ROOT / "src/grpolab/drill/rubrics.json").read_text(encoding="utf-8"))
    with pytest.raises(ValueError, match="not a grpolab-drill-rubrics"):
        parse({"format": "other"})
    bad = json.loads(json.dumps(doc))
    bad["items"][0]["rubric"] = bad["items"][0]["rubric"][:2]
    with pytest.raises(ValueError, match="3-5 points"):
        parse(bad)
    bad = json.loads(json.dumps(doc))
    bad["chains"][0]["steps"].append("quiz:no_such_kind")
    with pytest.raises(ValueError, match="no quiz kind"):
        parse(bad)
    bad = json.loads(json.dumps(doc))
    bad["chains"][0]["steps"].append("exercise:nope")
    with pytest.raises(ValueError, match="no numeric exercise"):
        parse(bad)


# ------------------------------------------------------------------------------------------
# Planning and scoring
# ------------------------------------------------------------------------------------------
def test_parse_ticks():
    assert parse_ticks("1 3", 4) == [1, 3]
    assert parse_ticks("3,1,3", 4) == [1, 3]
    assert parse_ticks("a", 3) == [1, 2, 3]
    assert parse_ticks("", 3) == [] and parse_ticks("none", 3) == []
    for bad in ("5", "x", "1.5", "-1"):
        with pytest.raises(ValueError, match="1 to 4"):
            parse_ticks(bad, 4)


def test_plan_opens_each_chain_and_favours_what_was_missed(tmp_path):
    fresh = Progress(tmp_path / "p.json")
    steps = plan(RUBRICS, fresh)
    assert [s.id for s in steps if s.opening] == [c.steps[0] for c in RUBRICS.chains]
    assert len(steps) == sum(len(c.steps) for c in RUBRICS.chains)

    # Session 1: everything answered well except one item of the last chain.
    prog = Progress(tmp_path / "p.json")
    prog.start_session()
    missed = RUBRICS.chains[-1].steps[2]
    for c in RUBRICS.chains:
        for s in c.steps:
            prog.record(s, s != missed, 0.0 if s == missed else 1.0)
    nxt = plan(RUBRICS, prog)
    assert nxt[0].chain == RUBRICS.chains[-1].id and nxt[0].opening
    assert [s.id for s in nxt if not s.opening] == [missed]
    # Well-known items come back after 2^(box-1) sessions: box 2 is due two sessions later.
    assert not prog.is_due(RUBRICS.chains[0].steps[1], prog.sessions + 1)
    assert prog.is_due(RUBRICS.chains[0].steps[1], prog.sessions + 2)
    assert prog.box(missed) == 1 and prog.box(RUBRICS.chains[0].steps[1]) == 2
    assert len(plan(RUBRICS, prog, review_all=True)) == len(steps)
    assert len(plan(RUBRICS, prog, max_items=1)) == 1
    assert len(plan(RUBRICS, prog, max_items=3, review_all=True)) == 3
    with pytest.raises(ValueError, match="unknown chain"):
        plan(RUBRICS, prog, chain="nope")


def test_leitner_boxes_climb_and_fall(tmp_path):
    prog = Progress(tmp_path / "p.json")
    for _ in range(7):
        prog.start_session()
        prog.record("x", True, 1.0)
    assert prog.box("x") == 5
    prog.record("x", False, 0.2)
    assert prog.box("x") == 1 and prog.was_missed("x")
    rec = prog.items["x"]
    assert rec["asked"] == 8 and rec["passed"] == 7


def _answers_for(steps) -> list[str]:
    """A scripted candidate: misses the first numeric item, gets the other numbers right, and
    ticks every rubric point on even-numbered items, only point 1 on odd ones."""
    import random

    rng = random.Random(11)  # the seed the sessions below run with: same quiz questions
    lines, numeric_seen = [], 0
    for k, s in enumerate(steps):
        if s.numeric:
            numeric_seen += 1
            if s.id.startswith("exercise:"):
                ex = exercises.get(s.id.split(":", 1)[1])
                right, wrong = str(ex.answer), str(ex.wrong_answer)
            else:
                q = quiz.KINDS[s.id.split(":", 1)[1]](rng)
                right, wrong = repr(q.answer), "12345"
            lines.append(wrong if numeric_seen == 1 else right)
        else:
            lines += [f"my answer to {s.id}", "a" if k % 2 == 0 else "1"]
    return lines


def test_run_interview_scores_topics_and_lists_pages(tmp_path):
    import io

    steps = plan(RUBRICS, Progress(None), chain="card1")
    prog = Progress(tmp_path / "p.json")
    out = io.StringIO()
    res = run_interview(steps, RUBRICS, iter(_answers_for(steps)), out, interactive=False,
                        progress=prog, seed=11)
    text = out.getvalue()
    assert res.asked == len(steps) and not res.interrupted and not res.ended_early
    assert "Rubric: which of these points" in text and "Trap answer" in text
    assert "RIGHT" in text and "WRONG" in text
    summary = "\n".join(res.lines())
    assert "score by topic:" in summary and "pages to reread:" in summary
    for page in res.reread:
        assert (BOOK / f"{page.partition('#')[0]}.md").is_file()
    assert ".md" not in summary.split("pages to reread:", 1)[1]
    saved = Progress.load(tmp_path / "p.json")
    assert set(saved.items) == {s.id for s in steps} and saved.sessions == 1


# ------------------------------------------------------------------------------------------
# The command, scripted
# ------------------------------------------------------------------------------------------
def test_drill_answers_file_end_to_end(tmp_path, capsys):
    steps = plan(RUBRICS, Progress(None), chain="advantages")
    answers = tmp_path / "answers.txt"
    answers.write_text("# scripted mock interview\n" + "\n".join(_answers_for(steps)) + "\n")
    progress = tmp_path / "progress.json"
    rc = main(["drill", "--chain", "advantages", "--seed", "11", "--answers", str(answers),
               "--progress", str(progress)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "opening question" in out and "follow-up" in out and "numbers" in out
    assert "session over" in out and "score by topic:" in out
    topics = re.findall(r"^  ([a-z-]+) +[\d.]+/[\d.]+ \(\d+%\)$", out, re.M)
    assert len(topics) >= 3 and set(topics) <= set(RUBRICS.topics)
    assert re.search(r"^overall: [\d.]+/[\d.]+ \(\d+%\) over \d+ item\(s\)$", out, re.M)
    doc = json.loads(progress.read_text())
    assert doc["format"] == "grpolab-drill-progress" and doc["sessions"] == 1

    # The second session favours what was missed: only the missed items (plus the openers).
    missed = {k for k, v in doc["items"].items() if not v["last_passed"]}
    assert missed
    answers.write_text("")
    main(["drill", "--seed", "11", "--answers", str(answers), "--progress", str(progress)])
    out2 = capsys.readouterr().out
    assert "(end of input)" in out2
    first = plan(RUBRICS, Progress.load(progress))
    assert first[0].chain == "advantages"
    assert {s.id for s in first if s.chain == "advantages" and not s.opening} == missed - {
        RUBRICS.chain("advantages").steps[0]}


def test_drill_uses_xdg_data_home(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    answers = tmp_path / "a.txt"
    answers.write_text("an answer\n1 2\n")
    assert main(["drill", "--chain", "card2", "--n", "1", "--answers", str(answers)]) == 0
    assert (tmp_path / "xdg" / "grpolab" / "drill-progress.json").is_file()
    capsys.readouterr()


@pytest.mark.parametrize("content,needle", [
    (b"{not json", "is not valid JSON"),
    (b'{"format": "something-else", "items": {}}', "is not a grpolab drill progress file"),
    (b"[1, 2, 3]", "is not a grpolab drill progress file"),
    (b'{"format": "grpolab-drill-progress", "version": 99, "sessions": 0, "items": {}}',
     "version 99"),
    (b'{"format": "grpolab-drill-progress", "version": 1, "sessions": 0, "items": '
     b'{"x": {"box": 9}}}', "no valid box"),
    (b"\xff\xfe\x00garbage", "not UTF-8"),
])
def test_corrupt_or_foreign_progress_is_a_one_line_error_and_untouched(tmp_path, capsys,
                                                                     content, needle):
    path = tmp_path / "progress.json"
    path.write_bytes(content)
    answers = tmp_path / "a.txt"
    answers.write_text("x\n1\n")
    rc = main(["drill", "--answers", str(answers), "--progress", str(path)])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("error: ") and needle in err, err
    assert "Traceback" not in err
    assert path.read_bytes() == content
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".progress")] == []


def test_drill_bad_arguments_are_one_line_errors(tmp_path, capsys):
    assert main(["drill", "--chain", "nope", "--no-progress", "--answers", os.devnull]) == 2
    assert "is not a chain" in capsys.readouterr().err
    assert main(["drill", "--n", "0", "--no-progress"]) == 2
    assert "--n must be" in capsys.readouterr().err
    assert main(["drill", "--answers", str(tmp_path / "missing.txt"), "--no-progress"]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert main(["drill", "--list"]) == 0
    assert "card1" in capsys.readouterr().out


# ------------------------------------------------------------------------------------------
# Processes: kill -9 mid-session, and Ctrl-C on a pseudo-terminal
# ------------------------------------------------------------------------------------------
def _env(tmp_path) -> dict:
    return dict(os.environ, PYTHONPATH=SRC, XDG_DATA_HOME=str(tmp_path / "xdg"),
                HOME=str(tmp_path / "home"), PYTHONUNBUFFERED="1")


def _sigint_default():
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
def test_progress_file_survives_kill_9_mid_session(tmp_path):
    """Kill the drill at several moments while it answers and saves; the file always loads."""
    path = tmp_path / "progress.json"
    steps = plan(RUBRICS, Progress(None), review_all=True)
    # Half of one session's answers, stdin left open: the drill saves after each answered
    # item and then waits for more input, so the kill always lands mid-session.
    one = "\n".join(_answers_for(steps)) + "\n"
    script = one[: len(one) // 2]
    loaded = []
    for delay in (0.0, 0.05, 0.15, 0.3):
        proc = subprocess.Popen(
            [sys.executable, "-m", "grpolab", "drill", "--all", "--seed", "11",
             "--progress", str(path), "--answers", "-"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=_env(tmp_path), cwd=tmp_path)
        # Wait until this session has saved at least once, then feed answers and kill -9.
        before = Progress.load(path).sessions if path.exists() else 0
        proc.stdin.write(script.encode())
        proc.stdin.flush()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if path.exists() and Progress.load(path).sessions > before:
                break
            time.sleep(0.01)
        time.sleep(delay)
        proc.kill()
        proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        prog = Progress.load(path)  # raises if the file were torn
        assert prog.sessions == before + 1 and prog.items
        loaded.append(len(prog.items))
    # A kill during a save leaves at most a stray temporary file beside it, never a torn file.
    assert all(p.name.startswith(".progress.json.") for p in tmp_path.iterdir()
               if p.suffix == ".tmp")
    assert json.loads(path.read_text())["format"] == "grpolab-drill-progress"
    assert loaded and min(loaded) >= 1


@pytest.mark.slow
def test_interactive_drill_on_a_pty_stops_cleanly_on_sigint(tmp_path):
    import pty
    import select

    master, slave = pty.openpty()
    path = tmp_path / "progress.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "grpolab", "drill", "--chain", "card1", "--seed", "3",
         "--progress", str(path)],
        stdin=slave, stdout=slave, stderr=slave, env=_env(tmp_path), cwd=tmp_path,
        preexec_fn=_sigint_default, close_fds=True)
    os.close(slave)
    buf = b""

    def read_until(pattern: bytes, timeout: float = 60) -> bytes:
        nonlocal buf
        end = time.monotonic() + timeout
        while pattern not in buf:
            left = end - time.monotonic()
            assert left > 0, f"timed out waiting for {pattern!r}; got {buf[-800:]!r}"
            r, _, _ = select.select([master], [], [], left)
            if r:
                try:
                    chunk = os.read(master, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                buf += chunk
        return buf

    try:
        read_until(b"(q = quit, Ctrl-C = stop")
        read_until(b"your answer> ")
        os.write(master, b"G sets the baseline noise and the zero-variance rate\r")
        read_until(b"points hit")
        os.write(master, b"1 2\r")
        read_until(b"answer> ", timeout=60)  # the numeric follow-up
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=60)
        try:
            while True:
                r, _, _ = select.select([master], [], [], 0.5)
                if not r:
                    break
                chunk = os.read(master, 4096)
                if not chunk:
                    break
                buf += chunk
        except OSError:
            pass
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    text = buf.decode("utf-8", "replace")
    assert rc == 130, text[-1500:]
    assert "interrupted: partial score" in text
    assert "choosing-g" in text and "overall: 2/4" in text
    assert "Traceback" not in text
    prog = Progress.load(path)
    assert list(prog.items) == ["card1-open"] and prog.box("card1-open") == 1


def test_step_numeric_flag():
    assert Step("c", "quiz:zero_variance").numeric and Step("c", "exercise:x").numeric
    assert not Step("c", "card1-open").numeric


# ------------------------------------------------------------------------------------------
# The items a candidate asked for, the answers page and the must-know sheet (issue 35)
# ------------------------------------------------------------------------------------------
def test_new_items_cover_the_reader_tests_gaps():
    items = RUBRICS.items

    def said(i):
        return " ".join([i.question, i.answer_30s, *(p.point for p in i.rubric), i.why_wrong])

    bias = said(items["followup-difficulty-bias"])
    assert "1/√(p(1−p))" in bias and "scale_rewards" in bias and "counter-view" in bias
    assert "2508.13755" in bias  # the counter-view is cited, not asserted
    assert "exp" in said(items["followup-gspo"]) and "2507.18071" in said(items["followup-gspo"])
    assert "(U−1)/2" in said(items["followup-num-iterations"])
    trl = said(items["followup-trl-batch"])
    assert "PR #2776" in trl and "16 prompts" in trl and "count prompts" in trl
    rec = said(items["followup-what-recipes-used"])
    for fact in ("Skywork-OR1", "DeepScaleR", "PPO", "Qwen3", "Kimi k1.5", "do not disclose"):
        assert fact in rec, fact


def test_answers_page_is_built_from_the_drills_file():
    from grpolab.drill import answers_page

    page = (BOOK / "interview" / "05-thirty-second-answers.md").read_text(encoding="utf-8")
    assert "answers_html()" in page and ":tags: [remove-input]" in page
    html = answers_page.answers_html(BOOK)
    for item in RUBRICS.items.values():  # every question, its 30-second answer and its trap
        for text in (item.question, item.answer_30s, item.trap):
            assert answers_page.html.escape(text) in html, item.id
    assert html.count('class="grpolab-answer"') == len(RUBRICS.items)
    assert 'href="../theory/06-normalization.html#dr-grpo-s-difficulty-bias"' in html
    # a stale section link fails the build rather than pointing nowhere
    with pytest.raises(ValueError, match="no section"):
        answers_page.section_title(BOOK, "theory/03-zero-variance#no-such-section")


def test_must_know_sheet_is_current_and_its_numbers_are_theorys():
    from grpolab import theory
    from grpolab.drill import must_know

    committed = (ROOT / must_know.PAGE_PATH).read_text(encoding="utf-8")
    assert committed == must_know.render_page(), (
        "stale: run `python -m grpolab.drill.must_know --write`")
    assert 8 <= len(must_know.MUST_KNOW) <= 12
    assert committed.count("\n$$\n") == 2 * len(must_know.MUST_KNOW)
    examples = must_know.worked_examples()
    # independent recomputations of three of the worked numbers
    assert "0.6562" in examples[2] and 0.9 ** 4 + 0.1 ** 4 == pytest.approx(0.6562, abs=1e-4)
    assert "1.5" in examples[7] and 0.75 / (4 / 3 * 0.1875) ** 0.5 == pytest.approx(1.5)
    assert "10,055" in examples[6]
    assert theory.rloo_scale_factor(8) == pytest.approx(7 / 8) and "0.875" in examples[8]


def _recipe_rows(text: str) -> list[list[str]]:
    """The rows of the sources appendix's recipes table (the first table of its section)."""
    section = text.split("## The G that published recipes used", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in section.splitlines() if ln.startswith("| ") and "---" not in ln]
    return [[c.strip() for c in ln.strip("|").split(" | ")] for ln in rows[1:]]


def _untagged(rows: list[list[str]]) -> list[str]:
    """Rows whose G is neither tagged [P]/[A]/[S] by its source nor 'not disclosed'."""
    return [r[0] for r in rows
            if not re.search(r"\[(P|A|S)[\],]", r[0]) and r[1] != "not disclosed"]


def test_recipes_table_lists_ten_recipes_each_tagged_or_not_disclosed():
    rows = _recipe_rows((BOOK / "appendix" / "90-sources.md").read_text(encoding="utf-8"))
    assert len(rows) >= 10
    assert _untagged(rows) == []
    names = " ".join(r[0] for r in rows)
    for recipe in ("DeepSeekMath", "Skywork-OR1", "DeepScaleR", "Qwen3", "Kimi k1.5", "TRL"):
        assert recipe in names, recipe
    assert sum(r[1] == "not disclosed" for r in rows) >= 2
    # the check can fail: a row without a tag is named
    assert _untagged([["Some recipe {cite:p}`x`", "8", "no tag"]]) == ["Some recipe {cite:p}`x`"]
