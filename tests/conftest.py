"""Session fixtures: tiny random models (fast) and the two packaged models (slow), built once per run.

The builders live in `tests.helpers.models`; everything here is session-scoped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from interp.core.models import LoadedModel, load_model
from tests.helpers.models import (
    GEMMA3,
    SMOLLM2,
    BackendSet,
    RealRun,
    packaged_tokenizer,
    save_tiny,
    tiny_gemma3_config,
    tiny_llama_config,
)


@pytest.fixture(scope="session")
def smollm2_tokenizer():
    return packaged_tokenizer(SMOLLM2)


@pytest.fixture(scope="session")
def gemma3_tokenizer():
    return packaged_tokenizer(GEMMA3)


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory, smollm2_tokenizer) -> Path:
    """A 2-layer Llama with the SmolLM2 tokenizer (it has a chat template: post-trained by default)."""
    from transformers import LlamaForCausalLM

    folder = tmp_path_factory.mktemp("tiny-llama")
    return save_tiny(folder, tiny_llama_config(smollm2_tokenizer), LlamaForCausalLM, smollm2_tokenizer, seed=0)


@pytest.fixture(scope="session")
def tiny_llama_short_context_dir(tmp_path_factory, smollm2_tokenizer) -> Path:
    """The tiny Llama with a 64-token context, so any judge prompt is too long for it."""
    from transformers import LlamaForCausalLM

    folder = tmp_path_factory.mktemp("tiny-llama-ctx64")
    config = tiny_llama_config(smollm2_tokenizer, max_position_embeddings=64)
    return save_tiny(folder, config, LlamaForCausalLM, smollm2_tokenizer, seed=1)


@pytest.fixture(scope="session")
def tiny_gemma3_dir(tmp_path_factory, gemma3_tokenizer) -> Path:
    """A 2-layer Gemma-3 (one sliding-window layer with a short window, one global layer), Gemma tokenizer."""
    from transformers import Gemma3ForCausalLM

    folder = tmp_path_factory.mktemp("tiny-gemma3")
    return save_tiny(folder, tiny_gemma3_config(gemma3_tokenizer), Gemma3ForCausalLM, gemma3_tokenizer, seed=2)


@pytest.fixture(scope="session")
def tiny_gemma3_wide_window(tmp_path_factory, gemma3_tokenizer) -> LoadedModel:
    """The tiny Gemma-3 with a sliding window longer than any judge prompt (as Gemma-3-270M's 512)."""
    from transformers import Gemma3ForCausalLM

    folder = tmp_path_factory.mktemp("tiny-gemma3-wide")
    config = tiny_gemma3_config(gemma3_tokenizer, sliding_window=1024)
    return load_model(str(save_tiny(folder, config, Gemma3ForCausalLM, gemma3_tokenizer, seed=2)))


@pytest.fixture(scope="session")
def tiny_llama(tiny_llama_dir) -> LoadedModel:
    return load_model(str(tiny_llama_dir))


@pytest.fixture(scope="session")
def tiny_gemma3(tiny_gemma3_dir) -> LoadedModel:
    return load_model(str(tiny_gemma3_dir))


@pytest.fixture(scope="session")
def smollm2() -> LoadedModel:
    return load_model(SMOLLM2)


@pytest.fixture(scope="session")
def gemma3() -> LoadedModel:
    return load_model(GEMMA3)


@pytest.fixture(scope="session")
def backend_sets() -> dict:
    """One BackendSet per model fixture name, created on first use (see `backends` below)."""
    return {}


@pytest.fixture
def backends(request, backend_sets):
    """`backends(name)` -> the BackendSet of the model fixture `name` (session-cached)."""

    def get(name: str) -> BackendSet:
        if name not in backend_sets:
            backend_sets[name] = BackendSet(request.getfixturevalue(name))
        return backend_sets[name]

    return get


@pytest.fixture(scope="session")
def real_run(tmp_path_factory) -> RealRun:
    """A small real DBG run on the two packaged models (3 items, short answers), shared by the slow tests."""
    from interp.config import RunConfig
    from interp.run.pipeline import run_dbg

    config = RunConfig(n=3, max_new_tokens=24, max_words=20, batch_size=4, name="t")
    root = tmp_path_factory.mktemp("attention-run") / "run"
    from interp.core.models import ModelCache

    models = ModelCache()
    run_dbg(config, root, progress=False, models=models)
    return RealRun(root, config, models.models)


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory):
    """A llama-cpp-python server on the packaged SmolLM2 GGUF (base URL), shared by the slow server tests."""
    from tests.helpers.servers import llama_server as serve

    with serve(tmp_path_factory.mktemp("llama-server")) as base_url:
        yield base_url


@pytest.fixture(scope="session")
def forked_cli():
    """One fork server for the session's CLI cases (`tests.helpers.forked_cli`): the toolkit imported once."""
    from tests.helpers.forked_cli import ForkedCLI

    with ForkedCLI() as cli:
        yield cli


# The causal tests' Ray and thread fixtures (tests/engine/test_executor.py, tests/studies/test_explain.py): a local
# Ray instance of 2 CPUs (skipped where Ray is not installed), and torch on one thread (the serial run a Ray run is
# compared with).


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture
def one_thread():
    """torch on one thread for the test, as a Ray task of one CPU runs: on the CPU, float32 judgments made on 1
    and on 2 threads differ in about the 7th digit, so a serial run is the Ray run's bytes at the same count."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto`: one worker per core this process may use, at most 4 (each worker loads its own copies of the
    session's models: more workers than cores only thrash)."""
    from interp.core.threads import allowed_cores

    return min(4, allowed_cores())


def pytest_configure(config) -> None:
    """Under xdist each worker gets its share of the cores for torch (workers x threads = cores), so the
    workers do not thrash each other; the toolkit's own thread decisions (interp.core.threads) still apply."""
    import os

    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    if workers > 1:
        import torch

        from interp.core.threads import allowed_cores

        torch.set_num_threads(max(1, allowed_cores() // workers))
