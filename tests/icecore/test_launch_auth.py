"""``icecore app`` and ``scripts/serve.sh`` with ``[auth]``: Streamlit's auth secrets, generated.

With ``[auth]`` in icecore.toml the command passes Streamlit a secrets file it wrote itself
(``--secrets.files``): a 0600 file in a private folder naming the issuer's discovery document,
the client, its secret from the environment, the redirect URI and PKCE. A missing secret is
one sentence and exit 1, naming the variable. Without ``[auth]`` nothing changes. That the
running app's authorization request carries a PKCE challenge is checked against the real
provider in tests/ui/test_browser_sign_in.py.
"""

from __future__ import annotations

import stat
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest

from icecore.launch import AppUnavailable, app_command

REPO = Path(__file__).resolve().parents[2]
SECRET_ENV = "TEST_ICECORE_OIDC_SECRET"


@pytest.fixture(autouse=True)
def _private_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The generated secrets go under the test's own folder (removed with it)."""
    folder = tmp_path / "temp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))


def _config(tmp_path: Path, extra: str = "") -> Path:
    config = tmp_path / "icecore.toml"
    config.write_text(
        "[auth]\n"
        'issuer = "https://idp.example/realms/data/"\n'
        'client_id = "icecore-app"\n'
        f'client_secret_env = "{SECRET_ENV}"\n' + extra
    )
    return config


def _secrets(argv: list[str]) -> Path:
    return Path(argv[argv.index("--secrets.files") + 1])


def test_auth_secrets_are_generated_from_icecore_toml(tmp_path: Path) -> None:
    env = {"ICECORE_CONFIG": str(_config(tmp_path)), SECRET_ENV: 's3cr"et\\x'}
    command = app_command("sqlite:///c.db", port=8765, address="127.0.0.1", environ=env)
    path = _secrets(command.argv)
    assert path.parent.parent == Path(tempfile.gettempdir())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    auth = tomllib.loads(path.read_text())["auth"]
    assert auth["server_metadata_url"] == (
        "https://idp.example/realms/data/.well-known/openid-configuration"
    )
    assert auth["client_id"] == "icecore-app"
    assert auth["client_secret"] == 's3cr"et\\x'
    assert auth["redirect_uri"] == "http://127.0.0.1:8765/oauth2callback"
    assert auth["client_kwargs"] == {
        "scope": "openid profile email",
        "code_challenge_method": "S256",
    }
    assert len(auth["cookie_secret"]) >= 32
    again = tomllib.loads(_secrets(app_command("x", environ=env).argv).read_text())["auth"]
    assert again["cookie_secret"] != auth["cookie_secret"], "random per start"
    assert s3cret_not_in(command.argv, command.url)


def s3cret_not_in(*texts: object) -> bool:
    """Whether no text holds the client secret (it is only in the 0600 file)."""
    return all("s3cr" not in str(t) for t in texts)


def test_configured_redirect_uri_scope_and_cookie_secret_are_used(tmp_path: Path) -> None:
    extra = (
        'redirect_uri = "https://icecore.example/oauth2callback"\n'
        'cookie_secret_env = "TEST_COOKIE"\n'
        'scope = "openid profile email groups"\n'
    )
    env = {
        "ICECORE_CONFIG": str(_config(tmp_path, extra)),
        SECRET_ENV: "s",
        "TEST_COOKIE": "c" * 40,
    }
    command = app_command("x", port=80, address="0.0.0.0", environ=env)
    auth = tomllib.loads(_secrets(command.argv).read_text())["auth"]
    assert auth["redirect_uri"] == "https://icecore.example/oauth2callback"
    assert auth["cookie_secret"] == "c" * 40
    assert auth["client_kwargs"]["scope"] == "openid profile email groups"
    del env["TEST_COOKIE"]
    with pytest.raises(AppUnavailable, match="TEST_COOKIE, which is not set"):
        app_command("x", environ=env)


def test_every_interface_gets_a_loopback_redirect_uri(tmp_path: Path) -> None:
    env = {"ICECORE_CONFIG": str(_config(tmp_path)), SECRET_ENV: "s"}
    command = app_command("x", port=8501, address="0.0.0.0", environ=env)
    auth = tomllib.loads(_secrets(command.argv).read_text())["auth"]
    assert auth["redirect_uri"] == "http://127.0.0.1:8501/oauth2callback"


def test_without_auth_no_secrets_are_passed(tmp_path: Path) -> None:
    env = {"ICECORE_CONFIG": str(tmp_path / "absent.toml")}
    assert "--secrets.files" not in app_command("x", environ=env).argv


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "PYTHONPATH": str(REPO),
        "TMPDIR": str(tempfile.gettempdir()),
    }
    return subprocess.run(
        args,
        cwd=cwd,
        env={**base, "HOME": str(cwd), **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_icecore_app_without_the_client_secret_is_one_sentence_and_exit_1(
    tmp_path: Path,
) -> None:
    env = {"ICECORE_CONFIG": str(_config(tmp_path))}
    result = _run([sys.executable, "-m", "icecore", "app", "--catalog", "x"], tmp_path, env)
    assert result.returncode == 1
    assert result.stderr == (
        "error: [auth] needs the OpenID Connect client secret in the environment variable "
        f"{SECRET_ENV}, which is not set.\n"
    )
    assert not result.stdout


def test_serve_sh_without_the_client_secret_stops_before_serving(tmp_path: Path) -> None:
    env = {"ICECORE_CONFIG": str(_config(tmp_path)), "ICECORE_CATALOG": str(tmp_path)}
    result = _run([str(REPO / "scripts" / "serve.sh")], tmp_path, env)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "error: [auth] needs the OpenID Connect client secret in the environment variable "
        f"{SECRET_ENV}, which is not set."
    ]


def test_python_m_icecore_launch_prints_the_secrets_argument(tmp_path: Path) -> None:
    env = {"ICECORE_CONFIG": str(_config(tmp_path)), SECRET_ENV: "s"}
    result = _run([sys.executable, "-m", "icecore.launch", "--port", "9999"], tmp_path, env)
    assert result.returncode == 0, result.stderr
    flag, path = result.stdout.splitlines()
    assert flag == "--secrets.files"
    auth = tomllib.loads(Path(path).read_text())["auth"]
    assert auth["redirect_uri"] == "http://127.0.0.1:9999/oauth2callback"
    absent = {"ICECORE_CONFIG": str(tmp_path / "absent.toml")}
    none = _run([sys.executable, "-m", "icecore.launch"], tmp_path, absent)
    assert none.returncode == 0 and none.stdout == ""


def test_sign_in_without_authlib_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    from icecore import launch
    from icecore.launch import MissingExtra

    real = importlib.util.find_spec
    monkeypatch.setattr(
        launch.importlib.util,
        "find_spec",
        lambda name, package=None: None if name == "authlib" else real(name, package),
    )
    env = {"ICECORE_CONFIG": str(_config(tmp_path)), SECRET_ENV: "s"}
    with pytest.raises(MissingExtra, match=r'pip install "icecore\[app\]"'):
        app_command("x", environ=env)
    assert (
        "--secrets.files"
        not in app_command("x", environ={"ICECORE_CONFIG": str(tmp_path / "absent.toml")}).argv
    )
