import { Writable } from "node:stream";
import express, { type Express } from "express";
import { GatewayError } from "@gw/errors";
import { createLogger } from "@gw/logger";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createServiceApp, errorFormatFor, finishApp, toGatewayError } from "./app";
import { createMetrics } from "./metrics";
import { startHttpServer, type RunningServer } from "./server";

const running: RunningServer[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.close(100)));
});

interface OpenAIBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}
interface AnthropicBody {
  type: string;
  error: { type: string; message: string };
  request_id?: string;
}

const internalDetail = "password=hunter2 host=10.1.2.3";

/** A real app with the common edge, a few routes that fail in known ways, and finishApp. */
async function serve(options: { trustRequestId?: boolean; logLines?: string[] } = {}): Promise<string> {
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      options.logLines?.push(chunk.toString("utf8"));
      cb();
    },
  });
  const logger = createLogger({ service: "test", level: options.logLines ? "debug" : "silent", destination });
  const app: Express = createServiceApp({
    logger,
    metrics: createMetrics("test", { defaults: false }),
    trustRequestId: options.trustRequestId ?? false,
  });
  const json = express.json({ limit: 64 });
  app.post("/v1/chat/completions", json, (req, res) => {
    res.json({ echo: req.body as unknown });
  });
  app.post("/v1/messages", json, (req, res) => {
    res.json({ echo: req.body as unknown });
  });
  app.get("/v1/boom", () => {
    throw new Error(internalDetail);
  });
  app.get("/v1/messages/boom", async () => {
    await Promise.resolve();
    throw new Error(internalDetail);
  });
  app.get("/v1/limited", () => {
    throw new GatewayError("upstream_rate_limited", "slow down", { headers: { "retry-after": "7" } });
  });
  app.get("/v1/validate", (req) => {
    z.object({ limit: z.coerce.number().int().positive() }).parse(req.query);
  });
  app.get("/v1/half-sent", (_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write("data: one\n\n");
    throw new Error("failed mid-stream");
  });
  finishApp(app);
  const server = await startHttpServer(app, 0, "127.0.0.1");
  running.push(server);
  return server.url;
}

function postJson(url: string, body: string, contentType = "application/json"): Promise<Response> {
  return fetch(url, { method: "POST", headers: { "content-type": contentType }, body });
}

describe("errorFormatFor", () => {
  it("when the path is /v1/messages or below it, then the format is anthropic", () => {
    for (const path of ["/v1/messages", "/v1/messages/", "/v1/messages/count_tokens", "/v1/async/messages", "/v1/async/messages/job_1"]) {
      expect(errorFormatFor(path), path).toBe("anthropic");
    }
  });

  it("when the path is any other route, then the format is openai", () => {
    for (const path of [
      "/v1/chat/completions",
      "/v1/responses",
      "/v1/models",
      "/v1/messagesx",
      "/v1/async/chat/completions",
      "/v2/messages",
      "/messages",
      "/v1/tools/webtool/search",
      "/",
    ]) {
      expect(errorFormatFor(path), path).toBe("openai");
    }
  });
});

describe("toGatewayError", () => {
  it("when given a GatewayError, then it is returned as is", () => {
    const err = new GatewayError("key_disabled", "disabled");
    expect(toGatewayError(err)).toBe(err);
  });

  it("when given a ZodError, then it becomes a 400 naming the field", () => {
    const result = z.object({ n: z.number() }).safeParse({ n: "x" });
    if (result.success) throw new Error("expected a failure");
    const err = toGatewayError(result.error);
    expect(err.status).toBe(400);
    expect(err.param).toBe("n");
  });

  it("when given body-parser errors, then each maps to its own code and status", () => {
    const cases: [string, string, number][] = [
      ["entity.parse.failed", "invalid_request", 400],
      ["entity.too.large", "body_too_large", 413],
      ["encoding.unsupported", "unsupported_media_type", 415],
      ["charset.unsupported", "unsupported_media_type", 415],
      ["request.aborted", "invalid_request", 400],
    ];
    for (const [type, code, status] of cases) {
      const err = toGatewayError(Object.assign(new Error("from body-parser"), { type, status: 400, limit: 1024 }));
      expect([err.code, err.status], type).toEqual([code, status]);
    }
  });

  it("when body-parser reports another client-side failure (e.g. request.size.invalid, 400), then it stays a 4xx, not a 500", () => {
    const sizeMismatch = Object.assign(new Error("request size did not match content length"), {
      type: "request.size.invalid",
      status: 400,
      statusCode: 400,
      expose: true,
    });
    const err = toGatewayError(sizeMismatch);
    expect(err.status).toBeGreaterThanOrEqual(400);
    expect(err.status).toBeLessThan(500);
  });

  it("when the body is too large, then the message states the limit", () => {
    const err = toGatewayError(Object.assign(new Error("too big"), { type: "entity.too.large", limit: 2048 }));
    expect(err.message).toContain("2048");
  });

  it("when given an unknown error, then it is a 500 with a generic message that keeps the cause", () => {
    const cause = new Error(internalDetail);
    const err = toGatewayError(cause);
    expect(err.code).toBe("internal_error");
    expect(err.status).toBe(500);
    expect(err.message).not.toContain("hunter2");
    expect(err.cause).toBe(cause);
    expect(err.retryable).toBe(false);
  });

  it("when the database refuses a text value (SQLSTATE 22021 or 22P05, itself or as a wrapper's cause), then it is a 400 naming U+0000", () => {
    const refusal = (code: string) => Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), { code });
    for (const thrown of [refusal("22021"), refusal("22P05"), new Error("store failed", { cause: refusal("22021") })]) {
      const err = toGatewayError(thrown);
      expect([err.code, err.status]).toEqual(["invalid_request", 400]);
      expect(err.message).toContain("U+0000");
    }
    // Other database errors are the gateway's, not the caller's.
    for (const code of ["23505", "22P02", "57014"]) expect(toGatewayError(refusal(code)).status, code).toBe(500);
  });

  it("when the thrown value is not an Error (a string, a number, null or undefined), then it is still a 500", () => {
    for (const thrown of ["boom", 42, null, undefined]) {
      const err = toGatewayError(thrown);
      expect([err.code, err.status], String(thrown)).toEqual(["internal_error", 500]);
    }
  });
});

describe("finishApp over HTTP", () => {
  it("when a route is unknown, then it answers 404 in the OpenAI envelope with all four keys", async () => {
    const url = await serve();
    const res = await fetch(`${url}/v1/nope`);
    expect(res.status).toBe(404);
    expect(res.headers.get("x-request-id")).toMatch(/^req_[0-9a-f]{32}$/);
    const body = (await res.json()) as OpenAIBody;
    expect(body).toEqual({
      error: { message: expect.stringContaining("/v1/nope"), type: "invalid_request_error", param: null, code: "not_found" },
    });
  });

  it("when a /v1/messages path is unknown, then it answers 404 in the Anthropic envelope with the request id", async () => {
    const url = await serve();
    const res = await fetch(`${url}/v1/messages`); // only POST exists
    expect(res.status).toBe(404);
    const body = (await res.json()) as AnthropicBody;
    expect(body.type).toBe("error");
    expect(body.error.type).toBe("not_found_error");
    expect(body.request_id).toBe(res.headers.get("x-request-id"));
  });

  it("when the JSON body is invalid, then it is a 400 in the route's envelope", async () => {
    const url = await serve();
    const chat = await postJson(`${url}/v1/chat/completions`, "{not json");
    expect(chat.status).toBe(400);
    const chatBody = (await chat.json()) as OpenAIBody;
    expect(chatBody.error).toMatchObject({ type: "invalid_request_error", code: "invalid_request", param: null });

    const messages = await postJson(`${url}/v1/messages`, "{not json");
    expect(messages.status).toBe(400);
    const messagesBody = (await messages.json()) as AnthropicBody;
    expect(messagesBody).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
  });

  it("when the body is over the limit, then it is a 413 body_too_large", async () => {
    const url = await serve();
    const res = await postJson(`${url}/v1/chat/completions`, JSON.stringify({ text: "x".repeat(500) }));
    expect(res.status).toBe(413);
    expect(((await res.json()) as OpenAIBody).error.code).toBe("body_too_large");
  });

  it("when the body declares an unsupported charset, then it is a 415", async () => {
    const url = await serve();
    const res = await postJson(`${url}/v1/chat/completions`, "{}", "application/json; charset=koi8-r");
    expect(res.status).toBe(415);
    expect(((await res.json()) as OpenAIBody).error.code).toBe("unsupported_media_type");
  });

  it("when a valid body is sent, then the route sees it (the edge does not get in the way)", async () => {
    const url = await serve();
    const res = await postJson(`${url}/v1/chat/completions`, JSON.stringify({ a: 1 }));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ echo: { a: 1 } });
  });

  it("when a handler throws an unknown error, then the caller gets a 500 without internals and it is logged with the request id", async () => {
    const logLines: string[] = [];
    const url = await serve({ logLines });
    const res = await fetch(`${url}/v1/boom`);
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(text).not.toContain("hunter2");
    expect(text).not.toContain("10.1.2.3");
    expect(text).not.toMatch(/at .*\.ts/); // no stack trace
    expect(JSON.parse(text)).toEqual({
      error: { message: "Internal server error", type: "server_error", param: null, code: "internal_error" },
    });
    const requestId = res.headers.get("x-request-id") ?? "";
    const logged = logLines.map((l) => JSON.parse(l) as { requestId?: string; msg?: string; level: number });
    const failure = logged.find((l) => l.msg === "request failed");
    expect(failure?.requestId).toBe(requestId);
    expect(failure?.level).toBeGreaterThanOrEqual(50);
  });

  it("when an async /v1/messages handler rejects, then the 500 is in the Anthropic envelope", async () => {
    const url = await serve();
    const res = await fetch(`${url}/v1/messages/boom`);
    expect(res.status).toBe(500);
    const body = (await res.json()) as AnthropicBody;
    expect(body.error).toEqual({ type: "api_error", message: "Internal server error" });
  });

  it("when a GatewayError carries headers, then they are on the response", async () => {
    const url = await serve();
    const res = await fetch(`${url}/v1/limited`);
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("7");
    expect(((await res.json()) as OpenAIBody).error.code).toBe("upstream_rate_limited");
  });

  it("when a handler throws a ZodError, then it is a 400 naming the field", async () => {
    const url = await serve();
    const res = await fetch(`${url}/v1/validate?limit=-3`);
    expect(res.status).toBe(400);
    expect(((await res.json()) as OpenAIBody).error.param).toBe("limit");
  });

  it("when a handler fails after the headers went out, then the connection is cut rather than a second body written", async () => {
    const url = await serve();
    // Whether the cut lands before or after the first bytes reach the client, the response never completes.
    const outcome = await fetch(`${url}/v1/half-sent`)
      .then((res) => res.text())
      .then(
        (text) => `completed: ${text}`,
        () => "cut",
      );
    expect(outcome).toBe("cut");
  });
});

describe("request id", () => {
  it("when the app does not trust the caller, then a caller's x-request-id is replaced", async () => {
    const url = await serve({ trustRequestId: false });
    const res = await fetch(`${url}/v1/nope`, { headers: { "x-request-id": "client-chosen" } });
    expect(res.headers.get("x-request-id")).not.toBe("client-chosen");
    expect(res.headers.get("x-request-id")).toMatch(/^req_/);
  });

  it("when the app trusts the caller, then a safe x-request-id is kept and an unsafe one replaced", async () => {
    const url = await serve({ trustRequestId: true });
    const kept = await fetch(`${url}/v1/nope`, { headers: { "x-request-id": "req_upstream-1.2:3" } });
    expect(kept.headers.get("x-request-id")).toBe("req_upstream-1.2:3");
    const replaced = await fetch(`${url}/v1/nope`, { headers: { "x-request-id": "bad id <script>" } });
    expect(replaced.headers.get("x-request-id")).toMatch(/^req_[0-9a-f]{32}$/);
    const tooLong = await fetch(`${url}/v1/nope`, { headers: { "x-request-id": "a".repeat(200) } });
    expect(tooLong.headers.get("x-request-id")).toMatch(/^req_[0-9a-f]{32}$/);
  });
});
