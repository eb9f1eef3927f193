"""Text embeddings from a local causal LM: the mean over a text's tokens of the last layer's hidden states.

The semantic check of a restyle (`interp restyle`) compares each answer with its rewrite by the cosine of
these vectors. The DBG paper used gte-multilingual-base (a trained sentence encoder, its [CLS] vector); a
decoder's mean-pooled states are a proxy: they follow meaning and wording both, and their cosines sit high
and close together (decoder states share a large common direction), so the threshold that flags a rewrite is
stated with them (`interp.studies.restyle`), not taken from the paper.
"""

from __future__ import annotations

import hashlib
import io
from typing import Sequence

import numpy as np
import torch
from jaxtyping import Float
from tqdm.auto import tqdm

from interp.core.backends import left_pad
from interp.core.models import LoadedModel, cache_root
from interp.storage import atomic_write_bytes

MAX_TOKENS = 512  # a text is embedded from its first 512 tokens (answers are capped at a few hundred words)


def embed_texts(model: LoadedModel, texts: Sequence[str], *, batch_size: int = 8) -> Float[np.ndarray, "text hidden"]:
    """One vector per text: the last hidden layer averaged over the text's tokens (padding left out)."""
    tokenizer = model.tokenizer
    out = []
    for start in range(0, len(texts), batch_size):
        encoded = [
            tokenizer(text, add_special_tokens=False)["input_ids"][:MAX_TOKENS] or [tokenizer.pad_token_id]
            for text in texts[start : start + batch_size]
        ]
        batch = left_pad(encoded, tokenizer.pad_token_id)[0].to(model.device)
        with torch.inference_mode():
            hidden = model.hf_model(
                input_ids=batch.input_ids, attention_mask=batch.attention_mask, output_hidden_states=True
            ).hidden_states[-1]
        mask = batch.attention_mask.unsqueeze(-1).to(hidden.dtype)
        out.append(((hidden * mask).sum(1) / mask.sum(1)).float().cpu().numpy())
    return np.concatenate(out) if out else np.zeros((0, 0))


def cached_embeddings(
    model: LoadedModel, texts: Sequence[str], *, batch_size: int = 8, progress: bool = False
) -> Float[np.ndarray, "text hidden"]:
    """`embed_texts`, each vector cached on disk under the model's fingerprint and the text (a resumed restyle
    embeds only what it has not)."""
    folder = cache_root() / "embeddings" / model.fingerprint()[:24]
    paths = [folder / f"{hashlib.sha256(text.encode()).hexdigest()[:32]}.npy" for text in texts]
    todo = [i for i, path in enumerate(paths) if not path.is_file()]
    bar = tqdm(total=len(todo), desc=f"embedding ({model.name})", unit="text", disable=not progress or not todo)
    for start in range(0, len(todo), batch_size):
        chunk = todo[start : start + batch_size]
        for i, vector in zip(chunk, embed_texts(model, [texts[i] for i in chunk], batch_size=batch_size), strict=False):
            buffer = io.BytesIO()
            np.save(buffer, vector)
            atomic_write_bytes(paths[i], buffer.getvalue())
        bar.update(len(chunk))
    bar.close()
    return np.stack([np.load(path) for path in paths]) if paths else np.zeros((0, 0))


def cosine_pairs(a: Float[np.ndarray, "n hidden"], b: Float[np.ndarray, "n hidden"]) -> Float[np.ndarray, " n"]:
    """The cosine similarity of each row of `a` with the same row of `b`."""
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return np.sum(a * b, axis=1) / np.where(norms > 0, norms, 1.0)
