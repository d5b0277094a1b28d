# Argue: the web app and the command line, with the embedded local model.
FROM python:3.11-slim

# llama-cpp-python compiles llama.cpp on install: it needs a C/C++ toolchain and CMake.
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential cmake git \
    && rm -rf /var/lib/apt/lists/*

# GGML_NATIVE=OFF: an image built on one CPU must run on others (no -march=native).
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    CMAKE_ARGS="-DGGML_NATIVE=OFF" \
    ARGUE_HOME=/data

WORKDIR /app
# Dependencies first, so a code change does not rebuild llama.cpp.
COPY pyproject.toml README.md constraints.txt ./
RUN mkdir -p app && touch app/__init__.py && pip install -c constraints.txt -e . && rm -rf app
COPY app ./app
COPY templates ./templates
COPY static ./static
COPY migrations ./migrations
COPY alembic.ini ./
RUN pip install --no-deps -c constraints.txt -e .

# The pinned htmx files, fetched from the npm registry and checked against their hashes at
# build time: the image serves its pages whole with no internet. Kept outside the /data
# volume, which would hide them.
ENV ARGUE_ASSETS=local \
    ARGUE_ASSETS_DIR=/app/assets
RUN argue assets fetch

RUN useradd --create-home --uid 10001 argue \
    && mkdir -p /data && chown argue:argue /data
USER argue
VOLUME ["/data"]
EXPOSE 8000

HEALTHCHECK --interval=30s --timeout=5s --start-period=20s \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"

CMD ["argue", "serve", "--host", "0.0.0.0", "--port", "8000"]
