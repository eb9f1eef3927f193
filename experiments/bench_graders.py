"""Benchmark: the code grader against Chen et al. 2025's released MBPP+ correctness labels.

Chen et al. (seed 002) release, per judge and evaluatee, each MBPP+ problem with both models' answers and
whether each answer is correct (`assistent_{1,2}_is_correct`). Each problem states its tests ("Your code
should satisfy these tests:" then assert lines). This bench runs every distinct (model, problem) answer
against those tests in the sandbox (`interp.grading`) and prints the agreement with the released labels,
one `name: value` per line. The release is not fetched at run time: pass its folder with --data (a clone of
github.com/wlchen0206/llm-sp, or any folder holding its `sp/mbpp-plus/<family>/<judge>_<evaluatee>_eval.jsonl`).

Usage: python experiments/bench_graders.py --data PATH/llm-sp [--workers 2] [--limit N] [--examples K]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from interp.grading import GradeItem, Limits, grade_items, isolation  # noqa: E402

TESTS_MARKER = "Your code should satisfy these tests:"
FILE_NAME = re.compile(r"(?P<judge>.+?)_(?P<evaluatee>.+)_eval\.jsonl$")


def stated_tests(problem: str) -> list[str]:
    """The assert lines a problem states after its marker (empty when it states none)."""
    _, marker, tail = problem.partition(TESTS_MARKER)
    return [line for line in tail.strip().splitlines() if line.strip()] if marker else []


def released_answers(data: Path) -> dict[tuple[str, str], tuple[str, list[str], bool]]:
    """(model, problem id) -> (answer, stated tests, released label) over every MBPP+ file of the release; a
    model's answer appears in every file it is judged in, always the same."""
    files = sorted((data / "sp" / "mbpp-plus").glob("*/*_eval.jsonl"))
    if not files:
        raise SystemExit(
            f"error: no sp/mbpp-plus/*/*_eval.jsonl under {data} (clone github.com/wlchen0206/llm-sp there)"
        )
    answers: dict[tuple[str, str], tuple[str, list[str], bool]] = {}
    for path in files:
        match = FILE_NAME.match(path.name)
        if match is None:
            continue
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                for model, slot in ((match["judge"], "1"), (match["evaluatee"], "2")):
                    key = (model, str(row["unique_id"]))
                    answers[key] = (
                        row[f"assistent_{slot}_answer"],
                        stated_tests(row["problem"]),
                        bool(row[f"assistent_{slot}_is_correct"]),
                    )
    return answers


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, required=True, help="the folder of the llm-sp release (holds sp/mbpp-plus/)"
    )
    parser.add_argument("--workers", type=int, default=2, help="answers run at once")
    parser.add_argument("--limit", type=int, default=0, help="grade only the first N problems of each model (0: all)")
    parser.add_argument("--examples", type=int, default=0, help="print K disagreements of each kind on stderr")
    args = parser.parse_args()

    answers = released_answers(args.data)
    if args.limit:
        kept: Counter[str] = Counter()
        chosen = {}
        for (model, problem), value in sorted(
            answers.items(), key=lambda kv: (kv[0][0], int(kv[0][1]) if kv[0][1].isdigit() else kv[0][1])
        ):
            if kept[model] < args.limit:
                kept[model] += 1
                chosen[(model, problem)] = value
        answers = chosen
    keys = sorted(answers)
    items = [
        GradeItem(f"{model}/{problem}", answers[(model, problem)][0], tuple(answers[(model, problem)][1]))
        for model, problem in keys
    ]
    start = time.perf_counter()
    grades = list(grade_items(items, "code", limits=Limits(cpu_s=5, wall_s=15.0), workers=args.workers))
    seconds = time.perf_counter() - start

    labels = [answers[key][2] for key in keys]
    agree = sum(g.correct == label for g, label in zip(grades, labels, strict=False))
    passed_but_labelled_wrong = [
        (g, item) for g, item, label in zip(grades, items, labels, strict=False) if g.correct and not label
    ]
    failed_but_labelled_right = [
        (g, item) for g, item, label in zip(grades, items, labels, strict=False) if not g.correct and label
    ]
    no_tests = sum(1 for item in items if not item.target)
    print(f"mbpp_items: {len(items)}")
    print(f"mbpp_agreement: {agree / len(items):.4f}")
    print(f"mbpp_released_correct: {sum(labels) / len(items):.4f}")
    print(f"mbpp_graded_correct: {sum(g.correct for g in grades) / len(items):.4f}")
    print(f"mbpp_passed_but_released_incorrect: {len(passed_but_labelled_wrong)}")
    print(f"mbpp_failed_but_released_correct: {len(failed_but_labelled_right)}")
    print(f"mbpp_items_without_stated_tests: {no_tests}")
    for reason, count in Counter(g.reason.split(":")[0] for g, _ in failed_but_labelled_right).most_common(5):
        print(f"mbpp_failed_but_released_correct_reason[{reason}]: {count}")
    print(f"sandbox: {isolation()}")
    print(f"seconds: {seconds:.1f}")
    for title, cases in (
        ("passed the stated tests, released as incorrect", passed_but_labelled_wrong),
        ("failed, released as correct", failed_but_labelled_right),
    ):
        for grade, item in cases[: args.examples]:
            print(
                f"--- {title}: {item.id} ({grade.reason})\n{item.answer}\n--- tests\n" + "\n".join(item.target),
                file=sys.stderr,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
