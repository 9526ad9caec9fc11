import { describe, expect, it } from "vitest";
import { credentialRefusalStatus, hideUpstreamModel, ownCredentialRefused, upstreamHttpError, upstreamTransportError } from "./errors";

const ctx = { upstreamModel: "gpt-4o-2024-08-06", publicModel: "gpt-4o" };
const openaiBody = (message: string) => JSON.stringify({ error: { message, type: "invalid_request_error", param: null, code: null } });

describe("upstreamHttpError", () => {
  it("when the provider quotes the credential it was sent in its error, then the caller's message has it masked", () => {
    const credential = "sk-proj-abcdefghijklmnop0123456789";
    const withKey = { ...ctx, credential };
    for (const status of [400, 404, 422, 429]) {
      const err = upstreamHttpError(status, {}, openaiBody(`Incorrect API key provided: ${credential}. You can find your API key at …`), withKey);
      expect(err.message, String(status)).not.toContain(credential);
      expect(err.message, String(status)).toContain("[redacted]");
    }
    expect(hideUpstreamModel(`stream failed for ${credential} on gpt-4o-2024-08-06`, withKey)).toBe("stream failed for [redacted] on gpt-4o");
  });

  it("when the upstream answers 429, then it stays a retryable 429 keeping retry-after and retry-after-ms", () => {
    const err = upstreamHttpError(
      429,
      { "retry-after": "12", "retry-after-ms": "11500", "x-ratelimit-remaining-requests": "0", "set-cookie": "a=b" },
      openaiBody("Rate limit reached for gpt-4o-2024-08-06"),
      ctx,
    );
    expect([err.code, err.status, err.retryable]).toEqual(["upstream_rate_limited", 429, true]);
    expect(err.headers).toEqual({ "retry-after": "12", "retry-after-ms": "11500" });
    expect(err.message).toContain("gpt-4o");
    expect(err.message).not.toContain("2024-08-06");
  });

  it("when a 429 has no retry headers, then none are invented", () => {
    const err = upstreamHttpError(429, {}, "", ctx);
    expect(err.status).toBe(429);
    expect(err.headers).toEqual({});
  });

  it("when the upstream fails with 5xx, then 500→502, 502→502, 503→503, 504→504, all retryable", () => {
    const cases: [number, string, number][] = [
      [500, "upstream_error", 502],
      [502, "upstream_error", 502],
      [503, "upstream_unavailable", 503],
      [504, "upstream_timeout", 504],
      [529, "upstream_unavailable", 503],
      [408, "upstream_timeout", 504],
    ];
    for (const [given, code, status] of cases) {
      const err = upstreamHttpError(given, {}, openaiBody(`internal trace for ${ctx.upstreamModel} at host-17`), ctx);
      expect([err.code, err.status, err.retryable], String(given)).toEqual([code, status, true]);
      expect(err.message, String(given)).not.toContain("host-17"); // the upstream's internals stay inside
    }
  });

  it("when the upstream refuses our credential (401/403), then it is a retryable 502, not the caller's auth error", () => {
    for (const given of [401, 403]) {
      const err = upstreamHttpError(given, {}, openaiBody("Incorrect API key provided: sk-proj-abc***xyz"), ctx);
      expect([err.code, err.status, err.retryable], String(given)).toEqual(["upstream_error", 502, true]);
      expect(err.message).not.toContain("sk-proj");
    }
  });

  it("when the upstream refuses our account for billing (402), then it is a retryable 502 that does not echo the account state", () => {
    const anthropic = JSON.stringify({ type: "error", error: { type: "billing_error", message: "Your credit balance is too low" } });
    const err = upstreamHttpError(402, {}, anthropic, ctx);
    expect([err.code, err.status, err.retryable]).toEqual(["upstream_error", 502, true]);
    expect(err.message).not.toContain("credit balance");
  });

  it("when the upstream rejects the request (400/404/422), then the status is kept, it is not retryable, and its message passes through", () => {
    for (const given of [400, 404, 422]) {
      const err = upstreamHttpError(given, {}, openaiBody("max_tokens is too large"), ctx);
      expect([err.status, err.retryable], String(given)).toEqual([given, false]);
      expect(err.message).toBe("max_tokens is too large");
    }
  });

  it("when an upstream message names the upstream model, then the public model name replaces it everywhere", () => {
    const err = upstreamHttpError(400, {}, openaiBody("The model gpt-4o-2024-08-06 does not support tools; gpt-4o-2024-08-06 said so"), ctx);
    expect(err.message).toBe("The model gpt-4o does not support tools; gpt-4o said so");
  });

  it("when the error body has another shape, then the message is found in error (string), error.message or message", () => {
    expect(upstreamHttpError(400, {}, JSON.stringify({ error: "flat error" }), ctx).message).toBe("flat error");
    expect(upstreamHttpError(400, {}, JSON.stringify({ message: "cohere style" }), ctx).message).toBe("cohere style");
    const anthropic = JSON.stringify({ type: "error", error: { type: "invalid_request_error", message: "anthropic style" } });
    expect(upstreamHttpError(400, {}, anthropic, ctx).message).toBe("anthropic style");
  });

  it("when the error body is not JSON, then it is not echoed", () => {
    const err = upstreamHttpError(400, {}, "<html><body>nginx internal page</body></html>", ctx);
    expect(err.message).not.toContain("nginx");
    expect(err.message).toContain("400");
  });
});

describe("upstreamTransportError", () => {
  it("when undici times out (headers, body or connect), then it is a retryable 504", () => {
    for (const code of ["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT", "UND_ERR_CONNECT_TIMEOUT"]) {
      const cause = Object.assign(new Error("timeout"), { code });
      const err = upstreamTransportError(cause);
      expect([err.code, err.status, err.retryable], code).toEqual(["upstream_timeout", 504, true]);
      expect(err.cause).toBe(cause);
    }
  });

  it("when the upstream cannot be reached, then it is a retryable 502 that does not leak the address", () => {
    for (const code of ["ECONNREFUSED", "ENOTFOUND", "UND_ERR_SOCKET", undefined]) {
      const err = upstreamTransportError(Object.assign(new Error("connect ECONNREFUSED 10.0.0.7:443"), { code }));
      expect([err.code, err.status, err.retryable], String(code)).toEqual(["upstream_error", 502, true]);
      expect(err.message).not.toContain("10.0.0.7");
    }
  });
});

describe("hideUpstreamModel", () => {
  it("when the upstream and public names are equal or the upstream name is empty, then the text is unchanged", () => {
    expect(hideUpstreamModel("gpt-4o is busy", { upstreamModel: "gpt-4o", publicModel: "gpt-4o" })).toBe("gpt-4o is busy");
    expect(hideUpstreamModel("anything", { upstreamModel: "", publicModel: "gpt-4o" })).toBe("anything");
  });

  it("when the upstream name holds regex characters, then it is replaced literally", () => {
    expect(hideUpstreamModel("m.1 and mx1", { upstreamModel: "m.1", publicModel: "pub" })).toBe("pub and mx1");
  });
});

describe("credential refusals", () => {
  it("when the upstream answers 401, 402 or 403, then the failure is known as a refusal of the credential sent, and nothing else is", () => {
    for (const status of [401, 402, 403]) expect(credentialRefusalStatus(upstreamHttpError(status, {}, "", ctx)), String(status)).toBe(status);
    for (const status of [400, 404, 429, 500, 503]) expect(credentialRefusalStatus(upstreamHttpError(status, {}, "", ctx)), String(status)).toBeUndefined();
  });

  it("when it was a workspace's own credential, then the error is a non-retryable 424 naming the provider, never a 401", () => {
    const err = ownCredentialRefused("openai-main", 401);
    expect([err.code, err.status, err.retryable]).toEqual(["provider_credential_refused", 424, false]);
    expect(err.message).toContain("`openai-main` refused this workspace's own credential");
    expect(err.toEnvelope("anthropic").error.type).toBe("invalid_request_error");
  });
});
