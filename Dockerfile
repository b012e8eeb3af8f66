# Icecore in a container: the same requirements and entry point as `make run`.
#   docker build -t icecore . && docker run -p 8501:8501 icecore
FROM python:3.11-slim

RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless libxerial-sqlite-jdbc-java libpostgresql-jdbc-java procps \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY requirements.txt ./
RUN pip install --no-cache-dir -r requirements.txt

COPY . .
# Default-deny: neither ICECORE_OPEN_CATALOGS nor ICECORE_SPARK_QUERIES is set here, so the
# app serves only ICECORE_CATALOG and icecore.toml's [catalogs.NAME] (README "Deploying").
# Sign-in: mount an icecore.toml with [auth] (ICECORE_CONFIG) and pass the client secret in
# the variable it names; scripts/serve.sh generates Streamlit's auth secrets at each start
# (README "Signing in to the app").
ENV ICECORE_ADDRESS=0.0.0.0 \
    ICECORE_PORT=8501 \
    PYTHONUNBUFFERED=1
EXPOSE 8501
# Builds ./warehouse at first start when absent, then: streamlit run app.py --server.address 0.0.0.0
CMD ["scripts/serve.sh"]
