# The gateway from its wheel: gunicorn with the gateway's workers, as a named non-root user.
#
#   podman build --format docker -t gateway-mw .     # or: docker build -t gateway-mw .
#   podman run --rm -p 8080:8080 -e GATEWAY_UPSTREAM=http://model-server:8000 gateway-mw
#
# Settings come from GATEWAY_* / THINK_EXTRACT_* variables (docs/deploy.md); WEB_CONCURRENCY sets the
# number of workers. Without GATEWAY_UPSTREAM it refuses to start (GATEWAY_DEMO_MODEL=true serves the
# embedded demo model instead). BASE_IMAGE is any image with python3 (3.10 or newer) and its venv
# module: the default, or e.g. Debian's own with python3-venv (.ci/container builds one when the
# default cannot be pulled).

ARG BASE_IMAGE=python:3.12-slim-bookworm

FROM ${BASE_IMAGE} AS build
WORKDIR /src
# Only what the wheel is made of (.dockerignore lets nothing else in).
COPY pyproject.toml setup.cfg README.md LICENSE ./
COPY gateway_mw ./gateway_mw
RUN python3 -m venv /build && /build/bin/pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM ${BASE_IMAGE}
# The wheel with the gateway's extra, at the versions this project's CI last tested as the newest; the
# wheel's own floors are in setup.cfg.
ARG PINS="aiohttp==3.14.5 msgspec==0.23.0 prometheus-client==0.26.0 gunicorn==27.0.1"
COPY --from=build /wheels /wheels
# A user with a name, a group of the same name and a home directory: gunicorn's control socket lives
# there, and tools that look the user up find it. (--no-log-init: no lastlog entry, a sparse file as
# large as the uid is high.)
RUN python3 -m venv /opt/gateway-mw \
    && /opt/gateway-mw/bin/pip install --no-cache-dir "$(echo /wheels/*.whl)[gateway]" ${PINS} \
    && rm -rf /wheels \
    && groupadd --gid 10001 gateway \
    && useradd --uid 10001 --gid gateway --create-home --home-dir /home/gateway --no-log-init \
       --shell /usr/sbin/nologin gateway

# GATEWAY_HOST: every interface of the container. The metrics directory is emptied at every start by
# the gunicorn configuration (values of a previous run must not be added in).
ENV PATH=/opt/gateway-mw/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    WEB_CONCURRENCY=2 \
    GATEWAY_HOST=0.0.0.0 \
    GATEWAY_PORT=8080 \
    PROMETHEUS_MULTIPROC_DIR=/tmp/gateway-metrics
# Numeric, so that Kubernetes can check runAsNonRoot; the names are in /etc/passwd and /etc/group.
USER 10001:10001
WORKDIR /home/gateway
EXPOSE 8080
STOPSIGNAL SIGTERM
CMD ["gunicorn", "-c", "python:gateway_mw.proxy.gunicorn_conf"]
# podman keeps HEALTHCHECK only in the docker image format (podman build --format docker).
HEALTHCHECK --interval=10s --timeout=3s CMD ["python3", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('GATEWAY_PORT', '8080'), timeout=2)"]
