import { describe, expect, it } from "vitest";
import { authGuardSettings, loadIngressEnv } from "../config";

const required = {
  GATEWAY_ADMIN_TOKEN: "admin-token-0123456789",
  GATEWAY_INTERNAL_SECRET: "internal-secret-0123456789",
  DATABASE_URL: "postgres://postgres@127.0.0.1:5432/gw",
  NATS_URL: "nats://127.0.0.1:4222",
};

describe("ingress environment: what unknown keys may cost", () => {
  it("when nothing is set, then 60 failures a minute per address, 4 lookups at once with 256 waiting, 10,000 unknown keys remembered", () => {
    expect(authGuardSettings(loadIngressEnv(required))).toEqual({
      failuresPerMinute: 60,
      trackedAddresses: 50_000,
      lookupConcurrency: 4,
      lookupQueue: 256,
      unknownKeyCacheSize: 10_000,
    });
  });

  it("when values are set, then they are used, and 0 failures per minute turns the address limit off", () => {
    const env = loadIngressEnv({
      ...required,
      GATEWAY_AUTH_FAILURES_PER_MINUTE: "0",
      GATEWAY_AUTH_TRACKED_ADDRESSES: "1000",
      GATEWAY_AUTH_LOOKUP_CONCURRENCY: "2",
      GATEWAY_AUTH_LOOKUP_QUEUE: "0",
      GATEWAY_AUTH_UNKNOWN_KEY_CACHE_SIZE: "500",
    });
    expect(authGuardSettings(env)).toEqual({
      failuresPerMinute: 0,
      trackedAddresses: 1000,
      lookupConcurrency: 2,
      lookupQueue: 0,
      unknownKeyCacheSize: 500,
    });
  });

  it("when a value is not a count, then loading fails naming the key", () => {
    expect(() => loadIngressEnv({ ...required, GATEWAY_AUTH_FAILURES_PER_MINUTE: "-1" })).toThrow(/GATEWAY_AUTH_FAILURES_PER_MINUTE/);
    expect(() => loadIngressEnv({ ...required, GATEWAY_AUTH_LOOKUP_CONCURRENCY: "0" })).toThrow(/GATEWAY_AUTH_LOOKUP_CONCURRENCY/);
  });
});
