"""What the test provider puts in its tokens, and the one grant it adds an ID token to.

:class:`IcecoreValidator` adds ``groups`` (the user's Django groups), ``name``,
``preferred_username`` and ``email`` to the ID token and userinfo, as Keycloak or Okta do
with a groups mapper, and lets every client use the resource-owner password grant, so tests
get tokens without a browser. :class:`IcecoreServer` gives that password grant an ID token
(oauthlib issues one only for the authorization code, implicit, hybrid and refresh grants).
"""

from __future__ import annotations

import json
from typing import Any

from oauth2_provider.oauth2_validators import OAuth2Validator
from oauthlib.oauth2.rfc6749 import errors
from oauthlib.oauth2.rfc6749.grant_types import ResourceOwnerPasswordCredentialsGrant
from oauthlib.openid import Server
from oauthlib.openid.connect.core.grant_types.base import GrantTypeBase


class IcecoreValidator(OAuth2Validator):
    """django-oauth-toolkit's validator with a groups claim and the password grant for all."""

    # Every claim is released with the openid scope; groups is what Icecore's grants match.
    oidc_claim_scope = {**OAuth2Validator.oidc_claim_scope, "groups": "openid"}

    def get_additional_claims(self) -> dict[str, Any]:
        """The claims beyond ``sub`` (request-agnostic, so discovery lists them)."""
        return {
            "name": lambda r: r.user.get_full_name() or r.user.username,
            "preferred_username": lambda r: r.user.username,
            "email": lambda r: r.user.email,
            "groups": lambda r: sorted(g.name for g in r.user.groups.all()),
        }

    def validate_grant_type(
        self, client_id: str, grant_type: str, client: Any, request: Any, *args: Any, **kwargs: Any
    ) -> bool:
        """Each client's own grant, and the password grant for every client (tests only)."""
        if grant_type == "password":
            return True
        return bool(super().validate_grant_type(client_id, grant_type, client, request))


class PasswordGrant(GrantTypeBase):
    """The resource-owner password grant, with an ID token when ``openid`` is asked for.

    oauthlib's password grant calls its token modifiers with the token alone, and the ID
    token needs the request (the user, the client), so the response is built here: validate,
    create the token, add the ID token, save both, as oauthlib's refresh grant does.
    """

    def __init__(self, request_validator: Any = None, **kwargs: Any) -> None:
        self.proxy_target = ResourceOwnerPasswordCredentialsGrant(
            request_validator=request_validator, **kwargs
        )

    def create_token_response(self, request: Any, token_handler: Any) -> tuple[Any, str, int]:
        """The token response, with ``id_token`` beside the access token."""
        target = self.proxy_target
        headers = target._get_default_headers()
        try:
            target.validate_token_request(request)
        except errors.OAuth2Error as e:
            headers.update(e.headers)
            return headers, e.json, e.status_code
        token = token_handler.create_token(request, target.refresh_token)
        token = self.add_id_token(token, token_handler, request)
        target.request_validator.save_token(token, request)
        return headers, json.dumps(token), 200


class IcecoreServer(Server):
    """oauthlib's OpenID Connect server whose password grant also returns an ID token."""

    def __init__(self, request_validator: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(request_validator, *args, **kwargs)
        self.password_grant = PasswordGrant(request_validator)
        self._grant_types["password"] = self.password_grant
