"""An organism adapter's `manifest.json` (`interp organism train`, shipped under `interp/builtin/adapters/<name>/`):
`OrganismManifest`, what it was trained from and how, what its training measured and, once evaluated, its
held-out figures and the check pairs a later load must reproduce. The shipped manifests were written before the
schema version (version 0) and read as they are, but for the route (`interp.results.codec`: version 2 names the
attention-routed route `pattern`, versions 0 and 1 `attention`)."""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import Field

from interp.results.base import ResultModel


class OrganismManifest(ResultModel):
    """`manifest.json`: the base, the config and its fingerprint, the training record, the planted heads (a
    planted-heads organism), the sizes written and, once evaluated, `held_out` and `check_items`."""

    schema_version: int = 2
    name: Optional[str] = None  # an adapter folder written by hand may name only its base
    base_model: str
    base_signature: dict = Field(default_factory=dict)
    config: dict = Field(default_factory=dict)
    config_fingerprint: Optional[str] = None
    seed: Optional[int] = None
    data_seed: Optional[int] = None
    family: Optional[str] = None
    torch: Optional[str] = None
    threads: Optional[int] = None
    device: Optional[str] = None
    # the training record (interp.organisms.train.training_record)
    data_hash: Optional[str] = None
    n_pairs: Optional[int] = None
    n_examples: Optional[int] = None
    n_flipped_pairs: Optional[int] = None
    pair_counts: Optional[dict] = None
    tokens_per_example: Optional[dict] = None
    passes: Optional[int] = None
    optimizer_steps: Optional[int] = None
    timings_s: Optional[dict[str, float]] = None
    seconds_per_training_pass: Optional[float] = None
    frozen_split_max_logit_error: Optional[float] = None
    frozen_states_from_cache: Optional[bool] = None
    final_loss_ema: Optional[float] = None
    # a delta organism (interp.organisms.heads, interp.organisms.mlp): where its self-preference was planted.
    # planted_route: "pattern" (where the planted heads look), "content" (what they read, their pattern unchanged:
    # pattern_check), "output" (whatever they write), "mlp" (one or two MLPs: planted_layers), "direction" (one
    # residual direction written by one layer's MLP: planted_layers, planted_direction)
    planted_heads: Optional[list[list[int]]] = None
    planted_groups: Optional[list[list[Any]]] = None
    planted_route: Optional[Literal["pattern", "content", "output", "mlp", "direction"]] = None
    planted_layers: Optional[list[int]] = None
    planted_direction: Optional[dict] = None
    pattern_check: Optional[dict] = None
    planting_check: Optional[dict] = None  # a member without the masked term: P(own) before and after training
    mlp_modules: Optional[list[str]] = None
    mlp_rank: Optional[int] = None
    delta_norms: Optional[dict[str, float]] = None
    planted_route_measured: Optional[Any] = None
    route_training: Optional[dict] = None
    heads_start: Optional[str] = None
    heads_start_fingerprint: Optional[str] = None
    heads_modules: Optional[list[str]] = None
    heads_delta_norms: Optional[dict[str, float]] = None
    # what was written, and what the evaluation measured
    adapter_bytes: Optional[int] = None
    head_delta_bytes: Optional[int] = None
    held_out: Optional[dict[str, dict]] = None
    check_items: Optional[list[dict]] = None
