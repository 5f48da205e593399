"""The REST API (``/api/v1/``): a thin DRF layer over :mod:`planner`."""
