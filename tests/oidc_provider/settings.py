"""Django settings of the test OpenID Connect provider (django-oauth-toolkit, OIDC enabled).

Everything a run varies comes from environment variables the fixture sets: the issuer URL
(``OIDC_ISS_ENDPOINT``, so the discovery document's ``issuer`` is exactly the URL the tests
configure), the RSA key the ID tokens are signed with (the tests hold it, to forge tokens),
the SQLite file and Django's secret key.
"""

from __future__ import annotations

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent

SECRET_KEY = os.environ["ICECORE_TEST_OIDC_DJANGO_SECRET"]
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = "tests.oidc_provider.urls"
USE_TZ = True

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oauth2_provider",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [str(HERE / "templates")],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
            ]
        },
    }
]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ["ICECORE_TEST_OIDC_DB"],
        "OPTIONS": {"timeout": 20},
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# Test users only: a fast hasher keeps startup and each sign-in in milliseconds (PBKDF2's
# default iterations cost about half a second per password on a shared test machine).
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
LOGIN_URL = "/accounts/login/"
# Plain-HTTP loopback: the session and CSRF cookies must travel without TLS.
SESSION_COOKIE_SECURE = False
CSRF_COOKIE_SECURE = False

OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_ISS_ENDPOINT": os.environ["ICECORE_TEST_OIDC_ISSUER"],
    "OIDC_RSA_PRIVATE_KEY": os.environ["ICECORE_TEST_OIDC_RSA_PRIVATE_KEY"],
    "OAUTH2_VALIDATOR_CLASS": "tests.oidc_provider.claims.IcecoreValidator",
    "OIDC_SERVER_CLASS": "tests.oidc_provider.claims.IcecoreServer",
    "PKCE_REQUIRED": True,
    # S256 only: the plain method is refused (RFC 9700 section 2.1.1).
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "SCOPES": {
        "openid": "OpenID Connect",
        "profile": "Name and user name",
        "email": "E-mail address",
    },
    "DEFAULT_SCOPES": ["openid"],
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https"],
    "ID_TOKEN_EXPIRE_SECONDS": int(os.environ.get("ICECORE_TEST_OIDC_TOKEN_SECONDS", "3600")),
    "ACCESS_TOKEN_EXPIRE_SECONDS": int(os.environ.get("ICECORE_TEST_OIDC_TOKEN_SECONDS", "3600")),
    "OIDC_RP_INITIATED_LOGOUT_ENABLED": True,
    "OIDC_RP_INITIATED_LOGOUT_ALWAYS_PROMPT": False,
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler"}},
    "loggers": {
        "django": {"handlers": ["stderr"], "level": "WARNING"},
        # One line per request: tests count the JWKS fetches a verifier makes from the log.
        "django.server": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
    },
}
