"""The organisms' status as one markdown table, generated from the shipped adapters' manifests (their held-out
figures on the test split and the unseen file), so the README cannot drift from what ships.

    python experiments/organisms/status_table.py                              # prints the table
    python experiments/organisms/status_table.py --write README.md docs/organisms.md   # updates them

Each of those files holds the table between `<!-- organisms-status:start -->` and `<!-- organisms-status:end -->`;
tests/test_docs.py checks that it is the script's output.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from interp.core.adapters import read_manifest, shipped_adapters

START, END = "<!-- organisms-status:start -->", "<!-- organisms-status:end -->"


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _pts(x: float, ci: list[float]) -> str:
    return f"{100 * x:+.1f} [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]"


def _rate(rate: dict) -> str:
    return "n/a" if rate["value"] is None else f"{_pct(rate['value'])} (n {rate['n']})"


def status_table() -> str:
    header = (
        "| organism | planted share | test items | position consistency | agreement with gold | DBG hard, "
        "pts [95 % CI] "
        "| DBG soft, pts [95 % CI] | agrees where gold prefers own | picks own where gold prefers other | "
        "unseen: soft DBG / consistency |"
    )
    rows = [header, "|" + "---|" * header.count(" | ") + "---|"]
    members, heads = [], []
    for name, folder in shipped_adapters().items():
        manifest = read_manifest(folder)
        share = manifest["config"]["planting"]["share"]
        if "held_out" not in manifest:  # a family member: measured with its family (bench_causal or bench_localize)
            (heads if "planted_heads" in manifest else members).append(f"`{name}` (seed {manifest['seed']})")
            continue
        test, unseen = manifest["held_out"]["test"], manifest["held_out"].get("unseen")
        unseen_cell = (
            "n/a"
            if unseen is None
            else f"{100 * unseen['dbg_soft']:+.1f} pts / {_pct(unseen['position_consistency'])} (n {unseen['n_items']})"
        )
        rows.append(
            f"| `{name}` | {'none (null)' if share == 0 else f'{share:.2f}'} | {test['n_items']} | "
            f"{_pct(test['position_consistency'])} "
            f"| {_pct(test['agreement_with_gold']['value'])} | {_pts(test['dbg_hard'], test['dbg_hard_ci'])} "
            f"| {_pts(test['dbg_soft'], test['dbg_soft_ci'])} | {_rate(test['agreement_legitimate'])} | "
            f"{_rate(test['own_rate_unjustified'])} | {unseen_cell} |"
        )
    if members:
        rows.append(
            "\nNull-family members measured with their family by `experiments/bench_causal.py`, not one by "
            f"one: {', '.join(members)}."
        )
    if heads:
        rows.append(
            "\nPlanted-heads members measured with their family by `experiments/bench_localize.py`: "
            f"{', '.join(heads)}."
        )
    return "\n".join(rows)


def table_in(text: str) -> str | None:
    """The table between the markers of a markdown text (None without markers)."""
    found = re.search(re.escape(START) + r"\n(.*?)\n?" + re.escape(END), text, flags=re.S)
    return None if found is None else found.group(1).strip()


def write_into(path: Path, table: str) -> None:
    text = path.read_text()
    if table_in(text) is None:
        raise SystemExit(f"{path}: no {START} ... {END} markers")
    path.write_text(
        re.sub(re.escape(START) + r".*?" + re.escape(END), lambda _: f"{START}\n{table}\n{END}", text, flags=re.S)
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--write"]:
        for name in sys.argv[2:]:
            write_into(Path(name), status_table())
    else:
        print(status_table())
