"""The Celery application. Workers: ``celery -A config worker``; beat: ``celery -A config beat``.

Tasks go to three queues (``CELERY_TASK_ROUTES``): ``<prefix>.sim``, ``<prefix>.parse`` and
``<prefix>.housekeeping`` (prefix ``CLUSTERSIM_CELERY_QUEUE``). A worker serves the roles in
``CLUSTERSIM_WORKER_QUEUES`` (``sim``, ``parse``, ``housekeeping``, comma-separated), or the
queues given by ``-Q``, or else all three. A worker that serves both ``sim`` and ``parse``
says at start that uploads will wait for its simulation slots (parsing should have a worker
of its own: ``make run``'s ``parse``, docker-compose's ``parse-worker``).
"""

from __future__ import annotations

import logging
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
    queues = instance.app.amqp.queues
    if roles:
        queues.select(worker_queues(roles, settings.CLUSTERSIM_QUEUES))
    served = set(queues.consume_from)
    both = {settings.CLUSTERSIM_QUEUES["sim"], settings.CLUSTERSIM_QUEUES["parse"]}
    if both <= served:
        logging.getLogger(__name__).warning(
            "worker %s serves both simulations and parsing: an upload waits whenever all its "
            "slots simulate; give parsing a worker of its own (CLUSTERSIM_WORKER_QUEUES=parse)",
            sender,
        )
