"""An upload the form refuses is answered in the page, under the file field, as the page
without JavaScript shows it: never as raw JSON in the progress line."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import Console
from tests.browser.test_dashboard_browser import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.mark.django_db(transaction=True)
def test_an_empty_upload_is_answered_under_the_file_field(
    page: tuple[Any, Console], live_server: Any, django_user_model: Any
) -> None:
    pg, console = page
    base = live_server.url
    sign_in(pg, base, django_user_model, "uploader")
    pg.goto(f"{base}/workloads/upload/")
    empty = {"name": "empty.csv", "mimeType": "text/csv", "buffer": b""}
    for _ in range(2):  # a second try replaces the first answer, it does not add to it
        # mark the answer on the page, so the wait below is for the new one (the old one is
        # removed when the new one arrives, and reading it then would read a detached node)
        pg.evaluate("document.querySelectorAll('ul.errorlist').forEach(e => e.dataset.old = '1')")
        pg.set_input_files("#id_file", empty)
        pg.click("#upload-form button[type=submit]")
        pg.wait_for_selector("#id_file_error:not([data-old])")
    assert pg.url == f"{base}/workloads/upload/"
    assert pg.locator("#id_file_error li").all_inner_texts() == ["The submitted file is empty."]
    # the list sits right above the file field's paragraph, as Django renders it
    following = pg.eval_on_selector("#id_file_error", "e => e.nextElementSibling.innerHTML")
    assert 'id="id_file"' in following
    status = pg.inner_text("#upload-status")
    assert "{" not in status and "errors" not in status
    assert pg.locator("ul.errorlist").count() == 1
    # the browser notes each 400 answer in the console; nothing else may be there
    assert [e for e in console.errors if "status of 400" not in e] == []
