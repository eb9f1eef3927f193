"""Interventions at the verdict (final) position as edits of the final row alone, for the cached path.

`interp.core.backends.final_cached` re-judges a variant over the clean pass's keys and values: only the final
token's row runs, so a variant's edit must touch nothing but that row. `final_row_problem` says, for a list of
interventions, why one cannot be represented there (None: all can). Representable, exactly:

- "attention" (masks, dampening, emphasis) with `queries = "final"`: its bias's final query row;
- the node kinds zero, mean, resample, patch and project_out / add at `head_output`, `mlp_output` or `residual`
  with `positions = "final"` (each replaces the final position's activation with a value of that position alone);
- "steering" with `positions = "final"`.

Anything else (other positions, a head's pattern or values, a user's kind, whose replacement may read other
positions) takes the full pass. `final_row_edits` builds the edit set of representable interventions in final-row
coordinates from the same definitions the full pass uses (`Intervention.edits`, given the batch's final column):
a patch's or resample's donor is its donor prompt's final-position activation from that prompt's own pass, kept by
`FinalActivations` (the clean passes' own, or one recording pass per donor prompt, whatever the number of variants
reading it). `at_positions` sets where an intervention edits ("all": today's positions, "final": the verdict).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

import torch
from torch import Tensor

from interp.core.backends import Backend, Batch, Edits, left_pad
from interp.core.spans import TokenizedPrompt
from interp.errors import InterpError
from interp.hooks.base import EditContext, Intervention, SiteData
from interp.hooks.node_data import counterfactual_ids, donor_index
from interp.hooks.nodes import Add, Mean, NodeIntervention, Patch, ProjectOut, Resample, Zero
from interp.hooks.sites import hook_name
from interp.hooks.spec import AttentionIntervention
from interp.hooks.steering import ResidualSteering

POSITION_CHOICES = ("all", "final")  # `--positions`: today's (queries outside the span, every position), the verdict
FINAL_KINDS = (Zero, Mean, Resample, Patch, ProjectOut, Add)
FINAL_SITES = ("head_output", "mlp_output", "residual")
RECORD_ROWS = 8  # prompts of one recording pass
DONOR_POINTS = ("attn.hook_z", "hook_mlp_out", "hook_resid_post")  # the sites a donor's final position is read at


def final_row_problem(interventions: Sequence[Intervention]) -> str | None:
    """Why the interventions cannot run over the cached keys and values as final-row edits (None: they can)."""
    for intervention in interventions:
        label = intervention.label
        if isinstance(intervention, AttentionIntervention):
            if intervention.queries != "final":
                return f"{label}: its queries are {intervention.queries!r}, not the final position"
        elif isinstance(intervention, ResidualSteering):
            if intervention.positions != "final":
                return f"{label}: it steers positions {intervention.positions!r}, not the final position"
        elif isinstance(intervention, NodeIntervention) and type(intervention) in FINAL_KINDS:
            if intervention.site not in FINAL_SITES:
                return f"{label}: site {intervention.site!r} is read inside the attention over every position"
            if intervention.positions != "final":
                return f"{label}: it edits positions {intervention.positions!r}, not the final position"
        else:
            return f"{label}: kind {intervention.kind!r} is not one the cached path knows to edit the final row alone"
    return None


def at_positions(intervention: Intervention, positions: str) -> Intervention:
    """The intervention editing at `positions` ("all": queries outside the target span, or every position; "final":
    the verdict position); a kind or site that cannot take the value is one line."""
    if positions not in POSITION_CHOICES:
        raise InterpError(f"unknown positions {positions!r}; use one of {', '.join(POSITION_CHOICES)}")
    if isinstance(intervention, AttentionIntervention):
        return dataclasses.replace(intervention, queries="outside" if positions == "all" else "final")
    if isinstance(intervention, ResidualSteering):
        return dataclasses.replace(intervention, positions=positions)
    if isinstance(intervention, NodeIntervention):
        if intervention.positions == positions:
            return intervention
        if positions == "all" and isinstance(intervention, Resample):
            raise InterpError(f"{intervention.label}: resample takes the final position only, not positions 'all'")
        return type(intervention).from_dict({**intervention.to_dict(), "positions": positions})
    raise InterpError(f"{intervention.label}: kind {intervention.kind!r} takes no positions option")


class FinalActivations:
    """Prompts' final-position activations at every donor point (`DONOR_POINTS`, every layer), by token ids: kept
    from the clean passes (`add`) or recorded once per prompt (`of`), so a donor read by many variants costs one
    pass at most."""

    def __init__(self, runner: Backend) -> None:
        self.runner = runner
        self.by_ids: dict[tuple[int, ...], dict[str, Tensor]] = {}

    def points(self) -> list[str]:
        """The hook points kept: every donor point of every layer."""
        return [hook_name(point, layer) for layer in range(self.runner.model.n_layers) for point in DONOR_POINTS]

    def final_means(self, node: NodeIntervention, prompts: Sequence[TokenizedPrompt]) -> dict[str, Tensor]:
        """A `mean` node's reference means at the final position: the mean of the prompts' kept final activations
        (float32, summed in float64 as `interp.hooks.node_data.reference_means` does)."""
        if node.positions != "final":
            raise InterpError(f"{node.label}: kept final activations give means at the final position only")
        if not prompts:
            raise InterpError("a mean ablation needs a reference set of at least one prompt")
        rows = self.of([p.input_ids for p in prompts], node.hook_names(self.runner.model.n_layers))
        return {name: tensor[:, 0].double().mean(0).float() for name, tensor in rows.items()}

    def add(self, ids: Sequence[Sequence[int]], sites: dict[str, Tensor]) -> None:
        """Keep each row's final-position activations (`sites`: name -> `[rows, 1, ...]`) under its token ids."""
        for row, row_ids in enumerate(ids):
            self.by_ids[tuple(row_ids)] = {name: tensor[row : row + 1] for name, tensor in sites.items()}

    def of(self, ids: Sequence[Sequence[int]], names: Sequence[str]) -> dict[str, Tensor]:
        """The rows' final-position activations at `names`, `[rows, 1, ...]`; prompts not kept yet are recorded in
        one pass (left-padded: the last column is every row's final position)."""
        missing = list(dict.fromkeys(tuple(i) for i in ids if tuple(i) not in self.by_ids))
        if missing:
            kept: dict[str, Tensor] = {}

            def keep(name: str):
                def fn(activation: Tensor) -> None:
                    kept[name] = activation[:, -1:].detach().clone()

                return fn

            for start in range(0, len(missing), RECORD_ROWS):
                chunk = missing[start : start + RECORD_ROWS]
                batch, _ = left_pad([list(m) for m in chunk], self.runner.model.tokenizer.pad_token_id)
                self.runner.forward(batch, edits=Edits(sites={name: keep(name) for name in self.points()}))
                self.add(chunk, kept)
        return {name: torch.cat([self.by_ids[tuple(i)][name] for i in ids]) for name in names}


def _donors(
    intervention: NodeIntervention,
    prompts: Sequence[TokenizedPrompt],
    activations: FinalActivations,
    *,
    own: str | None,
    authors,
    references,
    pool: Sequence[TokenizedPrompt] | None,
) -> dict[str, Tensor]:
    """A patch's or resample's donors at the final position, `[rows, 1, ...]` by hook name."""
    names = intervention.hook_names(activations.runner.model.n_layers)
    if intervention.needs == "counterfactual":
        ids = counterfactual_ids(
            intervention,
            prompts,
            tokenizer=activations.runner.model.tokenizer,
            own=own,
            authors=authors,
            references=references,
        )
    else:
        if not pool:
            raise InterpError("resample needs a reference set of prompts to draw donors from")
        ids = [pool[donor_index(intervention, p, pool)].input_ids for p in prompts]
    if any(len(i) != len(p) for i, p in zip(ids, prompts, strict=True)) and intervention.needs == "counterfactual":
        raise InterpError("the counterfactual prompts do not have the prompts' lengths; patching needs them aligned")
    return activations.of(ids, names)


@dataclass(frozen=True)
class RowInputs:
    """What the batch's rows give the interventions besides their prompts: the judge's own model, each row's
    (author A, author B) and reference answer, intervention i's reference means (`means[i]`) and the prompts
    resample draws its donors from (`pool`)."""

    own: str | None = None
    authors: Sequence[tuple[str, str]] | None = None
    references: Sequence[str | None] | None = None
    means: dict[int, dict[str, Tensor]] | None = None
    pool: Sequence[TokenizedPrompt] | None = None


def final_row_edits(
    interventions: Sequence[Intervention],
    activations: FinalActivations,
    batch: Batch,
    offsets: Sequence[int],
    prompts: Sequence[TokenizedPrompt],
    inputs: RowInputs = RowInputs(),
) -> Edits:
    """The interventions' edit set for the left-padded `batch` in final-row coordinates (module docstring): each one
    built by its own `edits`, an attention bias given the whole batch and cut to its final query row, every other
    kind given the batch's final column (`inputs`: the rows' authors, references, means and donor pool)."""
    from interp.hooks.compile import model_dtype

    own, authors, means = inputs.own, inputs.authors, inputs.means
    problem = final_row_problem(interventions)
    if problem is not None:
        raise InterpError(f"the cached final-position path cannot represent {problem}")
    model = activations.runner.model
    dtype = model_dtype(model.hf_model)
    final = Batch(batch.input_ids[:, -1:], batch.attention_mask[:, -1:])
    edits = Edits()
    for index, intervention in enumerate(interventions):
        if isinstance(intervention, AttentionIntervention):
            here = EditContext(batch, offsets, prompts, model.n_layers, model.n_heads, dtype, own, authors)
            full = intervention.edits(here)
            rows = {}
            for bias in full.score_bias.values():
                if id(bias) not in rows:
                    if bool(bias[:, :, :-1].any()):
                        raise InterpError(f"{intervention.label}: its bias reaches query rows before the final one")
                    rows[id(bias)] = bias[:, :, -1:].clone()
            edits = edits.merged(Edits(score_bias={layer: rows[id(b)] for layer, b in full.score_bias.items()}))
            continue
        data = SiteData()
        if intervention.needs == "mean":
            if not means or index not in means:
                raise InterpError(f"{intervention.label}: a mean ablation needs its reference means")
            data = SiteData(means=means[index])
        elif intervention.needs in ("counterfactual", "donor"):
            data = SiteData(
                donors=_donors(
                    intervention,
                    prompts,
                    activations,
                    own=own,
                    authors=authors,
                    references=inputs.references,
                    pool=inputs.pool,
                )
            )
        here = EditContext(final, [0] * len(offsets), None, model.n_layers, model.n_heads, dtype, own, authors, data)
        edits = edits.merged(intervention.edits(here))
    return edits
