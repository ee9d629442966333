#!/usr/bin/env python3
"""The official Python SDK's client (PyPI `mcp` 2.x) logging in to a protected `toolwire serve`
with its OAuth provider (`mcp.client.auth.OAuthClientProvider`): authorization code with PKCE
(S256) and the resource indicator, against npm `oidc-provider` (tests/peers/oidc_provider.mjs)
with its development interactions, which this script drives in place of a person: it follows
the authorization redirect, posts the login form (any login, here `py-user`) and the consent
form, and hands the code, state and iss of the final redirect back to the SDK. The client is
oidc-provider's pre-registered public client `pyapp` (no secret, loopback redirect URI), so no
dynamic registration takes part.

Usage: py_oauth_client.py URL
  URL  the protected MCP endpoint (toolwire serve --http with --auth-issuer)

Lists the tools, calls mcp__demo__echo, and prints `ok: ...` per step, then `PYOAUTH PASSED`;
exits 1 at the first failure. No token or code is printed.
"""
import re
import sys
from html import unescape
from urllib.parse import parse_qs, urljoin, urlparse

import anyio
import httpx2

from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata

REDIRECT = "http://127.0.0.1:9/callback"


def fail(message):
    print(f"FAILED: {message}", flush=True)
    sys.exit(1)


class Memory(TokenStorage):
    """Tokens in memory; the pre-registered client."""

    def __init__(self):
        self.tokens = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return OAuthClientInformationFull(
            client_id="pyapp",
            redirect_uris=[REDIRECT],
            token_endpoint_auth_method="none",
            grant_types=["authorization_code"],
            response_types=["code"],
        )

    async def set_client_info(self, client_info):
        fail("the client registered itself, though it is pre-registered")


class Person:
    """Stands in for the person at the browser: oidc-provider's development interactions."""

    def __init__(self):
        self.result = None
        self.forms = []

    async def redirect(self, authorization_url):
        query = parse_qs(urlparse(authorization_url).query)
        for wanted in ["code_challenge", "state", "resource"]:
            if wanted not in query:
                fail(f"the authorization request has no {wanted}")
        if query.get("code_challenge_method") != ["S256"]:
            fail("the authorization request is not PKCE S256")
        print(f"ok: authorization request with PKCE S256 for resource {query['resource'][0]}", flush=True)
        async with httpx2.AsyncClient(follow_redirects=False, timeout=30) as browser:
            url, form = authorization_url, None
            for _ in range(16):
                answer = await (browser.post(url, data=form) if form else browser.get(url))
                form = None
                if answer.status_code in (302, 303):
                    url = urljoin(url, answer.headers["location"])
                    if url.startswith(REDIRECT):
                        params = parse_qs(urlparse(url).query)
                        if "error" in params:
                            fail(f"the authorization server refused: {params['error']}")
                        self.result = AuthorizationCodeResult(
                            code=params["code"][0],
                            state=params.get("state", [None])[0],
                            iss=params.get("iss", [None])[0],
                        )
                        return
                    continue
                if answer.status_code != 200:
                    fail(f"the authorization server answered HTTP {answer.status_code} at {url}")
                action = re.search(r'<form[^>]*action="([^"]+)"', answer.text)
                prompt = re.search(r'name="prompt" value="([^"]+)"', answer.text)
                if not action or not prompt:
                    fail(f"no interaction form at {url}")
                prompt = prompt.group(1)
                self.forms.append(prompt)
                form = {"prompt": prompt}
                if prompt == "login":
                    form.update({"login": "py-user", "password": "any"})
                url = urljoin(url, unescape(action.group(1)))
            fail("the authorization did not end at the redirect URI")

    async def callback(self):
        if self.result is None:
            fail("no authorization code")
        print(f"ok: the person posted {' and '.join(self.forms)}; code received", flush=True)
        return self.result


async def main(url):
    person = Person()
    storage = Memory()
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="toolwire py test",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=person.redirect,
        callback_handler=person.callback,
    )
    transport = streamable_http_client(url, http_client=create_mcp_http_client(auth=provider))
    async with Client(transport) as client:
        print(f"ok: connected, protocol {client.protocol_version}", flush=True)
        tools = await client.list_tools()
        names = sorted(tool.name for tool in tools.tools)
        if "mcp__demo__echo" not in names:
            fail(f"mcp__demo__echo not listed: {names}")
        print("ok: tools listed", flush=True)
        echo = await client.call_tool("mcp__demo__echo", {"message": "hello from python"})
        text = "".join(block.text for block in echo.content if getattr(block, "type", "") == "text")
        if "hello from python" not in text or echo.is_error:
            fail(f"echo answered {echo}")
        print("ok: echo through the protected gateway", flush=True)
    if storage.tokens is None:
        fail("no token was stored")
    print(f"ok: token type {storage.tokens.token_type}, scope {storage.tokens.scope}", flush=True)
    print("PYOAUTH PASSED", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    anyio.run(main, sys.argv[1])
