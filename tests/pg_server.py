"""A real PostgreSQL server for the tests: ``initdb`` into a temporary folder, ``pg_ctl start``.

Debian's ``postgresql`` package provides the binaries (``/usr/lib/postgresql/<v>/bin``).
The server listens on 127.0.0.1 and a free port, with its unix socket inside the temporary
folder; TCP connections need a password (scram-sha-256), so a wrong password is refused as
it would be in production. PostgreSQL refuses to run as root: as root the server runs as the
``postgres`` user the Debian package creates. :meth:`PgServer.stop` and :meth:`PgServer.start`
let fault tests take the server away in the middle of a commit.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

SUPERUSER = "icecore"


def _bindir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb is None:
        raise RuntimeError("PostgreSQL is not installed: apt-get install postgresql")
    return Path(initdb).resolve().parent


@dataclass
class PgServer:
    """One PostgreSQL cluster in a temporary folder, on 127.0.0.1:``port``."""

    port: int
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="icecore-pg-")))
    password: str = field(default_factory=lambda: f"pw-{uuid.uuid4().hex[:12]}")
    user: str = SUPERUSER

    @property
    def data(self) -> Path:
        return self.root / "data"

    def uri(self, database: str, *, password: bool = True) -> str:
        secret = f":{self.password}" if password else ""
        return f"postgresql://{self.user}{secret}@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str) -> None:
        command = [str(_bindir() / args[0]), *args[1:]]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=120)

    def init(self) -> None:
        """Create the cluster: superuser ``icecore`` with a password, scram on TCP."""
        pwfile = self.root / "pwfile"
        pwfile.write_text(self.password + "\n")
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
            shutil.chown(pwfile, "postgres")
        self.root.chmod(0o700)
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            self.user,
            f"--pwfile={pwfile}",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "-E",
            "UTF8",
            "--no-sync",
        )

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c max_connections=100"
        )
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-o",
            options,
            "-w",
            "-l",
            str(self.root / "log"),
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def create_database(self, name: str) -> str:
        """A fresh database; returns its URI with the password."""
        import psycopg

        with psycopg.connect(self.uri("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.uri(name)

    def remove(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


def with_catalog_tables(uri: str) -> str:
    """Create the JdbcCatalog tables (schema V0, as PyIceberg's SqlCatalog creates them)."""
    import psycopg

    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE iceberg_tables (catalog_name varchar(255) NOT NULL, "
            "table_namespace varchar(255) NOT NULL, table_name varchar(255) NOT NULL, "
            "metadata_location varchar(1000), previous_metadata_location varchar(1000), "
            "PRIMARY KEY (catalog_name, table_namespace, table_name))"
        )
        conn.execute(
            "CREATE TABLE iceberg_namespace_properties (catalog_name varchar(255) NOT NULL, "
            "namespace varchar(255) NOT NULL, property_key varchar(255) NOT NULL, "
            "property_value varchar(1000), PRIMARY KEY (catalog_name, namespace, property_key))"
        )
    return uri
