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


@register.simple_tag
def constant_carbon(cluster: Any) -> list[dict[str, Any]]:
    """Regions of ``cluster`` without a carbon zone: ``[{"name", "g_per_kwh"}]``.

    Their carbon intensity is a constant (the spec's ``carbon_g_per_kwh``, 400 g/kWh unless
    set), so the cluster page says so instead of letting a flat line pass for data.
    """
    from clustersim.errors import ClustersimError
    from clustersim.spec import cluster_from_spec

    try:
        regions = cluster_from_spec(cluster.effective_spec()).regions
    except ClustersimError:
        return []
    return [{"name": r.name, "g_per_kwh": r.carbon_g_per_kwh} for r in regions if not r.carbon_zone]


@register.filter
def zip_pairs(names: list[Any], values: list[Any]) -> list[tuple[Any, Any]]:
    """``zip(names, values)`` in templates (e.g. a type's name with its node count)."""
    return list(zip(names, values, strict=False))
