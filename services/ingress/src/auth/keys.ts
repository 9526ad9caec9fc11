import { createHash, randomBytes } from "node:crypto";

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
export const keyPrefix = "gw_live_";
const keyPattern = /^gw_live_[0-9A-Za-z]{32,128}$/;

/** Unbiased base62: bytes ≥ 248 are rejected so every character is equally likely. */
export function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += base62[byte % 62];
    }
  }
  return out;
}

export function generateKey(): { secret: string; hash: string; prefix: string } {
  const secret = keyPrefix + randomBase62(40);
  return { secret, hash: hashKey(secret), prefix: secret.slice(0, keyPrefix.length + 6) };
}

export function hashKey(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

export function isWellFormedKey(candidate: string): boolean {
  return keyPattern.test(candidate);
}

export function newId(kind: "ws" | "key"): string {
  return `${kind}_${randomBase62(24)}`;
}

/**
 * The caller's key: `Authorization: Bearer` first, then `x-api-key` (sent by Anthropic clients
 * before 1.0). Returns undefined when neither header carries anything.
 */
export function readKey(headers: { authorization?: string; "x-api-key"?: string | string[] }): string | undefined {
  const auth = headers.authorization;
  if (auth) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    if (match?.[1]) return match[1];
  }
  const apiKey = headers["x-api-key"];
  const value = Array.isArray(apiKey) ? apiKey[0] : apiKey;
  if (value?.trim()) return value.trim();
  return auth ? auth.trim() : undefined;
}
