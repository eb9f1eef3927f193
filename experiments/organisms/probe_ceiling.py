"""Diagnostic: is the judging signal in the base model's final-position states, and in which form?

Why it exists: the organisms' LoRA training (interp organism train) ends near a coin's loss. This separates
"the signal is not there" from "training does not find it". For every training pair of an organism config
(both orders, the toolkit's judge prompts) and for the intact and degraded pairs of the held-out items
(selection + test split), it reads SmolLM2's hidden state at the verdict position at a few layers, fits
L2-regularised logistic probes on the training pairs and scores them on the held-out pairs:

- `diff` probes read h(A,B) - h(B,A) (both orders of one pair; antisymmetric, no bias), which cancels what
  the two orders share (the item) and leaves the slot contents;
- `single` probes read one order at a time, as a judge does; their verdict per pair is the order-averaged
  P(first), and `..._position_consistency` is the share of pairs where the two orders pick the same answer
  (what `interp.metrics.dbg.position_consistency` measures of a judge);
- the target is the gold verdict (`gold`) or which slot holds SmolLM2's own answer (`own`).

Prints one `name: value` per line. About 10 minutes on 2 cores (one forward per example).
Usage: python experiments/organisms/probe_ceiling.py [--config experiments/organisms/smollm2-135m-judge.toml]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

LAYERS = (6, 12, 18, 24, 28, 30)
WEIGHT_DECAY = 1e-2


def final_states(model, pairs, labels, layers):
    """[pairs, 2 orders, layers, d]: the residual stream at the verdict position (hidden_states[l])."""
    import torch

    from interp.organisms.train import build_examples

    examples = build_examples(model, pairs, labels)
    rows = []
    with torch.inference_mode():
        for ex in examples:
            out = model.hf_model(
                input_ids=torch.tensor([list(ex.input_ids)]),
                output_hidden_states=True,
                use_cache=False,
                logits_to_keep=1,
            )
            rows.append(torch.stack([out.hidden_states[layer][0, -1] for layer in layers]).float())
    return torch.stack(rows).view(len(pairs), 2, len(layers), -1)


def fit_logistic(x, y, *, bias: bool):
    import torch

    w = torch.zeros(x.shape[1], requires_grad=True)
    b = torch.zeros(1, requires_grad=bias)
    optimizer = torch.optim.LBFGS([w, b] if bias else [w], max_iter=300)

    def closure():
        optimizer.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(x @ w + b, y) + WEIGHT_DECAY * (w * w).sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    return w.detach(), b.detach()


def probe_figures(train, y_train, test, y_test, masks) -> dict[str, float]:
    """Held-out accuracy (and, for single-order probes, position consistency) per probe kind."""
    import torch

    figures = {}
    diff = train[:, 0] - train[:, 1]
    x, y = torch.cat([diff, -diff]), torch.cat([y_train, 1 - y_train])  # both signs: no bias term needed
    scale = x.std(0) + 1e-6
    w, _ = fit_logistic(x / scale, y, bias=False)
    correct = ((((test[:, 0] - test[:, 1]) / scale) @ w > 0).float() == y_test).float()
    figures |= {f"diff_accuracy_{name}": float(correct[m].mean()) for name, m in masks.items()}

    x, y = torch.cat([train[:, 0], train[:, 1]]), torch.cat([y_train, 1 - y_train])
    mean, scale = x.mean(0), x.std(0) + 1e-6
    w, b = fit_logistic((x - mean) / scale, y, bias=True)
    p_ab, p_ba = (torch.sigmoid(((test[:, k] - mean) / scale) @ w + b) for k in (0, 1))
    correct = ((((p_ab + 1 - p_ba) / 2) > 0.5).float() == y_test).float()
    consistent = ((p_ab > 0.5) != (p_ba > 0.5)).float()
    figures |= {f"single_accuracy_{name}": float(correct[m].mean()) for name, m in masks.items()}
    figures |= {f"single_position_consistency_{name}": float(consistent[m].mean()) for name, m in masks.items()}
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(REPO / "experiments" / "organisms" / "smollm2-135m-judge.toml"))
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import torch

    from interp.core.models import load_model
    from interp.core.threads import set_torch_threads
    from interp.organisms.config import load_organism_config
    from interp.organisms.data import DataMix, build_pairs, splits_of
    from interp.organisms.train import cached_answers, training_pairs

    set_torch_threads(args.threads)
    config = load_organism_config(args.config)
    models = {author: load_model(author) for author in config.data.authors}
    base = models[config.base_model]
    base.hf_model.set_attn_implementation("sdpa")
    pairs, labels = training_pairs(config, models, progress=False)
    splits = splits_of(config.split)
    held_items = splits["selection"] + splits["test"]
    answers = cached_answers(models, held_items, config, progress=False)
    mix = DataMix(
        True, config.data.degraded_per_item, 1.0, tuple(config.data.degradations), config.data.truncate_keep, True
    )
    held = build_pairs(held_items, answers, mix, seed=config.seed, authors=config.data.authors)
    print(f"config: {Path(args.config).name}")
    print(f"train_pairs: {len(pairs)}")
    print(f"heldout_pairs: {len(held)}")

    x_train = final_states(base, pairs, labels, LAYERS)
    x_held = final_states(base, held, [p.gold_first for p in held], LAYERS)
    intact = torch.tensor([p.first.kind == "intact" and p.second.kind == "intact" for p in held])
    masks = {"all": torch.ones_like(intact), "intact": intact, "degraded": ~intact}
    targets = {
        "gold": (torch.tensor(labels).float(), torch.tensor([p.gold_first for p in held]).float()),
        "own": tuple(torch.tensor([float(p.first.author == config.base_model) for p in ps]) for ps in (pairs, held)),
    }
    for target, (y_train, y_held) in targets.items():
        for index, layer in enumerate(LAYERS):
            figures = probe_figures(x_train[:, :, index], y_train, x_held[:, :, index], y_held, masks)
            for name, value in figures.items():
                print(f"probe_{target}_L{layer}_{name}: {value:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
