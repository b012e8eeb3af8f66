"""A real OpenID Connect provider for the tests: django-oauth-toolkit in a Django project.

``settings``/``urls``/``claims`` are the project the provider subprocess runs
(``python -m tests.oidc_provider.serve``); :mod:`tests.oidc_provider.fixture` starts it on
127.0.0.1 for the ``oidc_provider`` session fixture. Nothing here is imported by the pytest
process except the fixture module, which uses only the standard library and ``cryptography``.
"""
