// Checks a signed A2A agent card with third-party code: the official A2A
// JavaScript client (@a2a-js/sdk) resolves and parses it; its signatures are
// verified as A2A 1.0 §8.4.3 says, with `canonicalize` (RFC 8785, by the
// RFC's author) and `jose` (RFC 7515), against the key set named by the
// signature's jku; a tampered copy must fail.
//
// Usage: node card.mjs AGENT_BASE_URL
// Prints one JSON object: {name, signatures, verified, kid, alg, tamperedRejected}.

import { DefaultAgentCardResolver } from '@a2a-js/sdk/client';
import canonicalize from 'canonicalize';
import { createLocalJWKSet, flattenedVerify } from 'jose';

const [base] = process.argv.slice(2);
if (!base) {
  console.error('usage: node card.mjs AGENT_BASE_URL');
  process.exit(2);
}

const parsed = await new DefaultAgentCardResolver().resolve(base);

const res = await fetch(new URL('.well-known/agent-card.json', base.endsWith('/') ? base : base + '/'));
if (!res.ok) throw new Error(`card: HTTP ${res.status}`);
const card = await res.json();

async function verify(c) {
  const { signatures, ...unsigned } = c;
  const payload = Buffer.from(canonicalize(unsigned)).toString('base64url');
  for (const sig of signatures ?? []) {
    const header = JSON.parse(Buffer.from(sig.protected, 'base64url').toString());
    const jwks = await (await fetch(header.jku)).json();
    try {
      await flattenedVerify(
        { protected: sig.protected, signature: sig.signature, payload },
        createLocalJWKSet(jwks),
        { algorithms: ['ES256', 'ES384', 'RS256', 'EdDSA'] },
      );
      return header;
    } catch {
      // try the next signature
    }
  }
  return undefined;
}

const header = await verify(card);
const tampered = await verify({ ...card, description: card.description + ' (tampered)' });
console.log(
  JSON.stringify({
    name: parsed.name,
    signatures: (card.signatures ?? []).length,
    verified: header !== undefined,
    kid: header?.kid,
    alg: header?.alg,
    typ: header?.typ,
    tamperedRejected: tampered === undefined,
  }),
);
