"""The Celery application. Workers: ``celery -A config worker``; beat: ``celery -A config beat``.

Tasks go to three queues (``CELERY_TASK_ROUTES``): ``<prefix>.sim``, ``<prefix>.parse`` and
``<prefix>.housekeeping`` (prefix ``CLUSTERSIM_CELERY_QUEUE``). A worker serves the roles in
``CLUSTERSIM_WORKER_QUEUES`` (``sim``, ``parse``, ``housekeeping``, comma-separated), or the
queues given by ``-Q``, or else all three.
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery
from celery.signals import celeryd_after_setup

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("clustersim")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def worker_queues(roles: list[str], queues: dict[str, str]) -> list[str]:
    """The queue names of ``roles`` (``queues``: role → name); a clear error for a typo."""
    unknown = [r for r in roles if r not in queues]
    if unknown:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(
            f"CLUSTERSIM_WORKER_QUEUES: unknown role(s) {', '.join(unknown)}; "
            f"known: {', '.join(queues)}"
        )
    return [queues[r] for r in roles]


@celeryd_after_setup.connect
def _serve_roles(sender: str, instance: Any, **kwargs: Any) -> None:
    """Serve the queues of ``CLUSTERSIM_WORKER_QUEUES`` (replacing any ``-Q``)."""
    from django.conf import settings

    roles = [r.strip() for r in settings.CLUSTERSIM_WORKER_QUEUES if r.strip()]
    if roles:
        instance.app.amqp.queues.select(worker_queues(roles, settings.CLUSTERSIM_QUEUES))
