"""A gold judge behind an OpenAI-compatible HTTP endpoint (vLLM, llama.cpp's server, llama-cpp-python's
server, hosted APIs) that reads the label probabilities from the logprobs of the first generated token.

Per pair and order, one request:

- mode "chat" (post-trained judges): POST `{base_url}/chat/completions` with the DBG paper's zero-shot judge
  text (Tables 7-9, exactly the user turn that `interp.core.prompts.judge_prompt(..., kind="post")` puts in a
  local model's chat template) as the only user message; the server applies its own chat template.
- mode "completions" (pre-trained judges): POST `{base_url}/completions` with the two-shot judge prompt
  (`judge_prompt(..., kind="pre")`) as the raw prompt.

Both ask for `max_tokens=1`, `temperature=0` and the top logprobs of that token (`top_logprobs`, default 20;
OpenAI's legacy completions endpoint allows at most 5). P(A) is the sum of exp(logprob) over the listed
tokens whose text, stripped of white space (and of a leading SentencePiece "▁" or byte-level "Ġ"), is
exactly "A"; the same for "B"; the two are renormalised. Tokens outside the top list are unknown, so a label
ranked below it counts as 0 (the local judge of `interp.core.judge` sums the full distribution instead).
Both orders are judged: P(response_a better) = 0.5 * (P_ab(A) + P_ba(B)).

Outcomes are counted, never dropped (`HTTPJudge.stats`, plus a warning per `p_slot_a` call when any occur):

- no logprobs in the answer (a server that ignores the request, or a judge made with `logprobs=False` for
  APIs that refuse it): the generated text's first label counts 1.0 / 0.0, the paper's rule for judges
  without probabilities (`n_no_logprobs`). An HTTP 400 naming logprobs is an error with that hint, never a
  silent switch from probabilities to hard labels;
- neither label among the top tokens (or, without logprobs, in the text): P = 0.5 for that order
  (`n_non_label`); the first few such cases are kept in `HTTPJudge.flagged` with the tokens seen.

Failures: connection errors, timeouts, HTTP 429 and 5xx are retried with exponential backoff
(`backoff_base * 2**k`, capped at `backoff_cap`; a numeric Retry-After is honoured up to 60 s); after the
last attempt an `InterpError` says, in one line, "HTTP judge NAME at URL unreachable after N attempts:
REASON". Other HTTP errors (401, 404, ...) and malformed answers fail at once, also in one line.

The API key is read from the environment variable named by `api_key_env` at each request and sent as
`Authorization: Bearer ...`; it is never stored on the judge, logged, shown in `repr`, or put in an error
message (server error texts are searched for it and redacted). User and password in `base_url`, and its
query string, are hidden from messages too.
"""

from __future__ import annotations

import logging
import math
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Sequence
from urllib.parse import urlsplit, urlunsplit

import httpx

from interp.config import HTTPJudgeConfig
from interp.core.prompts import UserTurnOnly, judge_prompt
from interp.errors import InterpError
from interp.run.gold.protocol import Pair

log = logging.getLogger(__name__)

MODES = ("chat", "completions")
LABELS = ("A", "B")
_MAX_RETRY_AFTER = 60.0
_MAX_FLAGGED = 20
_TEXT_LABEL = re.compile(r"\s*[\(\[\*\"'`<]*\s*(A|B)(?![A-Za-z0-9])")


def judge_user_message(task: str, query: str, response_a: str, response_b: str) -> str:
    """The zero-shot judge text (the user turn of a post-trained judge's chat prompt)."""
    return judge_prompt(UserTurnOnly(), task, query, response_a, response_b, kind="post").text


def judge_raw_prompt(task: str, query: str, response_a: str, response_b: str) -> str:
    """The two-shot judge prompt of a pre-trained judge (plain text, no chat template)."""
    return judge_prompt(None, task, query, response_a, response_b, kind="pre").text


def _display_url(url: str) -> str:
    """The URL without user, password, query string or fragment (they can hold credentials)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _label_of(token: str) -> str | None:
    text = token.strip().lstrip("▁Ġ").strip()
    return text if text in LABELS else None


class _Retryable(Exception):
    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


@dataclass(frozen=True)
class HTTPOptions:
    """How an `HTTPJudge` reaches its endpoint and reads it: the API key's environment variable, the timeout
    (seconds), retries and their backoff (None: the class's), chat or completions, logprobs asked for and how many
    top tokens, requests at once."""

    api_key_env: str | None = None
    timeout: float = 60.0
    retries: int = 4
    mode: str = "chat"
    top_logprobs: int = 20
    concurrency: int = 1
    logprobs: bool = True
    backoff_base: float | None = None
    backoff_cap: float | None = None


class HTTPJudge:
    """Gold judge (`interp.run.gold.GoldJudge`) behind an OpenAI-compatible endpoint; see the module docstring."""

    backoff_base: float = 0.5  # seconds before the first retry; doubles per retry
    backoff_cap: float = 8.0

    def __init__(
        self,
        name: str,
        base_url: str,
        model: str,
        *,
        options: HTTPOptions = HTTPOptions(),
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        api_key_env, timeout, retries, mode = options.api_key_env, options.timeout, options.retries, options.mode
        top_logprobs, concurrency, logprobs = options.top_logprobs, options.concurrency, options.logprobs
        backoff_base, backoff_cap = options.backoff_base, options.backoff_cap
        if mode not in MODES:
            raise InterpError(f"HTTP judge {name!r}: unknown mode {mode!r}; use one of {', '.join(MODES)}")
        if retries < 0 or concurrency < 1 or top_logprobs < 1 or not timeout > 0:
            raise InterpError(
                f"HTTP judge {name!r}: retries must be >= 0, concurrency and top_logprobs >= 1, timeout > 0"
            )
        if not base_url.startswith(("http://", "https://")):
            raise InterpError(
                f"HTTP judge {name!r}: base_url must start with http:// or https://, e.g. http://127.0.0.1:8000/v1"
            )
        if api_key_env is not None and not os.environ.get(api_key_env):
            raise InterpError(f"HTTP judge {name!r}: environment variable {api_key_env} (its API key) is not set")
        self.name = name
        self.base_url = base_url.rstrip("/")  # ends on the API root, e.g. http://127.0.0.1:8000/v1
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = float(timeout)
        self.retries = int(retries)
        self.mode = mode
        self.top_logprobs = int(top_logprobs)
        self.concurrency = int(concurrency)
        if backoff_base is not None:
            self.backoff_base = float(backoff_base)
        if backoff_cap is not None:
            self.backoff_cap = float(backoff_cap)
        parts = urlsplit(self.base_url)  # a query string (e.g. Azure's api-version) stays at the end
        path = parts.path.rstrip("/") + ("/chat/completions" if mode == "chat" else "/completions")
        self.endpoint = urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))
        self._client = httpx.Client(timeout=self.timeout, transport=transport)
        self._lock = threading.Lock()
        self._failed: str | None = None  # the first request that failed for good: the others are not sent
        self.logprobs = bool(logprobs)
        self.stats: dict[str, int] = {
            "n_pairs": 0,
            "n_requests": 0,  # answered judgments (one per pair and order)
            "n_attempts": 0,  # HTTP requests sent, retries included
            "n_retries": 0,
            "n_logprobs": 0,  # judgments read from the top logprobs
            "n_one_label": 0,  # ... of which only one label was among the top tokens (it gets P = 1)
            "n_no_logprobs": 0,  # judgments read from the generated text (1.0 / 0.0)
            "n_non_label": 0,  # neither label found: P = 0.5 for that order
        }
        self.flagged: list[dict[str, Any]] = []
        # one dict per pair and order of the last p_slot_a call: item_id, order ("ab", "ba"), p_a, p_b
        # (renormalised), mass_a, mass_b (summed probabilities of the listed label tokens before renormalising;
        # 1.0/0.0 for a text label), source ("logprobs", "text", or "none" when no label was found), top_token
        self.last_judgments: list[dict[str, Any]] = []

    @classmethod
    def from_config(cls, cfg: HTTPJudgeConfig) -> "HTTPJudge":
        """The judge a run config's `[[gold.http]]` entry describes."""
        options = HTTPOptions(
            api_key_env=cfg.api_key_env,
            timeout=cfg.timeout,
            retries=cfg.retries,
            mode=cfg.mode,
            top_logprobs=cfg.top_logprobs,
            concurrency=cfg.concurrency,
            logprobs=cfg.logprobs,
        )
        return cls(cfg.name, cfg.base_url, cfg.model, options=options)

    def check_reachable(self) -> None:
        """One GET to the API root before a run writes anything: a server that is not there (refused, unknown
        host, timeout) is a one-line error at once. Any HTTP answer counts as reachable."""
        try:
            self._client.get(self.base_url, headers=self._headers(), timeout=min(self.timeout, 10.0))
        except httpx.TransportError as exc:
            reason = _one_line(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
        else:
            return
        raise InterpError(
            f"HTTP judge {self.name} at {_display_url(self.base_url)} is unreachable "
            f"({self._redact(reason)}); check its base_url"
        )

    def __repr__(self) -> str:
        return (
            f"HTTPJudge(name={self.name!r}, url={_display_url(self.endpoint)!r}, model={self.model!r}, "
            f"mode={self.mode!r}, api_key_env={self.api_key_env!r})"
        )

    __str__ = __repr__

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()

    def __enter__(self) -> "HTTPJudge":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- judging ---------------------------------------------------------------------------------------

    def p_slot_a(self, pairs: Sequence[Pair]) -> list[float]:
        """P(response_a better) per pair: the mean of P(A) with A first and P(B) with the order swapped."""
        jobs = []
        for pair in pairs:
            for order, (a, b) in (
                ("ab", (pair.response_a, pair.response_b)),
                ("ba", (pair.response_b, pair.response_a)),
            ):
                jobs.append((pair.item, order, a, b))
        before = dict(self.stats)
        if self.concurrency > 1 and len(jobs) > 1:
            pool = ThreadPoolExecutor(max_workers=self.concurrency)
            try:
                futures = [pool.submit(self.judge_order, *job) for job in jobs]
                results = [future.result() for future in futures]
            finally:  # on a failure, do not keep sending the queued requests
                pool.shutdown(wait=True, cancel_futures=True)
        else:
            results = [self.judge_order(*job) for job in jobs]
        with self._lock:
            self.stats["n_pairs"] += len(pairs)
        self.last_judgments = results
        self._warn_if_needed(before, len(jobs))
        return [0.5 * (results[2 * i]["p_a"] + results[2 * i + 1]["p_b"]) for i in range(len(pairs))]

    def _warn_if_needed(self, before: dict[str, int], n_jobs: int) -> None:
        no_logprobs = self.stats["n_no_logprobs"] - before["n_no_logprobs"]
        non_label = self.stats["n_non_label"] - before["n_non_label"]
        if no_logprobs:
            log.warning(
                "HTTP judge %s: %d of %d judgments came without logprobs; their generated label counts 1.0/0.0",
                self.name,
                no_logprobs,
                n_jobs,
            )
        if non_label:
            log.warning(
                "HTTP judge %s: %d of %d judgments had neither A nor B among the top %d tokens; counted as 0.5 "
                "(see .stats and .flagged)",
                self.name,
                non_label,
                n_jobs,
                self.top_logprobs,
            )

    def judge_order(self, item, order: str, response_a: str, response_b: str) -> dict[str, Any]:
        """One judgment (one order): label probabilities from the first token's top logprobs."""
        if self.mode == "chat":
            text = judge_user_message(item.task, item.query, response_a, response_b)
            body: dict[str, Any] = {"messages": [{"role": "user", "content": text}]}
        else:
            body = {"prompt": judge_raw_prompt(item.task, item.query, response_a, response_b)}
        body = {"model": self.model, **body, "max_tokens": 1, "temperature": 0}
        data = self.post(body)
        top, generated = self._parse(data)
        probs, mass, source = self._probabilities(top, generated, item_id=item.id, order=order)
        top_token = max(top, key=lambda entry: entry[1])[0] if top else generated
        return {
            "item_id": item.id,
            "order": order,
            "p_a": probs["A"],
            "p_b": probs["B"],
            "mass_a": mass["A"],
            "mass_b": mass["B"],
            "source": source,
            "top_token": top_token,
        }

    def _logprob_fields(self) -> dict[str, Any]:
        if self.mode == "chat":
            return {"logprobs": True, "top_logprobs": self.top_logprobs}
        return {"logprobs": self.top_logprobs}

    def _probabilities(
        self, top: list[tuple[str, float]] | None, generated: str, *, item_id: str, order: str
    ) -> tuple[dict[str, float], dict[str, float], str]:
        mass = {label: 0.0 for label in LABELS}
        source = "logprobs"
        if top is not None:
            for token, logprob in top:
                label = _label_of(token)
                if label is not None and logprob is not None and math.isfinite(logprob):
                    mass[label] += math.exp(logprob)
        else:
            source = "text"
            match = _TEXT_LABEL.match(generated or "")
            if match:
                mass[match.group(1)] = 1.0
        total = sum(mass.values())
        with self._lock:
            self.stats["n_requests"] += 1
            self.stats["n_logprobs" if source == "logprobs" else "n_no_logprobs"] += 1
            if total <= 0.0:
                self.stats["n_non_label"] += 1
                if len(self.flagged) < _MAX_FLAGGED:
                    seen = [token for token, _ in (top or [])[:5]] if top is not None else [generated]
                    self.flagged.append({"item_id": item_id, "order": order, "source": source, "tokens": seen})
            elif source == "logprobs" and min(mass.values()) == 0.0:
                self.stats["n_one_label"] += 1
        if total <= 0.0:
            return {label: 0.5 for label in LABELS}, mass, "none"
        return {label: value / total for label, value in mass.items()}, mass, source

    def _parse(self, data: Any) -> tuple[list[tuple[str, float]] | None, str]:
        """(top tokens with logprobs of the first generated token, or None without logprobs; generated text)."""
        try:
            choice = data["choices"][0]
            if self.mode == "chat":
                generated = (choice.get("message") or {}).get("content") or ""
                content = (choice.get("logprobs") or {}).get("content") or []
                if not content:
                    return None, generated
                first = content[0]
                top = [(entry["token"], float(entry["logprob"])) for entry in first.get("top_logprobs") or []]
                chosen = (first.get("token"), first.get("logprob"))
            else:
                generated = choice.get("text") or ""
                logprobs = choice.get("logprobs") or {}
                tops = logprobs.get("top_logprobs") or []
                if not tops or tops[0] is None:
                    return None, generated
                top = [(token, float(value)) for token, value in tops[0].items()]
                tokens, values = logprobs.get("tokens") or [], logprobs.get("token_logprobs") or []
                chosen = (tokens[0], values[0]) if tokens and values else (None, None)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
        else:
            # the generated token, when a server lists it apart from the top list
            if chosen[0] is not None and chosen[1] is not None and chosen[0] not in {token for token, _ in top}:
                top.append((chosen[0], float(chosen[1])))
            return top, generated
        raise InterpError(
            f"HTTP judge {self.name} at {_display_url(self.endpoint)}: unexpected answer ({reason}): "
            f"{self._redact(_one_line(repr(data), 200))}"
        )

    # ---- transport -------------------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key_env is not None:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise InterpError(
                    f"HTTP judge {self.name}: environment variable {self.api_key_env} (its API key) is not set"
                )
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _redact(self, text: str) -> str:
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            text = text.replace(key, "***")
        return text.replace(self.base_url, _display_url(self.base_url))

    def post(self, body: dict[str, Any]) -> Any:
        """POST `body` to the endpoint: retried with backoff on connection errors, timeouts, 429 and 5xx; the
        decoded JSON answer, or one-line InterpError. Once one request has failed for good, every later attempt
        of this client (other workers of a pool included) fails at once with the same line, unsent."""
        try:
            return self._post(body)
        except InterpError as exc:
            with self._lock:
                self._failed = self._failed or str(exc)
            raise

    def _stop_if_failed(self) -> None:
        if self._failed is not None:
            raise InterpError(self._failed)

    def _post(self, body: dict[str, Any]) -> Any:
        attempts = self.retries + 1
        reason = ""
        for attempt in range(attempts):
            self._stop_if_failed()
            if attempt:
                with self._lock:
                    self.stats["n_retries"] += 1
            try:
                return self._attempt(body)
            except _Retryable as failure:
                reason = failure.reason
                if attempt + 1 < attempts:
                    delay = min(self.backoff_cap, self.backoff_base * 2**attempt)
                    if failure.retry_after is not None:
                        delay = max(delay, min(failure.retry_after, _MAX_RETRY_AFTER))
                    log.info(
                        "HTTP judge %s: attempt %d of %d failed (%s); retrying in %.2f s",
                        self.name,
                        attempt + 1,
                        attempts,
                        reason,
                        delay,
                    )
                    time.sleep(delay)
        # raised outside any `except` block, so no transport exception (with its request headers) is chained
        raise InterpError(
            f"HTTP judge {self.name} at {_display_url(self.endpoint)} unreachable after {attempts} attempts: "
            f"{self._redact(reason)}"
        )

    def _attempt(self, body: dict[str, Any]) -> Any:
        """One request; returns the decoded JSON, raises `_Retryable` or `InterpError` (never an httpx error)."""
        failure: _Retryable | None = None
        response = None
        with self._lock:
            self.stats["n_attempts"] += 1
        try:
            request_body = {**body, **self._logprob_fields()} if self.logprobs else body
            response = self._client.post(self.endpoint, json=request_body, headers=self._headers())
        except httpx.TransportError as exc:  # connection refused/reset, timeouts, protocol errors
            failure = _Retryable(_one_line(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__))
        if failure is not None:
            raise failure
        status = response.status_code
        if status == 429 or status >= 500:
            raise _Retryable(
                f"HTTP {status} {response.reason_phrase}: {_one_line(response.text, 200)}", _retry_after(response)
            )
        if status >= 400:
            hint = ""
            if status == 400 and self.logprobs and "logprob" in response.text.lower():
                hint = (
                    f" (the server refused the logprobs request: lower top_logprobs (now {self.top_logprobs}), or "
                    "turn logprobs off to count its generated labels 1.0/0.0)"
                )
            raise InterpError(
                f"HTTP judge {self.name} at {_display_url(self.endpoint)}: HTTP {status} {response.reason_phrase}: "
                f"{self._redact(_one_line(response.text, 200))}{hint}"
            )
        try:
            return response.json()
        except ValueError:
            text = self._redact(_one_line(response.text, 200))
        raise InterpError(f"HTTP judge {self.name} at {_display_url(self.endpoint)}: answer is not JSON: {text}")


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None
