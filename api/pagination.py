"""Page-number pagination that counts rows only when it has to.

A list answers ``count`` (the number of rows across all pages). Django's paginator runs a
``COUNT(*)`` for every page; on an annotated queryset (experiments with their run counts) that
is a second grouped query as expensive as the page itself. :class:`Paginator` first fetches
the page plus one row: when that row is missing this is the last page and ``count`` follows
from the page's offset, so only a full page that has a successor still needs ``COUNT(*)``.

A page number whose rows would start beyond :data:`MAX_OFFSET` is past the end of any table
(and beyond what a database accepts as an ``OFFSET``): it is the same 404 ("Invalid page.")
as any page past the end, never a query.
"""

from __future__ import annotations

from typing import Any

from django.core.paginator import EmptyPage, Page
from django.core.paginator import Paginator as DjangoPaginator
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination

#: Largest row offset ever queried: PostgreSQL's ``OFFSET`` and SQLite's integers are signed
#: 64-bit; no table here comes near 2**62 rows.
MAX_OFFSET = 2**62


class Paginator(DjangoPaginator):
    def page(self, number: Any) -> Page:
        if self.orphans:
            return super().page(number)
        try:
            if isinstance(number, float) and not number.is_integer():
                raise ValueError
            number = int(number)
        except (TypeError, ValueError):
            return super().page(number)  # raises PageNotAnInteger
        if number < 1:
            return super().page(number)  # raises EmptyPage
        bottom = (number - 1) * self.per_page
        if bottom + self.per_page >= MAX_OFFSET:
            raise EmptyPage(self.error_messages["no_results"])
        rows = list(self.object_list[bottom : bottom + self.per_page + 1])
        if len(rows) <= self.per_page and (rows or (number == 1 and self.allow_empty_first_page)):
            # the last page (or an empty first one): the count needs no query
            self.__dict__["count"] = bottom + len(rows)
        elif not rows:
            return super().page(number)  # past the end: EmptyPage, as Django says it
        return self._get_page(rows[: self.per_page], number, self)


class Pagination(PageNumberPagination):
    """``?page=`` (from 1) and ``?page_size=`` (1 to 500; larger asks for 500). A page size
    that is not a whole number of at least 1 is a 400 (DRF would ignore it)."""

    django_paginator_class = Paginator
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500

    def get_page_number(self, request: Any, paginator: Any) -> Any:
        number = super().get_page_number(request, paginator)
        if request.query_params.get(self.page_query_param) == "":
            return ""  # an empty page number is an invalid one (404), not the first page
        return number

    def get_page_size(self, request: Any) -> int | None:
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        try:
            size = int(raw)
        except ValueError:
            size = 0
        if size < 1:
            raise ValidationError(
                {self.page_size_query_param: f"a whole number from 1 to {self.max_page_size}"}
            )
        return min(size, self.max_page_size)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters: list[dict[str, Any]] = super().get_schema_operation_parameters(view)
        for p in parameters:
            p["schema"] = {**p.get("schema", {}), "minimum": 1}
            if p["name"] == self.page_size_query_param:
                p["description"] = (
                    f"Results per page (default {self.page_size}; at most "
                    f"{self.max_page_size}: a larger size gives {self.max_page_size})."
                )
        return parameters
