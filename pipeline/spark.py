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
(:func:`rest_catalog_conf`, :func:`resolve_rest_catalog`); given a REST catalog as
``catalog``, :func:`build_session` registers it as ``icecore`` instead of the JdbcCatalog.

Secrets (a REST credential or token, a PostgreSQL password) never reach a command line:
PySpark hands the builder's settings to ``spark-submit`` as ``--conf`` arguments (visible
to every user in the process list, and kept in the SparkConf that Spark's UI shows), so
:func:`build_session` gives the builder only :func:`public_conf` and sets the secrets on the
running session (``spark.conf.set``, in-process) before any catalog is first used;
``spark.redaction.regex`` also hides ``credential`` keys from Spark's UI and logs.

Missing prerequisites (Java, the jar, the JDBC driver) raise :class:`PipelineError` with one
sentence that says what to install, before a JVM is started.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from icecore.catalog.postgres_uri import PostgresTarget, is_postgres_uri
from icecore.catalog.rest import CREDENTIAL_ENV, TOKEN_ENV, iceberg_rest_properties
from icecore.catalog.sql import sqlite_jdbc_properties
from icecore.config import is_catalog_name, is_rest_entry, load_config
from icecore.errors import Unsupported

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
JAR_PACKAGE_PYTHON_LIMIT = (3, 13)
"""The first Python that ``snowpark-connect-deps-iceberg`` 1.0.x refuses (its Requires-Python)."""
INSTALL_HINT = "apt-get install openjdk-17-jre-headless libxerial-sqlite-jdbc-java"

SECRET_SUFFIXES = (".credential", ".token", ".jdbc.password")
"""Catalog settings that hold a secret: set on the running session, never on a command line."""
REDACTION_REGEX = "(?i)secret|password|token|access[.]?key|credential"
"""Spark's default ``spark.redaction.regex`` plus ``credential`` (a REST catalog's secret)."""


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
        raise PipelineError(missing_jar_sentence(sys.version_info[:2]))
    jar = Path(spec.origin).parent / "jars" / ICEBERG_JAR_NAME
    if not jar.is_file():
        raise PipelineError(
            f"The installed {ICEBERG_PACKAGE} has no {ICEBERG_JAR_NAME}; reinstall "
            f"snowpark-connect-deps-iceberg==1.0.2 or set ICECORE_ICEBERG_JAR to the jar's path."
        )
    return str(jar)


def missing_jar_sentence(python: tuple[int, int]) -> str:
    """Why the jar's package is absent on ``python`` (major, minor), and what to do instead.

    ``snowpark-connect-deps-iceberg`` declares ``Requires-Python <3.13`` (a data-only package:
    the jar itself runs on any Python), so requirements.txt installs it below 3.13 only and a
    3.13 user must name a jar they have; telling them to install the requirements would not help.
    """
    if python >= JAR_PACKAGE_PYTHON_LIMIT:
        return (
            f"The Iceberg Spark runtime jar's package snowpark-connect-deps-iceberg installs on "
            f"Python 3.12 and older only (this is Python {python[0]}.{python[1]}): set "
            f"ICECORE_ICEBERG_JAR to the path of {ICEBERG_JAR_NAME}, found in that package "
            f"installed by a Python 3.11 or 3.12."
        )
    return (
        "The Iceberg Spark runtime jar was not found: install the pinned requirements "
        "(pip install -r requirements.txt, which has snowpark-connect-deps-iceberg==1.0.2) "
        "or set ICECORE_ICEBERG_JAR to the jar's path."
    )


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


def spark_catalog_conf(name: str, properties: Mapping[str, str]) -> dict[str, str]:
    """Spark settings registering Iceberg's catalog ``name`` with Iceberg catalog ``properties``.

    The properties are what :meth:`icecore.catalog.base.Catalog.iceberg_catalog` gives (or the
    functions below build for a catalog not opened yet): ``type``, ``uri``, ``warehouse``,
    ``jdbc.*``, ``credential``, ... The secret keys are :data:`SECRET_SUFFIXES`: keep them out
    of :func:`build_session` (see :func:`public_conf`).
    """
    prefix = f"spark.sql.catalog.{name}"
    return {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        **{f"{prefix}.{key}": value for key, value in properties.items()},
    }


def jdbc_catalog_conf(name: str, catalog: str, warehouse: str | os.PathLike[str]) -> dict[str, str]:
    """Spark settings registering Iceberg's JdbcCatalog ``name`` on a catalog URI.

    ``catalog`` is a ``postgresql://`` URI (credentials from it, ``PGPASSWORD`` or
    ``~/.pgpass``; the password goes into ``jdbc.password``, a key Spark's default
    ``spark.redaction.regex`` hides from its UI and logs) or a SQLite database file. The
    catalog's ``catalog_name`` in ``iceberg_tables`` is ``name``.
    """
    if not is_postgres_uri(catalog):
        return spark_catalog_conf(name, sqlite_jdbc_properties(catalog, warehouse))
    try:
        properties = PostgresTarget.parse(catalog).jdbc_properties()
    except Unsupported as e:
        raise PipelineError(str(e)) from e
    return spark_catalog_conf(name, {**properties, "warehouse": str(Path(warehouse).resolve())})


def rest_catalog_conf(
    name: str,
    uri: str,
    properties: Mapping[str, str],
    *,
    credential: str | None = None,
    token: str | None = None,
) -> dict[str, str]:
    """Spark settings registering Iceberg's REST catalog ``name`` on the server at ``uri``.

    The properties are :func:`icecore.catalog.rest.iceberg_rest_properties`'.
    """
    return spark_catalog_conf(
        name, iceberg_rest_properties(uri, properties, credential=credential, token=token)
    )


def public_conf(conf: Mapping[str, str]) -> dict[str, str]:
    """``conf`` without its secrets: what may be given to a ``SparkSession`` builder."""
    return {k: v for k, v in conf.items() if not k.endswith(SECRET_SUFFIXES)}


def secret_conf(conf: Mapping[str, str]) -> dict[str, str]:
    """Only the secrets of ``conf``: what is set on the running session instead."""
    return {k: v for k, v in conf.items() if k.endswith(SECRET_SUFFIXES)}


def is_rest_catalog(catalog: str) -> bool:
    """Whether ``catalog`` is an ``http(s)://`` URI or names a REST entry of icecore.toml.

    Raises:
        ValidationError: ``catalog`` is a name and icecore.toml is malformed.
    """
    text = catalog.strip()
    if text.lower().startswith(("http://", "https://")):
        return True
    if not is_catalog_name(text):
        return False
    entry = load_config().catalogs.get(text)
    return entry is not None and is_rest_entry(entry.properties)


@dataclass(frozen=True, slots=True)
class RestCatalogRef:
    """A REST catalog as Spark will reach it; the secrets stay out of ``repr``.

    Attributes:
        uri: the server's base URI.
        properties: the icecore.toml entry's properties (empty for a bare URI).
        credential: ``client_id:client_secret``, if any.
        token: a bearer token, if any.
    """

    uri: str
    properties: Mapping[str, str]
    credential: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)

    def conf(self, name: str) -> dict[str, str]:
        """Spark settings registering this catalog as ``name`` (secrets included)."""
        return rest_catalog_conf(
            name, self.uri, self.properties, credential=self.credential, token=self.token
        )


def resolve_rest_catalog(catalog: str) -> RestCatalogRef:
    """A REST entry of icecore.toml (by name) or a bare REST URI, with its secrets.

    The secrets are found as Icecore's client finds them: an entry's from the variables it
    names (``credential-env``/``token-env``) or its own ``credential``/``token``; a bare
    URI's from ``ICECORE_REST_CREDENTIAL`` / ``ICECORE_REST_TOKEN``.

    Raises:
        ValidationError: ``catalog`` is a name and icecore.toml is malformed.
    """
    entries = load_config().catalogs if is_catalog_name(catalog) else {}
    entry = entries.get(catalog)
    properties = dict(entry.properties) if entry is not None else {}
    uri = entry.uri if entry is not None else catalog
    credential, token = (
        _rest_secret(properties, key, None if entry is not None else env)
        for key, env in (("credential", CREDENTIAL_ENV), ("token", TOKEN_ENV))
    )
    return RestCatalogRef(uri, properties, credential, token)


def _rest_secret(properties: Mapping[str, str], key: str, default_env: str | None) -> str | None:
    env = properties.get(f"{key}-env") or default_env
    value = os.environ.get(env, "").strip() if env else ""
    return value or properties.get(key, "").strip() or None


def catalog_conf(name: str, catalog: str, warehouse: str | os.PathLike[str]) -> dict[str, str]:
    """Spark settings registering ``catalog`` as Spark's catalog ``name``, secrets included.

    A REST catalog (:func:`is_rest_catalog`) becomes Spark's ``type=rest`` catalog (its
    server decides where tables live); anything else is Iceberg's JdbcCatalog
    (:func:`jdbc_catalog_conf`) with its tables under ``warehouse``.
    """
    if is_rest_catalog(catalog):
        return resolve_rest_catalog(catalog).conf(name)
    return jdbc_catalog_conf(name, catalog, warehouse)


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
        extra_conf: further Spark settings, applied last (secrets among them, like the
            catalog's own, are set on the running session, never on the command line).
        catalog: a ``postgresql://`` URI to keep the SQL catalog in that database instead of
            ``<warehouse>/catalog.db`` (table files stay under ``warehouse``); or a REST
            catalog (an ``http(s)://`` URI or the name of a REST entry of icecore.toml),
            registered as ``icecore`` through Spark's ``type=rest`` catalog.

    Returns:
        The session; its catalogs are named :data:`SQL_CATALOG` and :data:`HADOOP_CATALOG`.

    Raises:
        PipelineError: Java, the Iceberg jar or a JDBC driver is missing.
        ValidationError: ``catalog`` is a name and icecore.toml is malformed.
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
        **catalog_conf(SQL_CATALOG, catalog or str(root / "catalog.db"), root),
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
    for key, value in public_conf(conf).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    # Catalogs load on first use, so secrets set now are in place before any connection.
    for key, value in secret_conf(conf).items():
        session.conf.set(key, value)
    return session
