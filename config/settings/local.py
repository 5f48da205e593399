"""Local development (`make run`): debug on, SQLite and the filesystem broker by default."""

from config.env import env_bool
from config.settings.base import *  # noqa: F403

DEBUG = env_bool("DJANGO_DEBUG", True)
