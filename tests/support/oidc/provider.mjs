// A real OAuth 2.1 authorization server for the OAuth tests: the certified `oidc-provider`
// (installed by `make oidc-provider` into .tools/), on loopback, issuing JWT access tokens for
// the resource a client names (RFC 8707 resource indicators).
//
// Test-only shortcuts (never a production set-up): every account logs in without a password
// and every consent is granted at once, so the MCP SDK's own authorization-code flow completes
// without a browser; clients may register dynamically.
//
// Usage: node provider.mjs <settings.json>, where settings.json holds
//   {"port": 0, "keys": [<private JWK>...], "ttl_short": 1}
// Prints "listening <issuer>" once it accepts connections.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const settings = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const require = createRequire(path.join(settings.tools, 'node_modules', 'x.js'));
const { default: Provider } = await import(require.resolve('oidc-provider'));

const issuer = `http://127.0.0.1:${settings.port}`;
const SCOPES = ['agent:*', 'agent:deep/*', 'agent:math_guy', 'openid', 'offline_access'];
const service = {
  grant_types: ['client_credentials'], redirect_uris: [], response_types: [],
  token_endpoint_auth_method: 'client_secret_basic', scope: SCOPES.join(' '),
};

const provider = new Provider(issuer, {
  jwks: { keys: settings.keys },
  clients: [
    { client_id: 'service', client_secret: 'service-secret', ...service },
    { client_id: 'short-lived', client_secret: 'short-secret', ...service },
  ],
  scopes: SCOPES,
  clientDefaults: { grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
                    token_endpoint_auth_method: 'none' },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    registration: { enabled: true },
    resourceIndicators: {
      enabled: true,
      // A client that names no resource gets a token for no resource server (opaque): the
      // tests always name one, as MCP clients must.
      defaultResource: () => undefined,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resourceIndicator, client) => ({
        scope: SCOPES.filter((s) => s.startsWith('agent:')).join(' '),
        audience: resourceIndicator,
        accessTokenTTL: client.clientId === 'short-lived' ? settings.ttl_short : 600,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
  pkce: { required: () => true },
  findAccount: (ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  clientBasedCORS: () => true,
});

// The non-interactive login and consent: log "test-user" in, grant what is asked.
provider.use(async (ctx, next) => {
  if (!ctx.path.startsWith('/interaction/')) return next();
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  let result;
  if (details.prompt.name === 'login') {
    result = { login: { accountId: 'test-user' } };
  } else {
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
    const missing = details.prompt.details;
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes || {})) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
    result = { consent: { grantId: await grant.save() } };
  }
  ctx.respond = false;
  await provider.interactionFinished(ctx.req, ctx.res, result, { mergeWithLastSubmission: true });
});

const server = provider.listen(settings.port, '127.0.0.1', () => {
  console.log(`listening ${issuer}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
