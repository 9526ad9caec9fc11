import { readFileSync } from "node:fs";
import { inspect } from "node:util";
import { credsAuthenticator, nkeyAuthenticator, nkeys } from "nats";
import type { Authenticator, ConnectionOptions } from "nats";

/**
 * The contents of a NATS credentials file, read once at start. Either a `.creds` file (a user JWT
 * and its NKey seed, as `nsc` writes them; for operator/JWT mode) or a file holding just an NKey
 * user seed (`SU…`, for `nkey:` users in the server's own configuration). The secret never shows
 * in logs: the object prints as its kind only.
 */
export class NatsCredentials {
  readonly #bytes: Uint8Array;

  private constructor(
    readonly kind: "creds" | "nkey",
    bytes: Uint8Array,
  ) {
    this.#bytes = bytes;
  }

  /** Parses credentials; throws an Error that names `source` and never quotes the content. */
  static parse(text: string, source: string): NatsCredentials {
    const normalized = text.replace(/\r\n/g, "\n");
    if (/-{3,}\s*BEGIN NATS USER JWT\s*-{3,}/.test(normalized)) {
      const blocks = [...normalized.matchAll(/-{3,}[^\n]*-{3,}\n\s*(\S+)\s*\n\s*-{3,}[^\n]*-{3,}/g)].map((m) => m[1] ?? "");
      const jwt = blocks[0] ?? "";
      const seed = blocks[1] ?? "";
      if (jwt.split(".").length !== 3 || !isUserSeed(seed)) {
        throw new Error(`${source} is not a valid NATS .creds file (it needs a user JWT block and a user NKey seed block)`);
      }
      return new NatsCredentials("creds", new TextEncoder().encode(normalized));
    }
    const seed = normalized.trim();
    if (!isUserSeed(seed)) {
      throw new Error(`${source} holds neither a NATS .creds file nor an NKey user seed (SU…)`);
    }
    return new NatsCredentials("nkey", new TextEncoder().encode(seed));
  }

  /** The nats.js authenticator; the bytes stay inside this object. */
  authenticator(): Authenticator {
    return this.kind === "creds" ? credsAuthenticator(this.#bytes) : nkeyAuthenticator(this.#bytes);
  }

  toJSON(): { kind: string } {
    return { kind: this.kind };
  }

  [inspect.custom](): string {
    return `NatsCredentials(${this.kind})`;
  }
}

function isUserSeed(seed: string): boolean {
  if (!/^SU[A-Z2-7]{56}$/.test(seed)) return false;
  try {
    // nats re-exports nkeys.js untyped; fromSeed throws on a bad checksum or prefix.
    (nkeys as { fromSeed(seed: Uint8Array): unknown }).fromSeed(new TextEncoder().encode(seed));
    return true;
  } catch {
    return false;
  }
}

/**
 * Reads the file NATS_CREDS names, for main.ts at start: a missing, unreadable or garbled file is
 * an Error whose message names the variable (the entry point logs it as its one fatal line).
 */
export function readNatsCredentials(path: string, variable = "NATS_CREDS"): NatsCredentials {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new Error(`${variable}: cannot read ${path} (${code})`);
  }
  return NatsCredentials.parse(text, `${variable}: ${path}`);
}

/** What connect() gets: servers without credentials, and the credentials as options. */
export type NatsAuthOptions = Pick<ConnectionOptions, "servers" | "user" | "pass" | "token" | "authenticator">;

/**
 * nats.js v2 ignores credentials written in a server URL (`nats://user:pass@host`, `nats://token@host`),
 * and a password starting with digits even confuses its port parsing. So they are taken out of the
 * URL here and passed as the `user`/`pass` or `token` options. `url` may list servers separated by
 * commas. Credentials in the URL and a credentials file together are refused: which one the server
 * checks would depend on its mode.
 */
export function natsAuthOptions(url: string, credentials?: NatsCredentials): NatsAuthOptions {
  const servers: string[] = [];
  let found: { user?: string; pass?: string; token?: string } | undefined;
  for (const raw of url
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const at = raw.lastIndexOf("@");
    if (at === -1) {
      servers.push(raw);
      continue;
    }
    const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(raw)?.[0] ?? "";
    const userinfo = raw.slice(scheme.length, at);
    servers.push(`${scheme}${raw.slice(at + 1)}`);
    const colon = userinfo.indexOf(":");
    const auth = colon === -1 ? { token: decode(userinfo) } : { user: decode(userinfo.slice(0, colon)), pass: decode(userinfo.slice(colon + 1)) };
    if (found && JSON.stringify(found) !== JSON.stringify(auth)) {
      throw new Error("NATS_URL: the servers listed carry different credentials; give them once");
    }
    found = auth;
  }
  if (servers.length === 0) throw new Error("NATS_URL: no server given");
  if (found && credentials) {
    throw new Error("NATS_URL carries a user or token and NATS_CREDS is set too: use one of them");
  }
  return { servers, ...found, ...(credentials ? { authenticator: credentials.authenticator() } : {}) };
}

function decode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new Error("NATS_URL: the user, password or token is not valid percent-encoding");
  }
}
