"""Verifiable graders (Chen et al. 2025): math answers, multiple-choice letters, and code run against its tests
in a sandbox (`interp.grading.sandbox`). Pure functions but the sandbox's subprocess; every failure of an
answer is a `Grade` with `correct = False` and a reason, never an exception."""

from interp.grading.choice import choice_equal, extract_choice
from interp.grading.code_tests import code_passes
from interp.grading.grade import GradeItem, grade_item, grade_items, read_items
from interp.grading.math_answer import final_answer, math_equal, normalise
from interp.grading.result import GRADE_KINDS, Grade
from interp.grading.sandbox import Execution, Limits, isolation, run_python, run_tests

__all__ = [
    "GRADE_KINDS",
    "Execution",
    "Grade",
    "GradeItem",
    "Limits",
    "choice_equal",
    "code_passes",
    "extract_choice",
    "final_answer",
    "grade_item",
    "grade_items",
    "isolation",
    "math_equal",
    "normalise",
    "read_items",
    "run_python",
    "run_tests",
]
