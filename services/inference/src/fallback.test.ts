import { describe, expect, it } from "vitest";
import { GatewayConfig } from "@gw/config";
import { GatewayError } from "@gw/errors";
import { createLogger } from "@gw/logger";
import { UNOPENED_CREDENTIAL } from "@gw/service-kit";
import { CircuitBreakers } from "./circuit-breaker";
import { withFallback, type RetryPolicy, type RouteAttempt } from "./fallback";
import { upstreamHttpError } from "./upstream/errors";

const config = GatewayConfig.parse({
  providers: {
    a: { kind: "openai", base_url: "http://a.test/v1" },
    b: { kind: "openai", base_url: "http://b.test/v1", max_retries: 0 },
  },
  models: {
    m: {
      type: "chat",
      routes: [
        { provider: "a", model: "ma" },
        { provider: "b", model: "mb" },
      ],
    },
  },
  plans: {
    plus: { requests_per_minute: 1, tokens_per_minute: 1 },
    pro: { requests_per_minute: 1, tokens_per_minute: 1 },
    enterprise: { requests_per_minute: 1, tokens_per_minute: 1 },
  },
});
const model = config.models.m as NonNullable<typeof config.models.m>;
const log = createLogger({ service: "fallback-test", level: "silent" });

type Result = { ok: true; from: string } | { ok: false; error: GatewayError };

/** Answers each call from a script per provider; records who was called and every sleep. */
function scripted(answers: Record<string, Result[]>) {
  const calls: string[] = [];
  const sleeps: number[] = [];
  const retry: RetryPolicy = { baseDelayMs: 100, maxDelayMs: 1_000, maxRetryAfterMs: 5_000, sleep: async (ms) => void sleeps.push(ms), random: () => 0.5 };
  const attempt = (route: RouteAttempt) => {
    calls.push(route.ctx.name);
    const next = answers[route.ctx.name]?.shift();
    return Promise.resolve(next ?? ({ ok: true, from: route.ctx.name } as const));
  };
  return { calls, sleeps, retry, attempt };
}

const unavailable = (headers: Record<string, string> = {}) => ({ ok: false as const, error: new GatewayError("upstream_unavailable", "down", { headers }) });
const badRequest = () => ({ ok: false as const, error: new GatewayError("invalid_request", "bad") });
/** The provider refusing the credential it was sent, as the upstream call reports it. */
const refused = (status = 401) => ({ ok: false as const, error: upstreamHttpError(status, {}, "", { upstreamModel: "ma", publicModel: "m" }) });
const rateLimited = () => ({ ok: false as const, error: upstreamHttpError(429, { "retry-after": "1" }, "", { upstreamModel: "ma", publicModel: "m" }) });

describe("withFallback", () => {
  it("when a route fails retryably once, then it is retried after a backoff and its answer returned", async () => {
    const s = scripted({ a: [unavailable()] });
    const result = await withFallback(model, "m", { config, secrets: {}, agent: undefined as never, log, retry: s.retry }, s.attempt);
    expect(result).toMatchObject({ ok: true, from: "a" });
    expect(s.calls).toEqual(["a", "a"]);
    expect(s.sleeps).toEqual([100]); // base × 2^0 × (0.5 + 0.5)
  });

  it("when retries keep failing, then the delays grow and the next route answers after max_retries", async () => {
    const s = scripted({ a: [unavailable(), unavailable(), unavailable()] });
    const result = await withFallback(model, "m", { config, secrets: {}, agent: undefined as never, log, retry: s.retry }, s.attempt);
    expect(result).toMatchObject({ ok: true, from: "b" });
    expect(s.calls).toEqual(["a", "a", "a", "b"]);
    expect(s.sleeps).toEqual([100, 200]);
  });

  it("when the upstream says how long to wait, then that wait is used; too long a wait moves on at once", async () => {
    const s = scripted({ a: [unavailable({ "retry-after": "2" })] });
    await withFallback(model, "m", { config, secrets: {}, agent: undefined as never, log, retry: s.retry }, s.attempt);
    expect(s.sleeps).toEqual([2_000]);
    const t = scripted({ a: [unavailable({ "retry-after": "30" })] });
    const result = await withFallback(model, "m", { config, secrets: {}, agent: undefined as never, log, retry: t.retry }, t.attempt);
    expect(result).toMatchObject({ ok: true, from: "b" });
    expect(t.calls).toEqual(["a", "b"]);
    expect(t.sleeps).toEqual([]);
  });

  it("when a failure is not retryable, then it is the answer: no retry and no fallback", async () => {
    const s = scripted({ a: [badRequest()] });
    const result = await withFallback(model, "m", { config, secrets: {}, agent: undefined as never, log, retry: s.retry }, s.attempt);
    expect(result).toMatchObject({ ok: false, error: { status: 400 } });
    expect(s.calls).toEqual(["a"]);
  });

  it("when the caller has gone, then no more retries are made", async () => {
    const controller = new AbortController();
    controller.abort();
    const s = scripted({ a: [unavailable(), unavailable()] });
    const result = await withFallback(
      model,
      "m",
      { config, secrets: {}, agent: undefined as never, log, retry: s.retry, signal: controller.signal },
      s.attempt,
    );
    expect(result.ok).toBe(false);
    expect(s.calls).toEqual(["a"]);
  });

  it("when a deployment keeps failing, then its circuit opens and calls go straight to the next route until the cool-down ends", async () => {
    let now = 0;
    const breakers = new CircuitBreakers({ threshold: 3, cooldownMs: 30_000, now: () => now });
    const s = scripted({ a: [unavailable(), unavailable(), unavailable()] });
    const deps = { config, secrets: {}, agent: undefined as never, log, retry: s.retry, breakers };
    expect(await withFallback(model, "m", deps, s.attempt)).toMatchObject({ ok: true, from: "b" });
    s.calls.length = 0;
    expect(await withFallback(model, "m", deps, s.attempt)).toMatchObject({ ok: true, from: "b" });
    expect(s.calls).toEqual(["b"]); // a was skipped
    now += 30_000;
    expect(await withFallback(model, "m", deps, s.attempt)).toMatchObject({ ok: true, from: "a" }); // the trial succeeds
  });

  it("when every deployment's circuit is open, then the answer is a 503 saying when to try again", async () => {
    const breakers = new CircuitBreakers({ threshold: 1, cooldownMs: 12_000, now: () => 0 });
    breakers.failed("a/ma");
    breakers.failed("b/mb");
    const s = scripted({});
    const result = await withFallback(model, "m", { config, secrets: {}, agent: undefined as never, log, retry: s.retry, breakers }, s.attempt);
    expect(result).toMatchObject({ ok: false, error: { status: 503, headers: { "retry-after": "12" } } });
    expect(s.calls).toEqual([]);
  });

  it("when callers go away mid-call, then their cut-short calls do not open the circuit", async () => {
    const breakers = new CircuitBreakers({ threshold: 3, cooldownMs: 30_000, now: () => 0 });
    const s = scripted({ a: Array.from({ length: 5 }, () => unavailable()) });
    for (let i = 0; i < 5; i++) {
      const controller = new AbortController();
      controller.abort();
      const result = await withFallback(
        model,
        "m",
        { config, secrets: {}, agent: undefined as never, log, retry: s.retry, breakers, signal: controller.signal },
        s.attempt,
      );
      expect(result.ok).toBe(false);
    }
    s.calls.length = 0;
    expect(await withFallback(model, "m", { config, secrets: {}, agent: undefined as never, log, retry: s.retry, breakers }, s.attempt)).toMatchObject({
      ok: true,
      from: "a",
    });
    expect(s.calls).toEqual(["a"]);
  });

  it("when a trial call's caller goes away, or the provider refuses the request itself, then the next call is the trial", async () => {
    let now = 0;
    const breakers = new CircuitBreakers({ threshold: 1, cooldownMs: 10_000, now: () => now });
    breakers.failed("a/ma");
    now += 10_000;
    const gone = new AbortController();
    gone.abort();
    const s = scripted({ a: [unavailable(), badRequest()] });
    const deps = { config, secrets: {}, agent: undefined as never, log, retry: s.retry, breakers };
    await withFallback(model, "m", { ...deps, signal: gone.signal }, s.attempt);
    expect(await withFallback(model, "m", deps, s.attempt)).toMatchObject({ ok: false, error: { status: 400 } });
    expect(await withFallback(model, "m", deps, s.attempt)).toMatchObject({ ok: true, from: "a" });
    expect(s.calls).toEqual(["a", "a", "a"]);
  });

  describe("with a workspace's own credential", () => {
    const own = { a: "sk-workspace-own" };

    it("when the provider refuses it, then the answer is a 424 naming the provider: no retry, no other route; the platform's refused credential still falls back", async () => {
      const s = scripted({ a: [refused(), refused(), refused(), refused()] });
      const result = await withFallback(model, "m", { config, secrets: {}, agent: undefined as never, log, retry: s.retry, credentials: own }, s.attempt);
      expect(result).toMatchObject({ ok: false, error: { code: "provider_credential_refused", status: 424, retryable: false } });
      expect(result.ok ? "" : result.error.message).toMatch(/provider `a` refused this workspace's own credential \(HTTP 401\)/);
      expect(s.calls).toEqual(["a"]);
      expect(s.sleeps).toEqual([]);
      // The platform's own credential refused: as before, a retryable 502, retried, then the next route.
      s.calls.length = 0;
      expect(await withFallback(model, "m", { config, secrets: {}, agent: undefined as never, log, retry: s.retry }, s.attempt)).toMatchObject({
        ok: true,
        from: "b",
      });
      expect(s.calls).toEqual(["a", "a", "a", "b"]);
    });

    it("when the gateway could not open it, then the call fails naming the provider and is never sent, not even with the platform's credential", async () => {
      const s = scripted({});
      const secrets = { a: "sk-platform", b: "sk-platform-b" };
      const result = await withFallback(
        model,
        "m",
        { config, secrets, agent: undefined as never, log, retry: s.retry, credentials: { a: UNOPENED_CREDENTIAL } },
        s.attempt,
      );
      expect(result).toMatchObject({ ok: false, error: { code: "provider_credential_unavailable", status: 424, retryable: false } });
      expect(s.calls).toEqual([]);
    });

    it("when it is refused again and again, then its own breaker opens, and another workspace on the same deployment is unaffected", async () => {
      const breakers = new CircuitBreakers({ threshold: 2, cooldownMs: 30_000, now: () => 0 });
      const s = scripted({ a: [refused(403), refused(403)] });
      const deps = { config, secrets: {}, agent: undefined as never, log, retry: s.retry, breakers };
      for (let i = 0; i < 3; i++) {
        expect(await withFallback(model, "m", { ...deps, credentials: own }, s.attempt)).toMatchObject({ ok: false, error: { status: 424 } });
      }
      expect(s.calls).toEqual(["a", "a"]); // the third was answered without reaching the provider
      // The platform's credential and another workspace's own one still reach the deployment.
      expect(await withFallback(model, "m", deps, s.attempt)).toMatchObject({ ok: true, from: "a" });
      expect(await withFallback(model, "m", { ...deps, credentials: { a: "sk-other-workspace" } }, s.attempt)).toMatchObject({ ok: true, from: "a" });
      expect(s.calls).toEqual(["a", "a", "a", "a"]);
    });

    it("when its account is rate limited, then it is retried as usual but never opens the deployment's shared breaker", async () => {
      const breakers = new CircuitBreakers({ threshold: 1, cooldownMs: 30_000, now: () => 0 });
      const s = scripted({ a: [rateLimited(), rateLimited(), rateLimited()] });
      const deps = { config, secrets: {}, agent: undefined as never, log, retry: s.retry, breakers };
      expect(await withFallback(model, "m", { ...deps, credentials: own }, s.attempt)).toMatchObject({ ok: true, from: "b" });
      s.calls.length = 0;
      expect(await withFallback(model, "m", deps, s.attempt)).toMatchObject({ ok: true, from: "a" });
      expect(s.calls).toEqual(["a"]);
    });
  });
});
