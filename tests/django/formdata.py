"""What a browser posts for a page's forms left as they are (the tests then change a field)."""

from __future__ import annotations

import re
from typing import Any

from django import forms


def posted(*items: Any) -> dict[str, Any]:
    """The POST data of unbound forms and formsets as rendered: each field's initial value
    under its HTML name (a blank text for none, an unticked box left out, a list for a
    multiple choice), with the formsets' management forms."""
    data: dict[str, Any] = {}
    for item in items:
        if isinstance(item, forms.BaseFormSet):
            for bf in item.management_form:
                data[bf.html_name] = bf.value()
            form_list = list(item.forms)
        else:
            form_list = [item]
        for form in form_list:
            for bf in form:
                value = bf.value()
                if isinstance(bf.field, forms.BooleanField):
                    if value:
                        data[bf.html_name] = "on"
                elif isinstance(value, list | tuple):
                    data[bf.html_name] = [str(v) for v in value]
                else:
                    data[bf.html_name] = "" if value is None else str(value)
    return data


_EXTERNAL = re.compile(
    r"""<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)\s*=\s*["']?(?:https?:)?//""", re.I
)


def external_assets(html: str) -> list[str]:
    """The tags of a page that load a script, stylesheet, image or frame from another origin
    (an absolute or protocol-relative URL); a page served whole by the app has none."""
    return [m.group(0) for m in _EXTERNAL.finditer(html)]
