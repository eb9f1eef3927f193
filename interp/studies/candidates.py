"""The candidates of `interp explain` with their matched controls: each method's top set on the tested judge, each
control's top set by the same method on its own localisation (`interp.causal.matched`), and random sets of the
same sizes, each judge at its own draw; every one as the intervention spec of its site."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pandas as pd

from interp.causal.intervene import random_head_sets
from interp.causal.matched import top_heads_of, top_layers_of
from interp.hooks.nodes import node_from_dict
from interp.hooks.spec import AttentionIntervention, pairs_table
from interp.studies.routes import heads_key

HEAD_METHODS = {
    "attention": "attention",
    "atp": "attention",
    "atp-output": "head_output",
}  # method -> the site its heads are tested at


@dataclass(frozen=True)
class Planned:
    """One test to run: the tested judge's set and spec, and each control's own set and spec (matched null)."""

    site: str
    selected_by: str
    heads: list[list[int]] | None
    layers: list[int] | None
    spec: object
    control_specs: dict[str, object]
    control_sets: dict[str, dict]  # control -> {"heads": [[l, h], ...]} or {"layers": [...]}


def intervention_spec(site: str, heads: list[list[int]] | None, layers: list[int] | None, name: str, direction=None):
    """A candidate's intervention at its site: the own answer masked at the heads, their outputs or the MLP layers
    mean-ablated, or the direction projected out of the residual stream at the layer."""
    if site == "attention":
        table = tuple((layer, tuple(hs)) for layer, hs in pairs_table(heads).items())
        return AttentionIntervention(target="self", alpha=0.0, heads=table, name=name)
    if site == "head_output":
        return node_from_dict({"site": site, "op": "mean", "heads": heads_key(pairs_table(heads)), "name": name})
    if site == "mlp_output":
        return node_from_dict({"site": site, "op": "mean", "layers": sorted(layers), "name": name})
    return node_from_dict(
        {
            "site": "residual",
            "op": "project_out",
            "layers": layers,
            "direction": [float(x) for x in direction],
            "name": name,
        }
    )


def chosen_candidates(located: dict, by_control: dict, request) -> list[Planned]:
    """Each method's top candidate on the tested judge, and each control's top set by the same method on the
    same selection items (its own localisation): the matched null."""
    out = []
    for method, site in HEAD_METHODS.items():
        if method in located:
            sets = {c: top_heads_of(found[method], request.top_k) for c, found in by_control.items()}
            heads = top_heads_of(located[method], request.top_k)
            name = f"explain-{site}-{method}-top{request.top_k}"
            out.append(planned(site, method, heads, None, name, {c: {"heads": h} for c, h in sets.items()}))
    if "atp-mlp" in located:
        sets = {c: top_layers_of(found["atp-mlp"], request.mlp_k) for c, found in by_control.items()}
        layers = top_layers_of(located["atp-mlp"], request.mlp_k)
        name = f"explain-mlp-atp-top{request.mlp_k}"
        out.append(planned("mlp_output", "atp-mlp", None, layers, name, {c: {"layers": s} for c, s in sets.items()}))
    if "direction" in located:
        best = located["direction"].iloc[0]
        sets = {
            c: {"layers": [int(found["direction"].iloc[0].layer)], "vector": found["direction"].iloc[0].vector}
            for c, found in by_control.items()
        }
        name = f"explain-direction-L{int(best.layer)}"
        out.append(planned("residual", "direction", None, [int(best.layer)], name, sets, best.vector))
    return out


def planned(site, selected_by, heads, layers, name, sets: dict[str, dict], direction=None) -> Planned:
    """A test: the tested judge's spec, and each control's spec at its own set (same site and op)."""
    specs = {
        c: intervention_spec(site, s.get("heads"), s.get("layers"), f"{name}-control", s.get("vector"))
        for c, s in sets.items()
    }
    shown = {c: {k: v for k, v in s.items() if k != "vector"} for c, s in sets.items()}
    return Planned(
        site, selected_by, heads, layers, intervention_spec(site, heads, layers, name, direction), specs, shown
    )


def _dims(found: dict[str, pd.DataFrame]) -> tuple[int, int]:
    """A judge's layers and heads, from its localisation (every head or layer is ranked)."""
    frames = [found[m] for m in (*HEAD_METHODS, "atp-mlp") if m in found]
    layers = max(int(f["layer"].max()) for f in frames) + 1
    heads = max((int(found[m]["head"].max()) + 1 for m in HEAD_METHODS if m in found), default=0)
    return layers, heads


def random_candidates(judge: str, located: dict, by_control: dict, request, pool) -> list[Planned]:
    """Random sets of the candidates' sizes, each judge at its own draw (seeded by its name and the split seed)."""
    head_sites = sorted({HEAD_METHODS[m] for m in HEAD_METHODS if m in located})
    if not head_sites and "atp-mlp" not in located:
        return []
    model = pool.model(judge)
    dims = {judge: (model.n_layers, model.n_heads)} | {c: _dims(found) for c, found in by_control.items()}
    size = {0: list(range(request.top_k))}  # the random sets' size: a candidate's (top-k heads)
    draws = {
        name: random_head_sets(
            size,
            n_layers,
            n_heads,
            request.random_sets,
            seed_key=f"{name}|{request.split_seed}|heads",
            layer_matched=False,
        )
        if head_sites
        else []
        for name, (n_layers, n_heads) in dims.items()
    }
    out = []
    for r in range(request.random_sets):
        sets = {
            name: [[layer, head] for layer, hs in sorted(t[r].items()) for head in hs] for name, t in draws.items() if t
        }
        for site in head_sites:
            name = f"explain-{site}-random{r}-{request.top_k}"
            controls = {c: {"heads": sets[c]} for c in by_control}
            out.append(planned(site, "random", sets[judge], None, name, controls))
        if "atp-mlp" in located:
            layers = {
                name: sorted(random.Random(f"{name}|{request.split_seed}|mlp|{r}").sample(range(n), request.mlp_k))
                for name, (n, _) in dims.items()
            }
            name = f"explain-mlp-random{r}-{request.mlp_k}"
            controls = {c: {"layers": layers[c]} for c in by_control}
            out.append(planned("mlp_output", "random", None, layers[judge], name, controls))
    return out
