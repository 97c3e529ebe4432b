// A certified OpenID provider (panva's oidc-provider) for the tests of
// swarm serve as an OAuth 2.1 protected resource. It listens on a loopback
// port and prints "issuer <URL>" once ready. Clients:
//   ci / ci-secret         client_credentials; scopes swarm:* and swarm:<id>
//   swarm / swarm-secret   the resource server, for introspection
//   cli                    a public native client: authorization code with
//                          PKCE to a loopback redirect, refresh tokens; the
//                          person "alice" logs in and consents at once
//                          (/interaction/{uid}), as a browser would after
//                          the person said yes
// Access tokens are JWTs (ES256) for the resource named in the token
// request's resource parameter, or opaque ones when OPAQUE=1.
import { generateKeyPairSync } from 'node:crypto';
import Provider from 'oidc-provider';

const port = Number(process.env.PORT || 0);
const opaque = process.env.OPAQUE === '1';
const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: process.env.KID || 'k1', alg: 'ES256', use: 'sig' };
const scopes = (process.env.SCOPES || 'swarm:*').split(' ');

const server = (await import('node:http')).createServer();
server.listen(port, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [
      { client_id: 'ci', client_secret: 'ci-secret', grant_types: ['client_credentials'], redirect_uris: [], response_types: [], id_token_signed_response_alg: 'ES256' },
      { client_id: 'swarm', client_secret: 'swarm-secret', grant_types: [], redirect_uris: [], response_types: [], id_token_signed_response_alg: 'ES256' },
      {
        client_id: 'cli', application_type: 'native', token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
        redirect_uris: ['http://127.0.0.1/callback'], id_token_signed_response_alg: 'ES256',
      },
    ],
    ttl: { AccessToken: Number(process.env.ACCESS_TTL || 3600) },
    issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
    jwks: { keys: [jwk] },
    scopes,
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      deviceFlow: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource) => ({
          scope: scopes.join(' '),
          audience: resource,
          accessTokenTTL: Number(process.env.ACCESS_TTL || 3600),
          accessTokenFormat: opaque ? 'opaque' : 'jwt',
          jwt: { sign: { alg: 'ES256' } },
        }),
      },
    },
  });
  const callback = provider.callback();
  server.on('request', async (req, res) => {
    if (!req.url.startsWith('/interaction/')) return callback(req, res);
    try {
      const details = await provider.interactionDetails(req, res);
      if (details.prompt.name === 'login') {
        return await provider.interactionFinished(req, res, { login: { accountId: 'alice' } }, { mergeWithLastSubmission: false });
      }
      const grant = new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
      const missing = details.prompt.details;
      if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
      for (const [resource, scopes] of Object.entries(missing.missingResourceScopes ?? {})) grant.addResourceScope(resource, scopes.join(' '));
      const grantId = await grant.save();
      await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
    } catch (err) {
      res.statusCode = 500;
      res.end(String(err));
    }
  });
  console.log(`issuer ${issuer}`);
});
process.on('SIGTERM', () => process.exit(0));
