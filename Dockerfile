# The gateway from its wheel: gunicorn with aiohttp workers, as a non-root user.
#
#   docker build -t gateway-mw .
#   docker run --rm -p 8080:8080 -e GATEWAY_UPSTREAM=http://model-server:8000 gateway-mw
#
# Settings come from GATEWAY_* / THINK_EXTRACT_* variables (docs/deploy.md); WORKERS sets gunicorn -w.

ARG PYTHON_IMAGE=python:3.12-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
# Only what the wheel is made of (.dockerignore lets nothing else in).
COPY pyproject.toml setup.cfg README.md LICENSE ./
COPY gateway_mw ./gateway_mw
RUN python -m pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM ${PYTHON_IMAGE}
# The versions this project's CI last tested as the newest; the wheel's own floors are in setup.cfg.
ARG PINS="aiohttp==3.14.5 msgspec==0.23.0 prometheus-client==0.26.0 gunicorn==27.0.1"
COPY --from=build /wheels /wheels
RUN python -m pip install --no-cache-dir /wheels/*.whl ${PINS} \
    && rm -rf /wheels \
    && useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin gateway

# ACCESS_LOG_FORMAT: aiohttp's format (gunicorn hands it to the aiohttp workers), the one gateway-mw uses.
ENV PYTHONUNBUFFERED=1 \
    WORKERS=2 \
    PROMETHEUS_MULTIPROC_DIR=/tmp/gateway-metrics \
    ACCESS_LOG_FORMAT='%a "%r" %s %b %Tfs "%{User-Agent}i" request_id=%{X-Request-Id}o'
USER 10001:10001
EXPOSE 8080
# The metrics directory is emptied at every start: values from a previous run must not be added in.
CMD ["sh", "-c", "rm -rf \"$PROMETHEUS_MULTIPROC_DIR\" && mkdir -p \"$PROMETHEUS_MULTIPROC_DIR\" && exec gunicorn 'gateway_mw.proxy:app_factory()' --worker-class aiohttp.GunicornWebWorker -w \"$WORKERS\" --bind 0.0.0.0:8080 --graceful-timeout 30 --access-logfile - --access-logformat \"$ACCESS_LOG_FORMAT\""]
HEALTHCHECK --interval=10s --timeout=3s CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=2)"]
