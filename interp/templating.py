"""HTML through autoescaping jinja2 templates: every value is escaped unless it is toolkit-made `Markup`.

Text that comes from a config or a run (model, judge and file names, item ids, tokens) is passed as a plain
string and so always escaped. Only markup the toolkit generated itself (a rendered template, a plotly div)
is wrapped in `Markup`; never wrap config-derived text.
"""

from __future__ import annotations

from functools import lru_cache

from jinja2 import Environment, StrictUndefined, Template
from markupsafe import Markup

__all__ = ["Markup", "render"]

_ENV = Environment(autoescape=True, undefined=StrictUndefined)


@lru_cache(maxsize=None)
def _template(source: str) -> Template:
    return _ENV.from_string(source)


def render(source: str, **values) -> Markup:
    """The template `source` rendered with `values` (autoescaped); the result is safe to nest in another."""
    return Markup(_template(source).render(**values))
