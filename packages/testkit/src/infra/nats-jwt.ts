import { createHash } from "node:crypto";
import { nkeys as untypedNkeys } from "nats";

/**
 * Just enough of NATS's decentralised auth (operator → account → user JWTs, as `nsc` makes them)
 * to run a private nats-server in operator mode and hand out `.creds` files. The format, from
 * nats-io/jwt v2: a JWT whose header is {"typ":"JWT","alg":"ed25519-nkey"}, whose claims carry
 * `jti` = base32 (no padding) of SHA-512/256 of the claims JSON, and whose signature is the
 * issuer's NKey Ed25519 signature over "header.claims", base64url. The only npm encoder,
 * @nats-io/jwt, is a 0.0.x release on another nkeys package; this is the part tests need.
 */

export interface NatsUserPermissions {
  pub?: { allow?: string[]; deny?: string[] };
  sub?: { allow?: string[]; deny?: string[] };
}

export interface NatsOperatorSetup {
  /** nats-server configuration lines: the operator, a memory resolver preloaded with the accounts. */
  config: string;
  /** The text of a `.creds` file for a new user of the JetStream-enabled application account. */
  userCreds(name: string, permissions?: NatsUserPermissions): string;
}

/** nats re-exports nkeys.js untyped (`any`); this is the part used here. */
export interface KeyPair {
  getPublicKey(): string;
  getSeed(): Uint8Array;
  sign(data: Uint8Array): Uint8Array;
}
export const nkeys = untypedNkeys as {
  createOperator(): KeyPair;
  createAccount(): KeyPair;
  createUser(): KeyPair;
};

const UNLIMITED = { subs: -1, data: -1, payload: -1 };

/** A new operator with a system account and one application account with JetStream on. */
export function createNatsOperator(): NatsOperatorSetup {
  const operator = nkeys.createOperator();
  const system = nkeys.createAccount();
  const account = nkeys.createAccount();
  const operatorJwt = encodeJwt(operator, operator, "test-operator", {
    type: "operator",
    version: 2,
    system_account: system.getPublicKey(),
  });
  const accountClaims = (jetstream: boolean) => ({
    type: "account",
    version: 2,
    limits: {
      ...UNLIMITED,
      imports: -1,
      exports: -1,
      wildcards: true,
      conn: -1,
      leaf: -1,
      ...(jetstream ? { mem_storage: -1, disk_storage: -1, streams: -1, consumer: -1 } : {}),
    },
  });
  const systemJwt = encodeJwt(operator, system, "SYS", accountClaims(false));
  const accountJwt = encodeJwt(operator, account, "gateway", accountClaims(true));
  const config = [
    `operator: ${operatorJwt}`,
    `system_account: ${system.getPublicKey()}`,
    "resolver: MEMORY",
    "resolver_preload: {",
    `  ${system.getPublicKey()}: ${systemJwt}`,
    `  ${account.getPublicKey()}: ${accountJwt}`,
    "}",
  ].join("\n");
  return {
    config,
    userCreds(name, permissions = {}) {
      const user = nkeys.createUser();
      const jwt = encodeJwt(account, user, name, { type: "user", version: 2, ...UNLIMITED, pub: {}, sub: {}, ...permissions });
      return formatCreds(jwt, new TextDecoder().decode(user.getSeed()));
    },
  };
}

/** Signs `nats` claims about `subject` with `issuer`'s key. */
export function encodeJwt(issuer: KeyPair, subject: KeyPair, name: string, nats: Record<string, unknown>): string {
  const header = base64url(JSON.stringify({ typ: "JWT", alg: "ed25519-nkey" }));
  const claims: Record<string, unknown> = {
    jti: "",
    iat: Math.floor(Date.now() / 1000),
    iss: issuer.getPublicKey(),
    name,
    sub: subject.getPublicKey(),
    nats,
  };
  claims.jti = base32(createHash("sha512-256").update(JSON.stringify(claims)).digest());
  const body = `${header}.${base64url(JSON.stringify(claims))}`;
  const signature = Buffer.from(issuer.sign(new TextEncoder().encode(body))).toString("base64url");
  return `${body}.${signature}`;
}

/** The layout `nsc generate creds` writes, which every NATS client reads. */
export function formatCreds(jwt: string, seed: string): string {
  return [
    "-----BEGIN NATS USER JWT-----",
    jwt,
    "------END NATS USER JWT------",
    "",
    "************************* IMPORTANT *************************",
    "NKEY Seed printed below can be used to sign and prove identity.",
    "NKEYs are sensitive and should be treated as secrets.",
    "",
    "-----BEGIN USER NKEY SEED-----",
    seed,
    "------END USER NKEY SEED------",
    "",
    "*************************************************************",
    "",
  ].join("\n");
}

function base64url(text: string): string {
  return Buffer.from(text).toString("base64url");
}

const BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

function base32(bytes: Uint8Array): string {
  let out = "";
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}
