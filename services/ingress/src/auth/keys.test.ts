import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { generateKey, hashKey, isWellFormedKey, keyPrefix, newId, randomBase62, readKey } from "./keys";

const sampleKey = `gw_live_${"aB3".repeat(13)}x`; // 40 base62 characters

describe("generateKey", () => {
  it("when a key is generated, then it is gw_live_ followed by 40 base62 characters", () => {
    for (let i = 0; i < 50; i++) {
      expect(generateKey().secret).toMatch(/^gw_live_[0-9A-Za-z]{40}$/);
    }
  });

  it("when a key is generated, then its hash is the SHA-256 hex of the whole secret", () => {
    const { secret, hash } = generateKey();
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(hash).toBe(createHash("sha256").update(secret, "utf8").digest("hex"));
    expect(hash).not.toContain(secret.slice(keyPrefix.length));
  });

  it("when a key is generated, then its display prefix is a short start of the secret that does not reveal it", () => {
    const { secret, prefix } = generateKey();
    expect(prefix.startsWith("gw_live_")).toBe(true);
    expect(secret.startsWith(prefix)).toBe(true);
    expect(prefix.length).toBeGreaterThan("gw_live_".length);
    expect(prefix.length).toBeLessThanOrEqual("gw_live_".length + 8);
  });

  it("when many keys are generated, then they are all different", () => {
    const secrets = new Set(Array.from({ length: 200 }, () => generateKey().secret));
    expect(secrets.size).toBe(200);
  });

  it("when random base62 is drawn, then every one of the 62 characters can appear and no other", () => {
    const text = randomBase62(20_000);
    expect(text).toHaveLength(20_000);
    expect(text).toMatch(/^[0-9A-Za-z]+$/);
    expect(new Set(text).size).toBe(62);
  });
});

describe("hashKey and newId", () => {
  it("when the same secret is hashed twice, then the hash is the same; a different secret hashes differently", () => {
    expect(hashKey(sampleKey)).toBe(hashKey(sampleKey));
    expect(hashKey(sampleKey)).not.toBe(hashKey(`${sampleKey}y`));
  });

  it("when ids are minted, then they carry their kind and are unique", () => {
    expect(newId("ws")).toMatch(/^ws_[0-9A-Za-z]{24}$/);
    expect(newId("key")).toMatch(/^key_[0-9A-Za-z]{24}$/);
    expect(newId("key")).not.toBe(newId("key"));
  });
});

describe("isWellFormedKey", () => {
  it("when the key is a generated one, then it is well formed", () => {
    expect(isWellFormedKey(generateKey().secret)).toBe(true);
    expect(isWellFormedKey(sampleKey)).toBe(true);
  });

  it("when the key has the wrong prefix, is too short, or holds other characters, then it is not well formed", () => {
    for (const bad of [
      "",
      "gw_live_",
      "gw_live_abc",
      `gw_test_${"a".repeat(40)}`,
      `sk-${"a".repeat(48)}`,
      `GW_LIVE_${"a".repeat(40)}`,
      `gw_live_${"a".repeat(39)}-`,
      `gw_live_${"a".repeat(40)} `,
      ` gw_live_${"a".repeat(40)}`,
      `gw_live_${"a".repeat(40)}\n`,
      `gw_live_${"a".repeat(200)}`,
    ]) {
      expect(isWellFormedKey(bad), JSON.stringify(bad)).toBe(false);
    }
  });
});

describe("readKey", () => {
  it("when Authorization: Bearer is sent, then its token is the key", () => {
    expect(readKey({ authorization: `Bearer ${sampleKey}` })).toBe(sampleKey);
    expect(readKey({ authorization: `bearer ${sampleKey}` })).toBe(sampleKey);
    expect(readKey({ authorization: `Bearer   ${sampleKey}  ` })).toBe(sampleKey);
  });

  it("when both headers are sent, then Bearer wins over x-api-key", () => {
    expect(readKey({ authorization: `Bearer ${sampleKey}`, "x-api-key": "gw_live_other" })).toBe(sampleKey);
  });

  it("when only x-api-key is sent, then it is the key (trimmed; first of repeated headers)", () => {
    expect(readKey({ "x-api-key": sampleKey })).toBe(sampleKey);
    expect(readKey({ "x-api-key": ` ${sampleKey} ` })).toBe(sampleKey);
    expect(readKey({ "x-api-key": [sampleKey, "gw_live_second"] })).toBe(sampleKey);
  });

  it("when the Bearer token is empty, then x-api-key is used", () => {
    expect(readKey({ authorization: "Bearer ", "x-api-key": sampleKey })).toBe(sampleKey);
  });

  it("when neither header carries anything, then there is no key", () => {
    expect(readKey({})).toBeUndefined();
    expect(readKey({ authorization: "", "x-api-key": "  " })).toBeUndefined();
    expect(readKey({ "x-api-key": [] })).toBeUndefined();
  });

  it("when Authorization has another scheme, then it never yields a usable key, and x-api-key still works", () => {
    const read = readKey({ authorization: "Basic dXNlcjpwYXNz" });
    expect(read === undefined || !isWellFormedKey(read)).toBe(true);
    expect(readKey({ authorization: "Basic dXNlcjpwYXNz", "x-api-key": sampleKey })).toBe(sampleKey);
  });
});
