"""Template helpers of the dashboard pages."""

from __future__ import annotations

from typing import Any

from django import template
from django.urls import reverse
from django.utils.html import format_html

register = template.Library()


@register.simple_tag
def plotly_js() -> str:
    """The ``<script>`` of the local plotly.js (served from the installed package)."""
    from dashboard.charts import plotly_version

    url = reverse("dashboard:plotly-js", args=[plotly_version()])
    return format_html('<script src="{}" defer></script>', url)


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
