"""``manage.py ready``: wait until ``make run``'s workers and web server are up, then say how
to sign in.

``make run`` starts three Celery workers and the web server in the background; each worker
prints its banner as it starts. This command waits for every worker's log to say it is
ready and for the web server to answer, then prints the sign-in line and the API token
together, so that they are the last thing on the screen rather than lost above the banners.
"""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

#: Celery's line once a worker consumes: "[...: INFO/MainProcess] sim@host ready."
READY = re.compile(r"@\S+ ready\.\s*$", re.M)


def worker_ready(log: Path) -> bool:
    try:
        return bool(READY.search(log.read_text(errors="replace")))
    except OSError:
        return False


def web_answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return int(r.status) < 500
    except urllib.error.HTTPError as exc:
        return exc.code < 500
    except (OSError, ValueError):
        return False


class Command(BaseCommand):
    help = "Wait for make run's workers and web server, then print how to sign in."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="the web app")
        parser.add_argument("--user", default="demo", help="the user to sign in as")
        parser.add_argument(
            "--password",
            default=None,
            help="shown beside the user if it is the user's password (default: the username)",
        )
        parser.add_argument("--logs", nargs="*", default=[], help="the workers' log files")
        parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait")

    def handle(self, *args: Any, **opts: Any) -> None:
        from rest_framework.authtoken.models import Token

        url = opts["url"].rstrip("/")
        logs = [Path(p) for p in opts["logs"]]
        deadline = time.monotonic() + opts["timeout"]
        waiting = [p for p in logs if not worker_ready(p)]
        web = web_answers(f"{url}/accounts/login/")
        while (waiting or not web) and time.monotonic() < deadline:
            time.sleep(0.25)
            waiting = [p for p in waiting if not worker_ready(p)]
            web = web or web_answers(f"{url}/accounts/login/")
        for p in waiting:
            self.stderr.write(f"warning: the worker logging to {p} is not ready yet; see its log")
        if not web:
            self.stderr.write(f"warning: {url} does not answer yet")

        user = get_user_model().objects.filter(username=opts["user"]).first()
        if user is None:
            self.stderr.write(f"no user {opts['user']!r}: run `manage.py planner demo` first")
            return
        password = opts["password"] if opts["password"] is not None else user.username
        sign_in = user.username
        if user.check_password(password):
            sign_in += f" / {password}"
        token, _ = Token.objects.get_or_create(user=user)
        lines = [
            "",
            f"clustersim is ready: {url}  (sign in as {sign_in})",
            f"  API token for {user.username}: {token.key}  (header: Authorization: Token ...)",
            f"  API docs: {url}/api/docs/",
        ]
        if logs:
            lines.append(f"  worker logs: {', '.join(map(str, logs))}")
        lines.append("")
        self.stdout.write("\n".join(lines))
