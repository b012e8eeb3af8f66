"""Build a SparkSession wired for Iceberg and for Icecore's embedded default catalog.

One function, :func:`build_session`, is the only place the pipeline, the maintenance jobs and
the tests start Spark. It finds the Iceberg Spark runtime jar inside the pinned
``snowpark-connect-deps-iceberg`` package (Iceberg 1.10.2 for Spark 3.5 / Scala 2.12), adds
Debian's SQLite JDBC driver, and registers:

* ``icecore``: Iceberg's JdbcCatalog on ``<warehouse>/catalog.db`` (SQLite), the embedded
  default catalog (README.md "The demo warehouse"); its ``iceberg_tables`` schema is the one
  PyIceberg's SqlCatalog shares. Given a ``postgresql://`` catalog URI instead, the same JdbcCatalog
  runs on that PostgreSQL database through Debian's JDBC driver (``libpostgresql-jdbc-java``), the
  multi-user catalog Icecore and PyIceberg share (:func:`jdbc_catalog_conf`).
* ``hadoop`` (on request): Iceberg's filesystem catalog (``metadata/vN.metadata.json`` plus
  ``version-hint.text``) on ``<warehouse>/hadoop``.

A table behind an Iceberg REST catalog is reached through Spark's own ``type=rest`` catalog
(:func:`rest_catalog_conf`). Its credential or token is a secret: PySpark hands the
builder's settings to ``spark-submit`` as ``--conf`` arguments (visible in the process
list), so secrets are never given to :func:`build_session`; they are set on the running
session (``spark.conf.set``, in-process) before the catalog is first used
(:func:`public_conf` splits them off), and ``spark.redaction.regex`` also hides
``credential`` keys from Spark's UI and logs.

Missing prerequisites (Java, the jar, the JDBC driver) raise :class:`PipelineError` with one
sentence that says what to install, before a JVM is started.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from icecore.catalog.postgres import PostgresTarget, is_postgres_uri

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SQL_CATALOG = "icecore"
"""Spark's name for the embedded SQL catalog; also its ``catalog_name`` in ``iceberg_tables``."""

HADOOP_CATALOG = "hadoop"
"""Spark's name for the filesystem (Hadoop layout) catalog."""

HADOOP_SUBDIR = "hadoop"
"""Folder, inside the warehouse, holding the filesystem catalog's tables."""

SQLITE_JDBC_JAR = "/usr/share/java/sqlite-jdbc.jar"
POSTGRES_JDBC_JAR = "/usr/share/java/postgresql.jar"
ICEBERG_JAR_NAME = "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"
ICEBERG_PACKAGE = "snowpark_connect_deps_iceberg"
INSTALL_HINT = "apt-get install openjdk-17-jre-headless libxerial-sqlite-jdbc-java"

SECRET_SUFFIXES = (".credential", ".token", ".jdbc.password")
"""Catalog settings that hold a secret: set on the running session, never on a command line."""
REDACTION_REGEX = "(?i)secret|password|token|access[.]?key|credential"
"""Spark's default ``spark.redaction.regex`` plus ``credential`` (a REST catalog's secret)."""
REST_CLIENT_ONLY = frozenset(
    {"type", "uri", "credential", "token", "credential-env", "token-env", "name"}
)
"""``[catalogs.NAME]`` keys that are not Iceberg catalog properties (or are set explicitly)."""


class PipelineError(Exception):
    """A prerequisite or input of the pipeline is missing or wrong; the message is one sentence."""


@dataclass(frozen=True, slots=True)
class SparkSetup:
    """Where the pieces that Spark needs were found (resolved before a JVM starts)."""

    java: str
    iceberg_jar: str
    sqlite_jar: str


def find_java() -> str:
    """Return the java executable Spark will use, honouring JAVA_HOME like spark-submit does."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
        raise PipelineError(
            f"JAVA_HOME is {java_home!r} but it has no bin/java; point it at a Java 17 "
            f"installation or unset it (install one with: {INSTALL_HINT})."
        )
    found = shutil.which("java")
    if found is None:
        raise PipelineError(
            f"Java was not found on PATH and JAVA_HOME is unset; Spark needs Java 17 "
            f"(install it with: {INSTALL_HINT})."
        )
    try:
        subprocess.run([found, "-version"], capture_output=True, check=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        raise PipelineError(
            f"Java at {found} does not run ({e}); install Java 17 with: {INSTALL_HINT}."
        ) from e
    return found


def find_iceberg_jar() -> str:
    """Locate the Iceberg Spark runtime jar: ``ICECORE_ICEBERG_JAR`` or the pinned package."""
    override = os.environ.get("ICECORE_ICEBERG_JAR")
    if override:
        if not Path(override).is_file():
            raise PipelineError(
                f"ICECORE_ICEBERG_JAR points at {override}, which is not a file; give the path "
                f"of an Iceberg Spark runtime jar for Spark 3.5 / Scala 2.12, or unset it."
            )
        return override
    spec = importlib.util.find_spec(ICEBERG_PACKAGE)
    if spec is None or spec.origin is None:
        raise PipelineError(
            "The Iceberg Spark runtime jar was not found: install the pinned requirements "
            "(pip install -r requirements.txt, which has snowpark-connect-deps-iceberg==1.0.2) "
            "or set ICECORE_ICEBERG_JAR to the jar's path."
        )
    jar = Path(spec.origin).parent / "jars" / ICEBERG_JAR_NAME
    if not jar.is_file():
        raise PipelineError(
            f"The installed {ICEBERG_PACKAGE} has no {ICEBERG_JAR_NAME}; reinstall "
            f"snowpark-connect-deps-iceberg==1.0.2 or set ICECORE_ICEBERG_JAR to the jar's path."
        )
    return str(jar)


def find_sqlite_jar() -> str:
    """Locate the SQLite JDBC driver (``ICECORE_SQLITE_JDBC_JAR`` or Debian's package)."""
    jar = os.environ.get("ICECORE_SQLITE_JDBC_JAR", SQLITE_JDBC_JAR)
    if not Path(jar).is_file():
        raise PipelineError(
            f"The SQLite JDBC driver {jar} is missing; Spark's SQL catalog needs it "
            f"(install it with: {INSTALL_HINT})."
        )
    return jar


def find_postgres_jar(required: bool = False) -> str | None:
    """Locate the PostgreSQL JDBC driver (``ICECORE_POSTGRES_JDBC_JAR`` or Debian's package).

    Returns ``None`` when it is absent and not ``required``: sessions always put it on the
    classpath when it is there, so a PostgreSQL catalog can be registered at runtime.
    """
    jar = os.environ.get("ICECORE_POSTGRES_JDBC_JAR", POSTGRES_JDBC_JAR)
    if Path(jar).is_file():
        return jar
    if required:
        raise PipelineError(
            f"The PostgreSQL JDBC driver {jar} is missing; a postgresql:// catalog needs it "
            "(install it with: apt-get install libpostgresql-jdbc-java)."
        )
    return None


def jdbc_catalog_conf(name: str, catalog: str, warehouse: str | os.PathLike[str]) -> dict[str, str]:
    """Spark settings registering Iceberg's JdbcCatalog ``name`` on a catalog URI.

    ``catalog`` is a ``postgresql://`` URI (credentials from it, ``PGPASSWORD`` or
    ``~/.pgpass``; the password goes into ``jdbc.password``, a key Spark's default
    ``spark.redaction.regex`` hides from its UI and logs) or a SQLite database file. The
    catalog's ``catalog_name`` in ``iceberg_tables`` is ``name``.
    """
    prefix = f"spark.sql.catalog.{name}"
    conf = {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": "jdbc",
        f"{prefix}.warehouse": str(Path(warehouse).resolve()),
    }
    if is_postgres_uri(catalog):
        target = PostgresTarget.parse(catalog)
        if target.host.startswith("/"):
            raise PipelineError(
                f"Spark's PostgreSQL JDBC driver cannot use the unix socket {target.host}; give "
                "the catalog as postgresql://user@host:port/database."
            )
        conf[f"{prefix}.uri"] = target.jdbc_url
        conf[f"{prefix}.jdbc.user"] = target.user
        password = target.resolve_password()
        if password is not None:
            conf[f"{prefix}.jdbc.password"] = password
        return conf
    conf[f"{prefix}.uri"] = f"jdbc:sqlite:{Path(catalog).resolve()}"
    # SQLite allows one writer at a time: wait for the lock instead of failing at once
    # (Iceberg's maintenance actions open a second catalog connection while committing).
    conf[f"{prefix}.jdbc.busy_timeout"] = "10000"
    conf[f"{prefix}.jdbc.journal_mode"] = "WAL"
    return conf


def rest_catalog_conf(
    name: str,
    uri: str,
    properties: Mapping[str, str],
    *,
    credential: str | None = None,
    token: str | None = None,
) -> dict[str, str]:
    """Spark settings registering Iceberg's REST catalog ``name`` on the server at ``uri``.

    ``properties`` are the entry's other catalog properties (``warehouse``, ``scope``,
    ``oauth2-server-uri``, ``s3.*``, ...), passed through as Iceberg's RESTCatalog takes them.
    With a ``credential`` (``client_id:client_secret``) the token endpoint is named
    explicitly, defaulting to the catalog's own ``/v1/oauth/tokens`` as Icecore's client does
    (Iceberg Java warns when it has to guess). The secret keys are :data:`SECRET_SUFFIXES`:
    keep them out of :func:`build_session` (see :func:`public_conf`).
    """
    prefix = f"spark.sql.catalog.{name}"
    conf = {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": "rest",
        f"{prefix}.uri": uri.rstrip("/"),
    }
    for key, value in properties.items():
        if key not in REST_CLIENT_ONLY and value != "":
            conf[f"{prefix}.{key}"] = value
    if credential is not None:
        conf[f"{prefix}.credential"] = credential
        conf.setdefault(f"{prefix}.oauth2-server-uri", f"{uri.rstrip('/')}/v1/oauth/tokens")
    if token is not None:
        conf[f"{prefix}.token"] = token
    return conf


def public_conf(conf: Mapping[str, str]) -> dict[str, str]:
    """``conf`` without its secrets: what may be given to :func:`build_session`."""
    return {k: v for k, v in conf.items() if not k.endswith(SECRET_SUFFIXES)}


def check_prerequisites() -> SparkSetup:
    """Resolve Java and both jars, raising one clear :class:`PipelineError` for the first gap."""
    return SparkSetup(
        java=find_java(), iceberg_jar=find_iceberg_jar(), sqlite_jar=find_sqlite_jar()
    )


def default_master() -> str:
    """The Spark master: ``ICECORE_SPARK_MASTER`` or ``local[*]``."""
    return os.environ.get("ICECORE_SPARK_MASTER", "local[*]")


def build_session(
    warehouse: str | os.PathLike[str],
    *,
    master: str | None = None,
    hadoop_catalog: bool = False,
    app_name: str = "icecore",
    extra_conf: dict[str, str] | None = None,
    catalog: str | None = None,
) -> SparkSession:
    """Start (or reuse) a SparkSession with Iceberg and Icecore's catalogs.

    Args:
        warehouse: the warehouse folder; the SQL catalog lives in ``<warehouse>/catalog.db``
            and its tables under ``<warehouse>/<namespace>/<table>``.
        master: any Spark master URL; defaults to ``ICECORE_SPARK_MASTER`` or ``local[*]``.
        hadoop_catalog: also register the filesystem catalog on ``<warehouse>/hadoop``.
        app_name: the Spark application name shown in logs and the Spark UI.
        extra_conf: further Spark settings, applied last.
        catalog: a ``postgresql://`` URI to keep the SQL catalog in that database instead of
            ``<warehouse>/catalog.db`` (table files stay under ``warehouse``).

    Returns:
        The session; its catalogs are named :data:`SQL_CATALOG` and :data:`HADOOP_CATALOG`.

    Raises:
        PipelineError: Java, the Iceberg jar or a JDBC driver is missing.
    """
    setup = check_prerequisites()
    postgres_jar = find_postgres_jar(required=catalog is not None and is_postgres_uri(catalog))
    root = Path(warehouse).resolve()
    root.mkdir(parents=True, exist_ok=True)
    # Spark's launcher honours JAVA_HOME; make it match the java we checked.
    os.environ.setdefault("JAVA_HOME", str(Path(setup.java).resolve().parent.parent))
    # Spark picks a non-loopback address when it can; local mode never needs one.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    from pyspark.sql import SparkSession

    conf: dict[str, str] = {
        "spark.jars": ",".join(
            j for j in (setup.iceberg_jar, setup.sqlite_jar, postgres_jar) if j is not None
        ),
        "spark.sql.extensions": (
            "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
        ),
        **jdbc_catalog_conf(SQL_CATALOG, catalog or str(root / "catalog.db"), root),
        "spark.sql.defaultCatalog": SQL_CATALOG,
        # Local-mode friendly settings: few shuffle partitions, no UI, small driver overhead.
        "spark.sql.shuffle.partitions": "4",
        "spark.default.parallelism": "4",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": os.environ.get("ICECORE_SPARK_DRIVER_MEMORY", "4g"),
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.redaction.regex": REDACTION_REGEX,
    }
    if hadoop_catalog:
        conf[f"spark.sql.catalog.{HADOOP_CATALOG}"] = "org.apache.iceberg.spark.SparkCatalog"
        conf[f"spark.sql.catalog.{HADOOP_CATALOG}.type"] = "hadoop"
        conf[f"spark.sql.catalog.{HADOOP_CATALOG}.warehouse"] = str(root / HADOOP_SUBDIR)
    conf.update(extra_conf or {})

    builder = SparkSession.builder.master(master or default_master()).appName(app_name)
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
