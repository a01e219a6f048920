"""taskqueue: a durable asynchronous task-queue service (factorial and http-fetch tasks)."""

from taskqueue.config import Config, ConfigError

__all__ = ["Config", "ConfigError"]
