"""The provider's URLs: django-oauth-toolkit and Django's login form.

django-oauth-toolkit sits at the root, so the issuer is the server's origin; the
authorization endpoint sends visitors who are not signed in to the login form.
"""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import include, path

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("oauth2_provider.urls", namespace="oauth2_provider")),
]
