"""Run the test OpenID Connect provider: migrate, create the users and clients, serve.

``python -m tests.oidc_provider.serve PORT`` from the repository root, with the environment
:func:`tests.oidc_provider.fixture.start_provider` sets. One process does all three, so
Django starts once (about a second); it serves with Django's threaded development server
on 127.0.0.1 until it is terminated.
"""

from __future__ import annotations

import os
import sys


def _seed() -> None:
    from django.contrib.auth.models import Group, User
    from oauth2_provider.models import Application

    from tests.oidc_provider.fixture import CLIENTS, USERS

    for spec in USERS.values():
        user = User.objects.create_user(
            spec.username,
            email=spec.email,
            password=spec.password,
            first_name=spec.first_name,
            last_name=spec.last_name,
        )
        group, _ = Group.objects.get_or_create(name=spec.group)
        user.groups.add(group)
    for client_id, secret_env in CLIENTS.items():
        Application.objects.create(
            client_id=client_id,
            client_secret=os.environ[secret_env],
            hash_client_secret=True,
            name=client_id,
            client_type=Application.CLIENT_CONFIDENTIAL,
            authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
            redirect_uris="",
            post_logout_redirect_uris="",
            algorithm=Application.RS256_ALGORITHM,
            skip_authorization=True,
        )


def main() -> None:
    """Migrate into the (fresh) SQLite file, seed it, and serve on 127.0.0.1:PORT."""
    port = int(sys.argv[1])
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.oidc_provider.settings")
    import django
    from django.core.management import call_command
    from django.core.servers.basehttp import WSGIServer, run
    from django.core.wsgi import get_wsgi_application

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)
    _seed()
    run(
        "127.0.0.1", port, get_wsgi_application(), ipv6=False, threading=True, server_cls=WSGIServer
    )


if __name__ == "__main__":
    main()
