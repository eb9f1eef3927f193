"""MLP-planted and direction organisms: judges whose self-preference lives outside attention.

Start from a null organism (`mlp.start`, its LoRA merged), draw `mlp.n_layers` decoder layers from the training seed
among the last `mlp.top_layers`, and train, on the planted labels, a low-rank delta confined to those layers' MLPs:

- route "mlp": for each projection P of `mlp.modules` (gate, up, down) of each drawn layer, `b @ a` added to P's
  weight (rank `mlp.rank`; `a` seeded, `b` zero at the start, as LoRA starts), so only those MLPs compute anything
  new;
- route "direction": one layer's down projection at rank 1, its written column held to unit length: the delta is
  `u a^T` with |u| = 1, so whatever the layer's MLP writes beyond the start organism's lies along one fixed
  residual-stream direction u, by an amount `a . h` that depends on the prompt (h: the MLP's hidden activation). That
  is what "direction" means here: the planted preference is carried by one direction of the residual stream at one
  layer, written there by that layer's MLP; u is stored beside the organism (`planted_direction.safetensors`:
  `direction` [d_model] and `layer`).

Every weight outside the drawn MLPs' projections stays bit-identical to the start organism's; the organism stays a
plain merged model (`interp.core.adapters.add_weight_delta` adds the factors' product). Training reuses the
planted-heads organisms' pipeline (`interp.organisms.heads.train_heads_organism`): the frozen-layer cache of the
null's training, the planted labels and `interp.organisms.train.fit`. The delta is put on the model as a weight
parametrization (`attached`), not a forward hook: the forward is the model's own.
"""

from __future__ import annotations

import contextlib
from typing import Sequence

import torch
from torch.nn.utils import parametrize

from interp.core.adapters import mlp_delta_key
from interp.core.backends.shared_trunk import decoder_stack
from interp.errors import InterpError
from interp.splits import unit_hash

PLANTED_DIRECTION_FILE = "planted_direction.safetensors"  # a direction organism's u, beside its delta
# The scale of the direction's seeded raw vector (u is its normalised copy): at unit entries (norm ~24 for SmolLM2)
# AdamW's steps of about `lr` an entry could not turn it, and a member planted +0.5 points of P(own) along the random
# direction it started with; at a tenth they turn it within the first epoch.
DIRECTION_INIT = 0.1


def draw_layers(seed: int, n_layers: int, top_layers: int, count: int) -> list[int]:
    """`count` distinct decoder layers drawn from `seed` among the last `top_layers` of `n_layers`, sorted. A
    `top_layers` beyond the model is refused (never clipped)."""
    if top_layers > n_layers:
        raise InterpError(
            f"mlp.top_layers = {top_layers}, but the model has only {n_layers} decoder layers; set top_layers to at "
            f"most {n_layers}"
        )
    if count > top_layers:
        raise InterpError(f"mlp.n_layers = {count}: the last {top_layers} layers hold only {top_layers}")
    pool = range(n_layers - top_layers, n_layers)
    return sorted(sorted(pool, key=lambda layer: unit_hash(seed, "planted-mlp", layer))[:count])


class _PlusProduct(torch.nn.Module):
    """A weight parametrization: the weight plus `b() @ a`, with `b` a callable (a direction's unit column)."""

    def __init__(self, delta: MlpDelta, layer: int, projection: str):
        super().__init__()
        self.factors = lambda: delta.factors(layer, projection)  # not a submodule: the parameters stay the delta's

    def forward(self, weight: torch.Tensor) -> torch.Tensor:
        b, a = self.factors()
        return weight + b @ a


class MlpDelta(torch.nn.Module):
    """Trainable low-rank factors on the MLP projections of `layers`: `a` seeded ([rank, in], LoRA's scale), `b`
    zero ([out, rank]). `direction`: one projection (down) at rank 1 whose `b` is a unit column, the normalised
    trained vector (seeded, at `DIRECTION_INIT`), and `a` zero at the start."""

    def __init__(
        self,
        hf_model: torch.nn.Module,
        layers: Sequence[int],
        modules: Sequence[str],
        rank: int,
        *,
        seed: int,
        direction: bool = False,
    ):
        super().__init__()
        self.layers = [int(layer) for layer in layers]
        self.modules_trained = tuple(modules)
        self.direction = direction
        self.a = torch.nn.ParameterDict()
        self.b = torch.nn.ParameterDict()
        stack = decoder_stack(hf_model).layers
        generator = torch.Generator().manual_seed(int(unit_hash(seed, "mlp-delta") * 2**31))
        for layer in self.layers:
            for projection in self.modules_trained:
                out_features, in_features = getattr(stack[layer].mlp, f"{projection}_proj").weight.shape
                key = f"{layer}_{projection}"
                if direction:
                    u = torch.randn(out_features, 1, generator=generator)  # at 1/10 of unit entries: free to turn
                    self.b[key] = torch.nn.Parameter(DIRECTION_INIT * u)
                    self.a[key] = torch.nn.Parameter(torch.zeros(1, in_features))
                else:
                    bound = 1.0 / in_features**0.5
                    self.a[key] = torch.nn.Parameter(
                        (torch.rand(rank, in_features, generator=generator) * 2 - 1) * bound
                    )
                    self.b[key] = torch.nn.Parameter(torch.zeros(out_features, rank))

    def factors(self, layer: int, projection: str) -> tuple[torch.Tensor, torch.Tensor]:
        """(b, a) of one projection, in the graph: the delta is b @ a (a direction's b is its unit column u)."""
        key = f"{layer}_{projection}"
        b = self.b[key]
        return (b / b.norm() if self.direction else b), self.a[key]

    def tensors(self) -> dict[str, torch.Tensor]:
        """The factors as the delta file holds them (`add_weight_delta`), detached on the CPU."""
        out = {}
        with torch.no_grad():
            for layer in self.layers:
                for projection in self.modules_trained:
                    b, a = self.factors(layer, projection)
                    out[mlp_delta_key(layer, projection, "a")] = a.detach().cpu().clone().contiguous()
                    out[mlp_delta_key(layer, projection, "b")] = b.detach().cpu().clone().contiguous()
        return out

    def planted_direction(self) -> dict[str, torch.Tensor]:
        """A direction organism's sidecar: the unit direction u [d_model] and its layer."""
        (layer,) = self.layers
        b, _ = self.factors(layer, "down")
        return {"direction": b.detach().cpu().reshape(-1).clone().contiguous(), "layer": torch.tensor(layer)}

    @contextlib.contextmanager
    def attached(self, hf_model: torch.nn.Module):
        """A context in which each trained projection's weight is its own plus the factors' product (a weight
        parametrization, removed on exit: the original weight tensors come back, untouched)."""
        stack = decoder_stack(hf_model).layers
        projections = []
        try:
            for layer in self.layers:
                for projection in self.modules_trained:
                    module = getattr(stack[layer].mlp, f"{projection}_proj")
                    parametrize.register_parametrization(module, "weight", _PlusProduct(self, layer, projection))
                    projections.append(module)
            yield
        finally:
            for module in projections:
                parametrize.remove_parametrizations(module, "weight", leave_parametrized=False)


def mlp_keys(mlp_cfg, layers: Sequence[int], tensors: dict[str, torch.Tensor]) -> dict:
    """The training record's keys of an MLP-planted or direction organism: its layers, route, modules and rank, its
    start organism, and the norm of each projection's delta."""
    from interp.core.adapters import adapter_fingerprint, mlp_delta_products
    from interp.organisms.config import PLANTED_ROUTES

    return dict(
        planted_layers=[int(layer) for layer in layers],
        planted_route=PLANTED_ROUTES[mlp_cfg.route],
        heads_start=mlp_cfg.start,  # the start organism of any delta organism (the key's name is the heads')
        heads_start_fingerprint=adapter_fingerprint(mlp_cfg.start),
        mlp_modules=list(mlp_cfg.modules),
        mlp_rank=mlp_cfg.rank,
        delta_norms={
            f"layers.{layer}.mlp.{projection}": round(float(product.norm()), 4)
            for (layer, projection), product in mlp_delta_products(tensors).items()
        },
    )


def fit_mlp_delta(config, hf_model: torch.nn.Module, data: tuple, layers: Sequence[int], labels_ids, progress: bool):
    """The MLP or direction delta on `layers`, fitted to the planted labels from the cached states entering the
    lowest of them (`interp.organisms.train.fit`, the loop every organism shares): (its delta-file tensors, the
    `Fitted`, the manifest keys of its site, the files written beside it)."""
    from interp.core.placement import input_device
    from interp.organisms.train import fit

    mlp_cfg = config.mlp
    direction = mlp_cfg.route == "direction"
    delta = MlpDelta(hf_model, layers, mlp_cfg.modules, mlp_cfg.rank, seed=config.seed, direction=direction)
    delta = delta.to(input_device(hf_model))
    with delta.attached(hf_model):
        fitted = fit(hf_model, data, list(delta.parameters()), config, labels_ids, progress)
    tensors = delta.tensors()
    keys = mlp_keys(mlp_cfg, layers, tensors)
    sidecars = {}
    if direction:
        sidecars[PLANTED_DIRECTION_FILE] = delta.planted_direction()
        keys["planted_direction"] = {"file": PLANTED_DIRECTION_FILE, "layer": int(layers[0]), "site": "mlp down_proj"}
    return tensors, fitted, keys, sidecars
