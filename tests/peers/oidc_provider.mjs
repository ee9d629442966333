// A real authorization server for the resource-server tests: npm `oidc-provider` (pinned in
// install.sh) on 127.0.0.1, issuing JWT access tokens (ES256, typ at+jwt) through
// client_credentials with resource indicators, and opaque ones checked by token
// introspection.
//
//   node oidc_provider.mjs OIDC_PROVIDER_DIR RESOURCE [OTHER_RESOURCE]
//
// Client `svc` / `svc-secret` (client_credentials). Audiences: RESOURCE (ES256 tokens of
// 120 s), RESOURCE + "/short" (ES256, 1 s, to see a token expire), RESOURCE + "/opaque"
// (opaque tokens of 120 s, for introspection) and OTHER_RESOURCE (RS256, 120 s, another
// audience); any other `resource` is invalid_target. Token introspection (RFC 7662) is on,
// for the resource server's client `rs` / `rs-secret` (client_secret_basic). The public
// native client `pyapp` (redirect URI http://127.0.0.1:9/callback) logs in with the
// authorization code and PKCE through the development interactions (a login form taking any
// login, then a consent form), which tests/peers/py_oauth_client.py posts in place of a
// person. Scopes `mcp:read
// mcp:write`. Prints `ISSUER <url>` on stdout once it listens; serves until stdin ends.

import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [dir, resource, other] = process.argv.slice(2);
if (!dir || !resource) {
  console.error('usage: oidc_provider.mjs OIDC_PROVIDER_DIR RESOURCE [OTHER_RESOURCE]');
  process.exit(2);
}
// stdout carries the ISSUER line alone: the test reads it and closes the pipe, so the
// provider's notices (console.info, e.g. on a first introspection) go to stderr instead of
// failing the process with EPIPE.
console.info = console.log = (...args) => console.error(...args);
const from = (...parts) => import(pathToFileURL(path.join(...parts)).href);
const { Provider, errors } = await from(dir, 'lib', 'index.js');
const jose = await from(dir, '..', 'jose', 'dist', 'webapi', 'index.js');

// The short-lived audience: tokens for it expire after one second.
const SHORT = `${resource}/short`;
// The opaque audience: its tokens are random strings only introspection can read.
const OPAQUE = `${resource}/opaque`;
const ttl = { [resource]: 120, [SHORT]: 1, [OPAQUE]: 120 };
if (other) ttl[other] = 120;

const jwk = async (alg, kid) => {
  const { privateKey } = await jose.generateKeyPair(alg, { extractable: true });
  return { ...(await jose.exportJWK(privateKey)), alg, kid, use: 'sig' };
};

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  jwks: { keys: [await jwk('ES256', 'es1'), await jwk('RS256', 'rs1')] },
  clients: [
    {
      client_id: 'svc',
      client_secret: 'svc-secret',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
    },
    {
      client_id: 'rs',
      client_secret: 'rs-secret',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_basic',
    },
    {
      client_id: 'pyapp',
      application_type: 'native',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code'],
      response_types: ['code'],
      redirect_uris: ['http://127.0.0.1:9/callback'],
    },
  ],
  features: {
    devInteractions: { enabled: true },
    // DPoP stays offered (oidc-provider's default): toolwire's resource server challenges
    // `Bearer` alone, so its client must not bind the token (tests/server/interop_oidc.rs).
    dPoP: { enabled: true },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async () => resource,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, indicator) => {
        if (!(indicator in ttl)) throw new errors.InvalidTarget();
        if (indicator === OPAQUE) {
          return { scope: 'mcp:read mcp:write', accessTokenFormat: 'opaque', accessTokenTTL: 120 };
        }
        const alg = indicator === other ? 'RS256' : 'ES256';
        return {
          scope: 'mcp:read mcp:write',
          accessTokenFormat: 'jwt',
          accessTokenTTL: ttl[indicator],
          jwt: { sign: { alg } },
        };
      },
    },
  },
});
server.on('request', provider.callback());
process.stdout.write(`ISSUER ${issuer}\n`);
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
