"""grpolab.drill.quiz and `grpolab quiz`: every answer against an independent computation.

The independent computations below use exact rational arithmetic (fractions.Fraction),
brute-force enumeration of reward vectors, or the statistics module on explicit
reward vectors, never grpolab.theory.
"""

from __future__ import annotations

import itertools
import math
import os
import signal
import statistics
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from grpolab.cli.main import main
from grpolab.drill import quiz
from grpolab.drill.quiz import (
    KINDS,
    Question,
    generate_questions,
    is_correct,
    parse_answer,
    run_session,
)
from grpolab.drill.terminal import plain


def _enumerated_zero_variance(p: float, G: int) -> float:
    """Sum the probabilities of all 2^G reward vectors that are constant (G <= 16)."""
    p = Fraction(p)
    total = Fraction(0)
    for rewards in itertools.product((0, 1), repeat=G):
        if len(set(rewards)) == 1:
            k = sum(rewards)
            total += p ** k * (1 - p) ** (G - k)
    return float(total)


def _exact_informative(p: float, G: int) -> Fraction:
    p = Fraction(p)
    return 1 - p ** G - (1 - p) ** G


def independent_answer(q: Question) -> float:
    """The answer to ``q`` computed without grpolab.theory."""
    a = q.params
    if q.kind == "zero_variance":
        return _enumerated_zero_variance(a["p"], a["G"])
    if q.kind == "any_success":
        return float(1 - (1 - Fraction(a["p"])) ** a["G"])
    if q.kind == "min_group_for_success":
        p, t = Fraction(a["p"]), Fraction(a["target"])
        G = math.ceil(math.log(1 - a["target"]) / math.log(1 - a["p"]))
        # Exact check that G is the smallest group size reaching the target.
        assert 1 - (1 - p) ** G >= t and (G == 1 or 1 - (1 - p) ** (G - 1) < t)
        return G
    if q.kind == "baseline_variance":
        # Var of k/G with k ~ Binomial(G, p), from the pmf.
        p, G = Fraction(a["p"]), a["G"]
        pmf = [math.comb(G, k) * p ** k * (1 - p) ** (G - k) for k in range(G + 1)]
        mean = sum(Fraction(k, G) * w for k, w in enumerate(pmf))
        return float(sum((Fraction(k, G) - mean) ** 2 * w for k, w in enumerate(pmf)))
    if q.kind == "binary_advantage":
        k, G = a["k"], a["G"]
        rewards = [1.0] * k + [0.0] * (G - k)
        sd = statistics.stdev(rewards) if a["ddof"] == 1 else statistics.pstdev(rewards)
        r = 1.0 if a["correct"] else 0.0
        return (r - statistics.fmean(rewards)) / sd
    if q.kind == "dynamic_sampling":
        return float(a["G"] * a["B"] / _exact_informative(a["p"], a["G"]))
    if q.kind == "budget_prompts":
        return a["budget"] // a["G"]
    if q.kind == "budget_informative":
        return float((a["budget"] // a["G"]) * _exact_informative(a["p"], a["G"]))
    if q.kind == "rloo_factor":
        G = a["G"]
        rewards = [float(i * i % 7) for i in range(G)]  # any non-constant group
        i = max(range(G), key=lambda j: abs(rewards[j] - statistics.fmean(rewards)))
        loo = statistics.fmean(rewards[:i] + rewards[i + 1:])
        return (rewards[i] - statistics.fmean(rewards)) / (rewards[i] - loo)
    if q.kind == "ddof_ratio":
        rewards = [float(i % 3) for i in range(a["G"])] if a["G"] > 2 else [0.0, 1.0]
        return statistics.stdev(rewards) / statistics.pstdev(rewards)
    if q.kind == "uniform_difficulty":
        # Midpoint rule on a fine grid over p in (0, 1): the average over prompts.
        G, n = a["G"], 200_000
        p = (np.arange(n) + 0.5) / n
        return float(np.mean(p ** G + (1 - p) ** G))
    if q.kind == "concept":
        return float("nan")  # checked by letter: test_conceptual_questions_check_by_letter
    raise AssertionError(f"no independent computation for kind {q.kind}")


def _right(q: Question) -> str:
    """A right answer as a candidate types it: the letter or the number."""
    if q.exercise:
        from grpolab.drill import exercises

        return str(exercises.get(q.exercise).answer)
    return repr(q.answer)


QUESTIONS = [q for seed in range(40) for q in generate_questions(10, seed)]


def test_every_kind_is_covered_by_the_sample():
    assert {q.kind for q in QUESTIONS} == set(KINDS)


NUMERIC = [q for q in QUESTIONS if not q.exercise]  # the rest: test_conceptual_questions_...


@pytest.mark.parametrize("q", NUMERIC, ids=[f"{i}-{q.kind}" for i, q in enumerate(NUMERIC)])
def test_answer_matches_independent_computation(q):
    truth = independent_answer(q)
    if q.integer:
        assert q.answer == truth
    elif q.kind == "uniform_difficulty":  # numerical integration: accurate to ~1e-8
        assert q.answer == pytest.approx(truth, rel=1e-6, abs=1e-9)
    else:
        assert q.answer == pytest.approx(truth, rel=1e-9, abs=1e-12)
    assert is_correct(q, truth)
    # A 10% error is rejected (tolerances are at most 1% or a small absolute slack).
    if abs(truth) > 0.05:
        assert not is_correct(q, truth * 1.1 + (0 if not q.integer else 1))


def test_same_seed_same_questions_and_different_seed_differs():
    a, b, c = (generate_questions(8, s) for s in (3, 3, 4))
    assert [q.text for q in a] == [q.text for q in b]
    assert [q.text for q in a] != [q.text for q in c]


def test_kinds_filter_and_bad_arguments():
    assert {q.kind for q in generate_questions(6, 0, ["ddof_ratio"])} == {"ddof_ratio"}
    with pytest.raises(ValueError, match="unknown question kind"):
        generate_questions(3, 0, ["nope"])
    with pytest.raises(ValueError, match="n must be"):
        generate_questions(0, 0)


@pytest.mark.parametrize("text,value", [("0.25", 0.25), ("25%", 0.25), ("1/4", 0.25),
                                        (" 2.5e-3 ", 0.0025), ("-1.5", -1.5), ("1,024", 1024),
                                        ("12,345.5", 12345.5)])
def test_parse_answer_accepts_common_formats(text, value):
    assert parse_answer(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["abc", "", "nan", "inf", "1/0", "0.2.3", "0,2482", "2,5",
                                  "0,248", "1,02"])
def test_parse_answer_rejects_garbage(text):
    with pytest.raises(ValueError, match="decimal point" if "," in text else ""):
        parse_answer(text)


def _answers(questions, wrong=()):
    return [("oops" if i in wrong else _right(q)) for i, q in enumerate(questions)]


def test_session_scores_and_counts_non_numeric_as_wrong(capsys):
    qs = generate_questions(4, 1)
    lines = _answers(qs, wrong={2})
    res = run_session(qs, iter(lines), sys.stdout, interactive=False)
    out = capsys.readouterr().out
    assert (res.asked, res.correct, res.interrupted) == (4, 3, False)
    assert "not a number: 'oops'" in out and "counted as wrong" in out
    assert out.count("why: ") == 4


def test_session_interactive_reprompts_then_quits(capsys):
    qs = generate_questions(3, 2)
    res = run_session(qs, iter(["what?", _right(qs[0]), "q"]), sys.stdout,
                      interactive=True)
    out = capsys.readouterr().out
    assert "try again" in out
    assert (res.asked, res.correct) == (1, 1)


def test_session_missing_answers_count_as_unanswered(capsys):
    qs = generate_questions(3, 5)
    res = run_session(qs, iter([_right(qs[0])]), sys.stdout, interactive=False)
    assert (res.asked, res.correct) == (3, 1)
    assert capsys.readouterr().out.count("no answer given") == 2


def test_session_keyboard_interrupt_keeps_the_score(capsys):
    qs = generate_questions(3, 0)

    def answers():
        yield _right(qs[0])
        raise KeyboardInterrupt

    res = run_session(qs, answers(), sys.stdout, interactive=True)
    assert res.interrupted and (res.asked, res.correct) == (1, 1)


def _grpolab() -> list[str]:
    """The installed ``grpolab`` console script next to this Python, else ``python -m``."""
    script = Path(sys.executable).with_name("grpolab")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "grpolab"]


def _cli(args, stdin_text):
    return subprocess.run([*_grpolab(), "quiz", *args],
                          input=stdin_text, capture_output=True, text=True, timeout=60)


def test_cli_non_interactive_run_on_stdin():
    qs = generate_questions(5, 0)
    lines = _answers(qs, wrong={1})
    proc = _cli(["--n", "5", "--seed", "0"], "\n".join(lines) + "\n")
    assert proc.returncode == 0, proc.stderr
    assert "final score: 4/5 (80%)" in proc.stdout
    for q in qs:
        assert plain(q.text) in proc.stdout
    assert proc.stderr == ""


def test_cli_answers_file_with_comments(tmp_path):
    qs = generate_questions(3, 9)
    f = tmp_path / "answers.txt"
    f.write_text("# my answers\n" + "\n".join(repr(q.answer) for q in qs) + "\n")
    proc = _cli(["--n", "3", "--seed", "9", "--answers", str(f)], "")
    assert proc.returncode == 0 and "final score: 3/3 (100%)" in proc.stdout


@pytest.mark.parametrize("args", [["--n", "0"], ["--n", "x"], ["--kind", "nope"],
                                  ["--answers", "/no/such/file"], ["--bogus"]])
def test_cli_bad_options_one_line_exit_2(args):
    proc = _cli(args, "")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in proc.stderr


def test_cli_ctrl_c_prints_score_and_exits_130(monkeypatch, capsys):
    qs = generate_questions(3, 0)
    replies = iter([_right(qs[0])])

    def fake_input(prompt=""):
        try:
            return next(replies)
        except StopIteration:
            raise KeyboardInterrupt from None

    monkeypatch.setattr("builtins.input", fake_input)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    assert main(["quiz", "--n", "3", "--seed", "0"]) == 130
    assert "interrupted. score: 1/1 (100%)" in capsys.readouterr().out


def test_list_kinds(capsys):
    assert main(["quiz", "--list-kinds"]) == 0
    out = capsys.readouterr().out
    assert all(k in out for k in quiz.KINDS)
    assert "$" not in out and "\\" not in out


@pytest.mark.skipif(os.name != "posix", reason="needs a pseudo-terminal")
def test_cli_real_ctrl_c_on_a_terminal():
    """Run `grpolab quiz` on a pty (so it is interactive), answer once, then send SIGINT."""
    import pty
    import select

    qs = generate_questions(3, 0)
    master, slave = pty.openpty()
    # A suite started in the background from a non-interactive shell (nohup ... &) inherits
    # SIGINT as ignored, and so would the child: restore the default so Ctrl-C reaches it.
    proc = subprocess.Popen([*_grpolab(), "quiz", "--n", "3", "--seed", "0"], stdin=slave,
                            stdout=slave, stderr=slave, close_fds=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    os.close(slave)
    out = b""

    def read_until(token: bytes, timeout: float = 30.0) -> None:
        nonlocal out
        end = time.monotonic() + timeout
        while token not in out and time.monotonic() < end:
            ready, _, _ = select.select([master], [], [], 0.5)  # never block forever
            if not ready:
                continue
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        assert token in out, out.decode(errors="replace")

    try:
        read_until(b"answer> ")
        os.write(master, (_right(qs[0]) + "\n").encode())
        read_until(b"Question 2/3")
        read_until(b"answer> ")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 130
        read_until(b"interrupted. score: 1/1 (100%)")
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)


# ------------------------------------------------------------------------------------------
# Slips, counts, conceptual questions, plain terminal text
# ------------------------------------------------------------------------------------------
def _session(questions, answers) -> str:
    import io

    out = io.StringIO()
    run_session(questions, iter(answers), out, interactive=False)
    return out.getvalue()


def test_quiz_names_the_exercise_checkers_slips():
    """p = 0.5, G = 4: 0.0625 is the all-fail term alone; 1.732 is a ddof = 0 advantage."""
    from grpolab.drill import exercises, slips

    zv = next(q for seed in range(200) for q in generate_questions(1, seed, ["zero_variance"])
              if q.params == {"p": 0.5, "G": 4})
    adv = next(q for seed in range(400) for q in generate_questions(1, seed, ["binary_advantage"])
               if q.params == {"k": 1, "G": 4, "ddof": 1, "correct": True})
    out = _session([zv, adv], ["0.0625", "1.732"])
    assert "slip: 0.0625 is only the all-fail term" in out
    assert "slip: 1.732 uses np.std (ddof = 0)" in out
    # The same sentence as the exercise checker's (one slip table, not a copy).
    ex = exercises.check("binary-advantage-g4-k1", 1.732).message
    assert ex in out and ex == slips.advantage(1, 4, 1, True)[0].message
    assert "slip: -1.5 has the wrong sign" in _session([adv], ["-1.5"])
    # A wrong answer that is no usual slip is not called one.
    assert "slip:" not in _session([zv], ["0.3"])
    # The right answer is never called a slip, even where a slip value would be close.
    assert "RIGHT" in _session([zv], ["0.125"])


def test_counts_accept_rounding_to_a_whole_number():
    q = next(q for seed in range(300) for q in generate_questions(1, seed, ["budget_informative"])
             if q.params == {"budget": 256, "G": 8, "p": 0.1})
    assert q.answer == pytest.approx(32 * (1 - 0.1 ** 8 - 0.9 ** 8))  # 18.22
    assert is_correct(q, 18) and is_correct(q, 18.2)
    assert not is_correct(q, 17) and not is_correct(q, 19) and not is_correct(q, 18.6)
    planted = Question("budget_informative", "t", 24.32, "e", rel_tol=0.01, abs_tol=0.05,
                       count=True)
    assert is_correct(planted, 24) and not is_correct(planted, 25)
    # A probability is not a count: rounding 0.2482 to 0 is wrong.
    zv = next(q for seed in range(200) for q in generate_questions(1, seed, ["zero_variance"])
              if q.params == {"p": 0.3, "G": 4})
    assert not zv.count and not is_correct(zv, round(zv.answer))


def test_conceptual_questions_check_by_letter():
    from grpolab.drill import exercises

    seen = set()
    for seed in range(60):
        q = generate_questions(1, seed, ["concept"])[0]
        ex = exercises.get(q.exercise)
        seen.add(ex.id)
        assert ex.kind == "conceptual" and all(f"({k})" in q.text for k in ex.choices)
        wrong = next(k for k in ex.choices if k != ex.answer)
        out = _session([q, q], [ex.answer, wrong])
        assert out.count("RIGHT.") == 1 and out.count("WRONG.") == 1
        assert "this option: " in out
    assert len(seen) >= 5


def test_terminal_text_has_no_latex():
    """Every exercise text and quiz question, rendered for the terminal, has no $ or backslash."""
    from grpolab.drill import exercises

    texts = [t for e in exercises.list_exercises()
             for t in (e.question, e.solution, *(e.choices or {}).values())]
    texts += [t for q in QUESTIONS for t in (q.text, q.explanation)]
    assert any("$" in t or "\\" in t for t in texts)  # there is LaTeX to render
    for t in texts:
        assert "$" not in plain(t) and "\\" not in plain(t), t
    assert plain(r"$16 \times 628.5 \approx 10{,}055$") == "16 × 628.5 ≈ 10,055"
    assert plain(r"$\sqrt{\frac{4}{3}}$") == "√(4/3)"


def test_quiz_and_drill_output_has_no_latex_and_names_built_pages(tmp_path):
    """Run both commands non-interactively (--answers FILE): no $ or backslash anywhere in
    what they print, and "pages to reread" names built .html pages, not .md sources."""
    n = 2 * len(KINDS)
    qs = generate_questions(n, 5)
    answers = tmp_path / "quiz.txt"
    answers.write_text("\n".join("1" if i % 2 else _right(q) for i, q in enumerate(qs)) + "\n")
    proc = subprocess.run([*_grpolab(), "quiz", "--n", str(n), "--seed", "5", "--answers",
                           str(answers)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert {q.kind for q in qs} == set(KINDS)
    assert "$" not in proc.stdout and "\\" not in proc.stdout

    drill_answers = tmp_path / "drill.txt"
    # wrong numbers and no rubric points, so that pages to reread are listed
    drill_answers.write_text("\n".join(["my answer", "", "0.2401"] * 40) + "\n")
    proc = subprocess.run([*_grpolab(), "drill", "--all", "--no-progress", "--seed", "3",
                           "--answers", str(drill_answers)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "Interviewer:" in out and "numbers" in out
    assert "$" not in out and "\\" not in out
    reread = out.split("pages to reread:", 1)[1]
    assert ".md" not in reread and "book/_build/html/" in reread and ".html#" in reread
