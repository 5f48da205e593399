"""Template helpers of the dashboard pages."""

from __future__ import annotations

from typing import Any

from django import template
from django.templatetags.static import static
from django.utils.html import format_html

register = template.Library()

#: The vendored plotly.js: the official "basic" partial bundle (scatter, bar and pie traces,
#: 1.2 MB instead of the full bundle's 4.8 MB), a static file. ``static/vendor/plotly.js/``
#: has its licence and where it came from.
PLOTLY_JS_VERSION = "4.1.1"
PLOTLY_JS = f"vendor/plotly.js/plotly-basic-{PLOTLY_JS_VERSION}.min.js"


@register.simple_tag
def plotly_js() -> str:
    """The ``<script>`` of the local plotly.js, a static file (no CDN).

    With the production storage (whitenoise's ``CompressedManifestStaticFilesStorage``) its
    name carries a hash of its content, so whitenoise serves it compressed and cacheable
    forever (``immutable``); the name also carries the version, which busts caches elsewhere.
    """
    return format_html('<script src="{}" defer></script>', static(PLOTLY_JS))


@register.inclusion_tag("dashboard/_chart.html")
def chart(
    url: str, name: str, wide: bool = False, params: str = "", height: int = 360
) -> dict[str, Any]:
    """A chart container that ``charts.js`` fills from the JSON endpoint ``url``."""
    sep = "&" if "?" in url else "?"
    return {
        "url": url,
        "csv": f"{url}{sep}format=csv",
        "json": f"{url}{sep}format=json",
        "name": name,
        "wide": wide,
        "params": params,
        "height": height,
    }


@register.filter
def metric(summary: dict[str, Any] | None, key: str) -> Any:
    """``summary[key]`` in templates (keys are not attribute-safe everywhere)."""
    return (summary or {}).get(key)
