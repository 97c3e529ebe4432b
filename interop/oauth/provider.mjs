// A certified OpenID provider (panva's oidc-provider) for the tests of
// swarm serve as an OAuth 2.1 protected resource. It listens on a loopback
// port and prints "issuer <URL>" once ready. Clients:
//   ci / ci-secret         client_credentials; scopes swarm:* and swarm:<id>
//   swarm / swarm-secret   the resource server, for introspection
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
    ],
    jwks: { keys: [jwk] },
    scopes,
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource) => ({
          scope: scopes.join(' '),
          audience: resource,
          accessTokenTTL: 3600,
          accessTokenFormat: opaque ? 'opaque' : 'jwt',
          jwt: { sign: { alg: 'ES256' } },
        }),
      },
    },
  });
  server.on('request', provider.callback());
  console.log(`issuer ${issuer}`);
});
process.on('SIGTERM', () => process.exit(0));
