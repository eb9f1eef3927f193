"""The design of a causal test: how the heads are chosen (a spec, every layer, or the top K heads on a
selection share of the items), the test's level and flips, and which control judges read the same pairs
(named, or the automatic null family of an organism / the judges that wrote neither answer).

The design is data: it is written into result.json and is part of the result's key.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from interp.core.adapters import adapter_folder, organism_base, read_manifest
from interp.core.model_files import one_model
from interp.core.models import model_identity, own_model
from interp.errors import InterpError
from interp.hooks.nodes import registered_ops
from interp.metrics.causal_test import ALPHA, N_FLIPS
from interp.metrics.specificity import DEFAULT_CHECK, check_specificity_choice
from interp.run.store import Run

MAX_RANDOM_HEAD_SETS = 999  # each set is a full re-judging of the test items; 999 resolves p_rank to 0.001
Heads = Literal["spec", "all-layers", "top-heads"]


@dataclass(frozen=True)
class TestDesign:
    """How a causal test is run: data, written into result.json and part of the result's key."""

    heads: Heads = "spec"
    top_k: int | None = None
    selection_share: float | None = None  # share of the run's items that choose heads; the rest test them
    split_seed: int = 0
    # None: automatic (for an organism, every other null organism of its base in the run; for a real judge,
    # every judge of the run that wrote neither answer); (): none, so no self-preference verdict.
    control_judges: tuple[str, ...] | None = None
    random_head_sets: int | None = None  # None: the fewest that can reach alpha after Holm over the judges
    layer_matched: bool = True
    test_alpha: float = ALPHA  # the test's level (a spec's `alpha` is its mask strength)
    n_flips: int = N_FLIPS
    span_controls: bool = False  # also the other-span and random-span masks (descriptive, not in the decision)
    # --top-heads / --all-layers: what the chosen heads get. "attention": the own-answer mask; "head_output": `op`
    # (a node kind, `interp.hooks.nodes`) on those heads' outputs at every position.
    site: str = "attention"
    op: str = "mean"
    # the specificity check a causal verdict requires (`interp.metrics.specificity.CHECKS`; "none" is refused)
    specificity: str = DEFAULT_CHECK

    def record(self) -> dict:
        """The design as data (result.json, the result's key); site and op only when they are not the mask, so
        the keys of mask designs stay what they were."""
        data = dataclasses.asdict(self)
        if self.site == "attention":
            del data["site"], data["op"]
        if self.specificity == DEFAULT_CHECK:  # the default check keeps the keys of designs before the option
            del data["specificity"]
        return data

    def __post_init__(self) -> None:
        if self.site not in ("attention", "head_output"):
            raise InterpError(
                f"--site {self.site!r}: --top-heads and --all-layers act on 'attention' (the mask) or 'head_output'"
            )
        if self.site == "head_output" and self.heads == "spec":
            raise InterpError("--site head_output goes with --top-heads or --all-layers; a spec names its own site")
        if self.site == "head_output" and self.op not in registered_ops():
            raise InterpError(
                f"--op {self.op!r} is not a node intervention kind; use one of {', '.join(registered_ops())}"
            )
        if self.heads == "top-heads" and (self.top_k is None or self.top_k < 1):
            raise InterpError("--top-heads needs a number of heads of at least 1")
        if self.selection_share is not None and not 0 < self.selection_share < 1:
            raise InterpError(f"--selection-share {self.selection_share} must be between 0 and 1 (exclusive)")
        if self.heads == "top-heads" and self.selection_share is None:
            raise InterpError(
                "--top-heads chooses heads on a selection share of the items: give --selection-share (e.g. 0.4)"
            )
        if self.random_head_sets is not None and self.random_head_sets < 0:
            raise InterpError(f"--random-head-sets {self.random_head_sets} must be 0 or more")
        if self.random_head_sets is not None and self.random_head_sets > MAX_RANDOM_HEAD_SETS:
            raise InterpError(
                f"--random-head-sets {self.random_head_sets} is more than {MAX_RANDOM_HEAD_SETS}: each set "
                "re-judges every test "
                f"item; {MAX_RANDOM_HEAD_SETS} already resolves p_rank to {1 / (MAX_RANDOM_HEAD_SETS + 1):g}"
            )
        if not 0 < self.test_alpha < 1:
            raise InterpError(f"--test-alpha {self.test_alpha} must be between 0 and 1")
        if self.n_flips < 1:
            raise InterpError("n_flips must be at least 1")
        check_specificity_choice(self.specificity)


def parse_control_judges(given) -> tuple[str, ...] | None:
    """Control judges as a command gives them: None (automatic), a name, a comma-separated list, or several
    (repeated option or a list); "none" (or "") alone means no control judge."""
    if given is None:
        return None
    names = [given] if isinstance(given, str) else list(given)
    if not names:
        return None
    parts = [part.strip() for name in names for part in str(name).split(",")]
    if parts in (["none"], [""]):
        return ()
    if any(part in ("", "none") for part in parts):
        raise InterpError(f"--control-judge {','.join(names)!r}: 'none' stands alone, and a name may not be empty")
    if len(set(parts)) != len(parts):
        raise InterpError(f"--control-judge names a judge twice: {', '.join(parts)}")
    return tuple(parts)


def design_from_options(
    *, spec_given: bool, all_layers: bool, top_heads: int | None, control_judge=None, **fields
) -> TestDesign:
    """The design from a command's options: exactly one of a spec, `all_layers` or `top_heads`; control judges
    as `parse_control_judges` reads them ("none" alone: no control judge)."""
    chosen = [
        name
        for name, given in (
            ("--spec", spec_given),
            ("--all-layers", all_layers),
            ("--top-heads", top_heads is not None),
        )
        if given
    ]
    if len(chosen) != 1:
        raise InterpError(
            f"give exactly one of --spec FILE, --all-layers, --top-heads K (got {', '.join(chosen) or 'none'})"
        )
    heads = {"--spec": "spec", "--all-layers": "all-layers", "--top-heads": "top-heads"}[chosen[0]]
    if fields.get("op") is None:
        fields.pop("op", None)
    elif fields.get("site", "attention") == "attention":  # the mask takes no op: an op alone would be dropped
        raise InterpError(
            f"--op {fields['op']} acts on the heads' outputs: add --site head_output (the default site, attention, "
            "masks the own answer and takes no --op)"
        )
    return TestDesign(heads=heads, top_k=top_heads, control_judges=parse_control_judges(control_judge), **fields)


def organism_role(spec: str) -> str | None:
    """ "null" or "planted" for an organism (by its manifest's planting share), None for a plain model."""
    folder = adapter_folder(spec)
    if folder is None:
        return None
    share = read_manifest(folder).get("config", {}).get("planting", {}).get("share", 0.0)
    return "planted" if share and share > 0 else "null"


def automatic_controls(run: Run, judge: str) -> list[str]:
    """The control judges a judge gets when none are named: for an organism, every null organism of the same
    base model other than itself, among the run's judges and the shipped organisms (its null family: they read
    the same answers and have no planted preference; never a planted one; those outside the run are judged on
    the test items as keyed variants); for a real judge, every judge of the run whose own model wrote neither
    answer."""
    from interp.core.adapters import shipped_adapters

    if organism_role(judge) is not None:
        base = organism_base(judge)
        seen, out = {judge_identity(judge)}, []
        for other in dict.fromkeys([*run.config.judge_specs, *shipped_adapters()]):
            if organism_role(other) == "null" and organism_base(other) == base and judge_identity(other) not in seen:
                seen.add(judge_identity(other))
                out.append(other)
        return out
    return [other for other in run.config.judge_specs if other != judge and own_model(other) not in run.config.models]


def judge_identity(spec: str) -> str:
    """What makes two judge specs one judge: for an organism, the config and seed that trained its adapter (a
    shipped alias and a folder copy of it are one judge); otherwise what the spec loads (`model_identity`:
    `./m`, `m/` and `/abs/m` alike)."""
    folder = adapter_folder(spec)
    if folder is not None:
        manifest = read_manifest(folder)
        return f"organism|{manifest.get('config_fingerprint')}|{manifest.get('seed')}"
    return model_identity(spec)


def resolve_controls(run: Run, judge: str, design: TestDesign) -> list[str]:
    """The control judges (named, or `automatic_controls`). Refused: the judge itself under another spelling, and a
    judge that owns one of the run's answers other than the tested judge's own (`own_model`: an author, or an
    organism of an author's base; an organism of the tested judge's own base, as the null family is, stays)."""
    controls = automatic_controls(run, judge) if design.control_judges is None else list(design.control_judges)
    authors = {model_identity(m) for m in run.config.models}
    for i, control in enumerate(controls):  # one model spelled twice, or a copy of it, would count twice
        for other in controls[i + 1 :]:
            if judge_identity(control) == judge_identity(other) or one_model(control, other):
                how = "" if control == other else f" ({control!r} and {other!r} are one model)"
                raise InterpError(f"--control-judge names {control!r} twice{how}; name each control judge once")
    for control in controls:
        if judge_identity(control) == judge_identity(judge) or one_model(control, judge):
            same = "" if control == judge else f" (the same model as {judge!r}, spelled otherwise)"
            raise InterpError(
                f"--control-judge {control!r} is the judge under test{same}; name judges that read the same "
                "pairs and wrote neither answer"
            )
        owner = model_identity(own_model(control))
        if owner in authors and owner != model_identity(own_model(judge)):
            wrote = (
                "wrote" if own_model(control) == control else f"owns the answers of {own_model(control)!r}, which wrote"
            )
            raise InterpError(
                f"--control-judge {control!r} {wrote} one of the run's answers; a control judge must own "
                "neither answer "
                "(it would carry a self-preference of its own)"
            )
    return controls
