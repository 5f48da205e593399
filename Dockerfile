# Image of the web app, the Celery workers and beat (docker-compose.yml picks the command).
FROM python:3.11-slim
# NUMBA_CACHE_DIR: where the engine's compiled kernels are cached (site-packages is read-only)
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 CLUSTERSIM_VAR_DIR=/app/var \
    NUMBA_CACHE_DIR=/app/var/numba-cache
WORKDIR /app
COPY pyproject.toml README.md ./
COPY clustersim ./clustersim
COPY scheduling ./scheduling
COPY config ./config
COPY planner ./planner
COPY api ./api
COPY dashboard ./dashboard
COPY templates ./templates
COPY static ./static
COPY manage.py ./
RUN pip install --no-cache-dir . && useradd --create-home app && mkdir -p var && chown app var
USER app
# compile the engine's kernels into NUMBA_CACHE_DIR now, not in the first user's simulation
RUN python -c "from clustersim.engine import warm_up; warm_up()"
EXPOSE 8000
CMD ["gunicorn", "config.wsgi:application", "--bind", "0.0.0.0:8000"]
