import { describe, expect, it } from "vitest";
import { z } from "zod";
import { errorCodes, type ErrorCode } from "./codes";
import { GatewayError, formatPath, fromZodError, isGatewayError } from "./gateway-error";

const allCodes = Object.keys(errorCodes) as ErrorCode[];

describe("GatewayError: OpenAI envelope", () => {
  it("when rendered for OpenAI, then the body has exactly error.{message,type,param,code}", () => {
    const err = new GatewayError("invalid_request", "Invalid body: model: required", { param: "model" });
    const envelope = err.toEnvelope("openai");
    expect(Object.keys(envelope)).toEqual(["error"]);
    expect(Object.keys(envelope.error).sort()).toEqual(["code", "message", "param", "type"]);
    expect(envelope).toEqual({
      error: { message: "Invalid body: model: required", type: "invalid_request_error", param: "model", code: "invalid_request" },
    });
  });

  it("when no param is given, then param is present and null (not missing)", () => {
    const envelope = new GatewayError("not_found", "nope").toEnvelope("openai");
    expect("param" in envelope.error).toBe(true);
    expect(envelope.error.param).toBeNull();
  });

  it("when rendered for every code, then type comes from the table and code is the code", () => {
    for (const code of allCodes) {
      const envelope = new GatewayError(code, `msg for ${code}`).toEnvelope("openai");
      expect(envelope.error.type).toBe(errorCodes[code].openai);
      expect(envelope.error.code).toBe(code);
      expect(envelope.error.message).toBe(`msg for ${code}`);
    }
  });

  it("when a type override is given, then the OpenAI envelope carries it (e.g. tokens vs requests)", () => {
    const envelope = new GatewayError("rate_limit_exceeded", "slow down", { type: "tokens" }).toEnvelope("openai");
    expect(envelope.error.type).toBe("tokens");
    expect(envelope.error.code).toBe("rate_limit_exceeded");
  });
});

describe("GatewayError: Anthropic envelope", () => {
  it("when rendered for Anthropic with a request id, then type is error and request_id is set", () => {
    const err = new GatewayError("invalid_api_key", "Invalid API key");
    expect(err.toEnvelope("anthropic", "req_123")).toEqual({
      type: "error",
      error: { type: "authentication_error", message: "Invalid API key" },
      request_id: "req_123",
    });
  });

  it("when rendered for Anthropic without a request id, then request_id is absent", () => {
    const envelope = new GatewayError("internal_error", "boom").toEnvelope("anthropic");
    expect("request_id" in envelope).toBe(false);
    expect(envelope.error).toEqual({ type: "api_error", message: "boom" });
  });

  it("when rendered for every code at its own status, then type comes from the table", () => {
    for (const code of allCodes) {
      const envelope = new GatewayError(code, "m").toEnvelope("anthropic");
      expect(envelope.type).toBe("error");
      expect(envelope.error.type).toBe(errorCodes[code].anthropic);
    }
  });

  it("when a 429 carries an OpenAI-only type override, then Anthropic still sees rate_limit_error", () => {
    const envelope = new GatewayError("rate_limit_exceeded", "slow down", { type: "tokens" }).toEnvelope("anthropic");
    expect(envelope.error.type).toBe("rate_limit_error");
  });

  it("when an upstream 4xx is passed through with its own status, then the Anthropic type follows that status", () => {
    expect(new GatewayError("invalid_request", "m", { status: 404 }).toEnvelope("anthropic").error.type).toBe("not_found_error");
    expect(new GatewayError("invalid_request", "m", { status: 413 }).toEnvelope("anthropic").error.type).toBe("request_too_large");
    expect(new GatewayError("invalid_request", "m", { status: 422 }).toEnvelope("anthropic").error.type).toBe("invalid_request_error");
  });
});

describe("GatewayError: status and retryable", () => {
  it("when no status override is given, then status comes from the code table", () => {
    for (const code of allCodes) expect(new GatewayError(code, "m").status).toBe(errorCodes[code].status);
  });

  it("when a status override is given, then it replaces the table's status", () => {
    const err = new GatewayError("invalid_request", "m", { status: 422 });
    expect(err.status).toBe(422);
    expect(err.toEnvelope("openai").error.code).toBe("invalid_request");
  });

  it("when retryable is not given, then only 429, 502, 503 and 504 are retryable", () => {
    const retryableStatuses = new Set([429, 502, 503, 504]);
    for (const code of allCodes) {
      const err = new GatewayError(code, "m");
      expect(err.retryable, `${code} (${err.status})`).toBe(retryableStatuses.has(err.status));
    }
    for (const status of [400, 401, 403, 404, 409, 413, 422, 500, 501, 505]) {
      expect(new GatewayError("upstream_error", "m", { status }).retryable, String(status)).toBe(false);
    }
    for (const status of [429, 502, 503, 504]) {
      expect(new GatewayError("invalid_request", "m", { status }).retryable, String(status)).toBe(true);
    }
  });

  it("when retryable is given explicitly, then it wins over the status default", () => {
    expect(new GatewayError("upstream_error", "m", { retryable: false }).retryable).toBe(false);
    expect(new GatewayError("invalid_request", "m", { retryable: true }).retryable).toBe(true);
  });

  it("when headers and cause are given, then they are kept; isGatewayError tells it apart", () => {
    const cause = new Error("root");
    const err = new GatewayError("upstream_rate_limited", "m", { headers: { "retry-after": "3" }, cause });
    expect(err.headers).toEqual({ "retry-after": "3" });
    expect(err.cause).toBe(cause);
    expect(err).toBeInstanceOf(Error);
    expect(isGatewayError(err)).toBe(true);
    expect(isGatewayError(new Error("m"))).toBe(false);
    expect(isGatewayError({ code: "invalid_request", status: 400 })).toBe(false);
  });
});

describe("fromZodError", () => {
  const Body = z.object({
    model: z.string(),
    messages: z.array(z.object({ role: z.string(), content: z.string() })),
  });

  it("when a nested array field is wrong, then the 400 names its path as messages[0].content", () => {
    const result = Body.safeParse({ model: "m", messages: [{ role: "user", content: 5 }] });
    if (result.success) throw new Error("expected a failure");
    const err = fromZodError(result.error);
    expect(err.code).toBe("invalid_request");
    expect(err.status).toBe(400);
    expect(err.param).toBe("messages[0].content");
    expect(err.message).toContain("messages[0].content");
    expect(err.message.startsWith("Invalid body")).toBe(true);
    expect(err.retryable).toBe(false);
    expect(err.toEnvelope("openai").error.param).toBe("messages[0].content");
  });

  it("when a top-level field is missing, then param is that field's name", () => {
    const result = Body.safeParse({ messages: [] });
    if (result.success) throw new Error("expected a failure");
    const err = fromZodError(result.error, "query");
    expect(err.param).toBe("model");
    expect(err.message).toMatch(/^Invalid query: model: /);
  });

  it("when the whole body has the wrong type (root path), then param is null, not an empty string", () => {
    const result = Body.safeParse("not an object");
    if (result.success) throw new Error("expected a failure");
    const err = fromZodError(result.error);
    expect(err.param).toBeNull();
    expect(err.message).not.toContain(": :");
    expect(err.message).toMatch(/^Invalid body: /);
  });
});

describe("formatPath", () => {
  it("when a path mixes keys and indexes, then indexes are bracketed and keys dotted", () => {
    expect(formatPath(["messages", 0, "content"])).toBe("messages[0].content");
    expect(formatPath(["messages", 2, "content", 1, "text"])).toBe("messages[2].content[1].text");
    expect(formatPath(["a", "b", "c"])).toBe("a.b.c");
  });

  it("when the path starts with an index or is empty, then there is no leading dot", () => {
    expect(formatPath([0, "role"])).toBe("[0].role");
    expect(formatPath([3])).toBe("[3]");
    expect(formatPath([])).toBe("");
    expect(formatPath(["tools", 0, 1])).toBe("tools[0][1]");
  });
});
