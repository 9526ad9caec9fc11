import { Agent, createServer, request, type IncomingHttpHeaders, type Server } from "node:http";
import { connect, type AddressInfo } from "node:net";
import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createInProcessBus, type Bus } from "@gw/bus";
import type { PlanLimitsTable } from "@gw/config";
import { createPgliteDb, type Db } from "@gw/db";
import { createLogger } from "@gw/logger";
import { createIngressService, type IngressService } from "./service";
import { testIngressSettings } from "./testing/settings";

/**
 * The public port's door against hostile requests, in front of a recording backend: what is refused
 * before a body is read, what never reaches a backend, how bodies are bounded and decoded, how paths
 * are made canonical and how every accepted request is charged.
 */
const adminToken = "door-test-admin-token-0123456789";
const logger = createLogger({ service: "door-test", level: "silent" });
// Limits no test here reaches: a 1 MiB body reserves about 260,000 tokens, and a test that polls with
// such bodies on a slow machine must meet the door's refusal, not the rate limit.
const plans: PlanLimitsTable = {
  plus: { requests_per_minute: 100_000, tokens_per_minute: 1_000_000_000 },
  pro: { requests_per_minute: 100_000, tokens_per_minute: 1_000_000_000 },
  enterprise: { requests_per_minute: 100_000, tokens_per_minute: 1_000_000_000 },
};
const MiB = 1024 * 1024;

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}
let db: Db;
let bus: Bus;
let backend: Server;
let seen: Seen[] = [];
let service: IngressService;
let gw: { url: string; adminUrl: string };
let key: string;

beforeAll(async () => {
  db = await createPgliteDb();
  bus = createInProcessBus({ logger });
  backend = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => {
      seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: Buffer.concat(parts) });
      res.setHeader("content-type", "application/json");
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => backend.listen(0, "127.0.0.1", r));
  const backendUrl = `http://127.0.0.1:${(backend.address() as AddressInfo).port}`;
  service = createIngressService({
    db,
    bus,
    logger,
    settings: testIngressSettings(
      { adminToken, internalSecret: "door-test-internal-secret-0123456789", backendUrl, plans },
      {
        bodyLimitBytes: 32 * MiB,
        // Room for one 3 MiB body at a time, so the budget can be seen at work.
        door: { bodyInflightBytes: 3 * MiB },
        // Fuzzing sends many bad keys from one address; this file tests the door, not that limit.
        authGuard: { failuresPerMinute: 0, trackedAddresses: 10, lookupConcurrency: 4, lookupQueue: 256, unknownKeyCacheSize: 1000 },
      },
    ),
  });
  gw = await service.start();
  const ws = await admin("POST", "/admin/workspaces", { name: "door", plan: "pro" });
  key = (await admin("POST", `/admin/workspaces/${ws.id}/keys`, {})).key;
}, 60_000);

afterAll(async () => {
  await service?.stop();
  await bus?.close();
  await db?.close();
  await new Promise((r) => backend?.close(r));
});

beforeEach(() => {
  seen = [];
});

async function admin(method: string, path: string, body?: unknown): Promise<{ id: string; key: string }> {
  const res = await fetch(`${gw.adminUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as { id: string; key: string };
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** Whether the server asked for the body with `100 Continue`. */
  continued: boolean;
}

interface CallOptions {
  method?: string;
  headers?: Record<string, string | number>;
  body?: Buffer | string;
  /** Declare this length but send only `body`: a body that never ends unless the server stops reading. */
  declaredLength?: number;
  noKey?: boolean;
}

/** A raw HTTP/1.1 call with full control of headers and body, on a fresh connection. */
function call(path: string, options: CallOptions = {}): Promise<Answer> {
  const headers: Record<string, string | number> = { ...(options.noKey ? {} : { authorization: `Bearer ${key}` }), ...options.headers };
  if (options.declaredLength !== undefined) headers["content-length"] = options.declaredLength;
  return new Promise((resolve, reject) => {
    let continued = false;
    // host, port and path apart: a URL would have its dot segments resolved before sending.
    const { hostname, port } = new URL(gw.url);
    const req = request({ hostname, port, path, method: options.method ?? "POST", headers, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on("data", (c: Buffer) => parts.push(c));
      res.on("end", () => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts).toString(), continued });
        req.destroy();
      });
    });
    req.on("continue", () => {
      continued = true;
      if (options.body !== undefined) req.end(options.body);
    });
    req.on("error", reject);
    if (headers.expect) return;
    if (options.declaredLength !== undefined) req.write(options.body ?? "");
    else req.end(options.body);
  });
}

const json = { "content-type": "application/json" };
const chatBody = (extra: object = {}) => JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 10, ...extra });
const errorOf = (answer: Answer) => (JSON.parse(answer.body) as { error: { message: string; code: string; type: string } }).error;

describe("when a body nests 10,000 levels deep", () => {
  const deep = (open: string, close: string) => open.repeat(10_000) + close.repeat(10_000);
  const bodies = {
    "a known field": `{"model":"m","messages":${deep("[", "]")}}`,
    "an unknown field": `{"model":"m","messages":[],"x":${deep('{"a":', "}").replace(/\{"a":\}/, '{"a":1}')}}`,
  };
  for (const [where, body] of Object.entries(bodies)) {
    for (const path of ["/v1/chat/completions", "/v1/async/chat/completions", "/v1/tools/webtool/search", "/v1/tools/webtool/research"]) {
      it(`in ${where} on ${path}, then it is a 400 naming the depth and nothing reaches a backend`, async () => {
        const answer = await call(path, { headers: json, body });
        expect(answer.status).toBe(400);
        expect(errorOf(answer).message).toContain("nested deeper than 64 levels");
        expect(seen).toHaveLength(0);
      });
    }
  }
});

describe("when a body holds more members or items than any request needs", () => {
  const members = (n: number) => `{${Array.from({ length: n }, (_, i) => `"k${i}":0`).join(",")}}`;
  const bodies: [string, string, string][] = [
    ["one object of 10,001 members", `{"model":"m","messages":[${members(10_001)}]}`, "a JSON object has more than 10,000 members"],
    [
      "26 objects of 10,000 members",
      `{"model":"m","messages":[${Array.from({ length: 26 }, () => members(10_000)).join(",")}]}`,
      "more than 250,000 object members in all",
    ],
    ["an array of 1,000,001 zeros", `{"model":"m","messages":[],"x":[${"0,".repeat(1_000_000)}0]}`, "more than 1,000,000 array elements and object members"],
  ];
  for (const [what, body, says] of bodies) {
    it(`of ${what}, then it is a 400 saying so before it is parsed, and nothing reaches a backend`, async () => {
      const answer = await call("/v1/chat/completions", { headers: json, body });
      expect(answer.status).toBe(400);
      expect(errorOf(answer)).toMatchObject({ code: "invalid_request", type: "invalid_request_error" });
      expect(errorOf(answer).message).toContain(says);
      expect(seen).toHaveLength(0);
    });
  }

  it("at the bounds, then it is served", async () => {
    const answer = await call("/v1/chat/completions", { headers: json, body: chatBody({ metadata: JSON.parse(members(10_000)) }) });
    expect(answer.status).toBe(200);
    expect(seen).toHaveLength(1);
  });
});

describe("when the path or method is not one the gateway serves", () => {
  for (const path of ["/v1", "//v1/x", "/v1/nope", "/admin/workspaces", "/V1/chat/completions", "/v1/tools/webtool", "/v1/../v1/models"]) {
    it(`then ${path} is a 404 in the envelope before the key or the body is looked at`, async () => {
      const answer = await call(path, { noKey: true, headers: json, body: "x".repeat(1024), declaredLength: 32 * MiB });
      expect(answer.status).toBe(404);
      expect(errorOf(answer).code).toBe("not_found");
      expect(seen).toHaveLength(0);
    });
  }

  it("then a known path with another method is a 405 naming the one it takes", async () => {
    const answer = await call("/v1/chat/completions", { method: "PUT", noKey: true });
    expect(answer.status).toBe(405);
    expect(answer.headers.allow).toBe("POST");
  });

  for (const [method, path, allow] of [
    ["POST", "/v1/files/file-abc", "GET, DELETE"],
    ["DELETE", "/v1/batches", "GET, POST"],
  ] as const) {
    it(`then ${method} ${path}, a path that takes several methods, is a 405 naming all of them in Allow`, async () => {
      const answer = await call(path, { method, noKey: true });
      expect(answer.status).toBe(405);
      expect(answer.headers.allow).toBe(allow);
      expect(errorOf(answer).message).toBe(`${method} is not allowed on ${path}: it takes ${allow}`);
      expect(seen).toHaveLength(0);
    });
  }

  for (const id of ["job_%C0%AF", "job_%E9%FF", `job_${"f".repeat(200)}`, "job_..", "%2e%2e"]) {
    it(`then the job id ${id.slice(0, 20)} is a 404, on an async read and on research, and reaches no backend`, async () => {
      for (const path of [`/v1/async/chat/completions/${id}`, `/v1/tools/webtool/research/${id}`]) {
        const answer = await call(path, { method: "GET" });
        expect(answer.status, path).toBe(404);
        expect(errorOf(answer).type).toBe("invalid_request_error");
      }
      expect(seen).toHaveLength(0);
    });
  }
});

describe("when a file or a batch is named by its id", () => {
  it("then a DELETE and a bodiless cancel reach the jobs backend with their method and path", async () => {
    expect((await call("/v1/files/file-abc123", { method: "DELETE" })).status).toBe(200);
    expect((await call("/v1/batches/batch_abc123/cancel", { method: "POST" })).status).toBe(200);
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual(["DELETE /v1/files/file-abc123", "POST /v1/batches/batch_abc123/cancel"]);
  });

  it("then an id not in OpenAI's form is a 404 that reaches no backend", async () => {
    for (const [method, path] of [
      ["GET", "/v1/files/file_abc"],
      ["DELETE", "/v1/files/file-%2e%2e"],
      ["GET", "/v1/files/file-abc/content/x"],
      ["POST", "/v1/batches/batch-abc/cancel"],
    ] as const) {
      const answer = await call(path, { method });
      expect(answer.status, `${method} ${path}`).toBe(404);
    }
    expect(seen).toHaveLength(0);
  });
});

describe("when a request has no valid key", () => {
  for (const [name, headers] of [
    ["no key", {}],
    ["an unknown key", { authorization: `Bearer gw_live_${"x".repeat(40)}` }],
    ["a malformed key", { authorization: "Bearer nope" }],
  ] as const) {
    it(`with ${name} and a 32 MiB body still arriving, then it is a 401 at once, before the body has come`, async () => {
      const answer = await call("/v1/chat/completions", { noKey: true, headers: { ...json, ...headers }, body: "{", declaredLength: 32 * MiB });
      expect(answer.status).toBe(401);
    });
  }

  it("with a whole 32 MiB body sent, then the client gets its 401, not a reset, and may use the connection again", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const send = () =>
        new Promise<{ status: number; socket: unknown }>((resolve, reject) => {
          const req = request(`${gw.url}/v1/chat/completions`, { method: "POST", agent, headers: { ...json, "content-length": 32 * MiB } }, (res) => {
            res.resume();
            res.on("end", () => resolve({ status: res.statusCode ?? 0, socket: req.socket }));
          });
          req.on("error", reject);
          req.end(Buffer.alloc(32 * MiB, 0x20));
        });
      const first = await send();
      const second = await send();
      expect([first.status, second.status]).toEqual([401, 401]);
      expect(second.socket).toBe(first.socket);
    } finally {
      agent.destroy();
    }
  });

  it("with connection: close, then the rest of the body sent after the 401 is still read: a lingering close, not a reset", async () => {
    const { hostname, port } = new URL(gw.url);
    const outcome = await new Promise<{ answer: string; error?: string }>((resolve) => {
      const socket = connect(Number(port), hostname);
      let answer = "";
      let error: string | undefined;
      socket.on("error", (err: NodeJS.ErrnoException) => (error = err.code));
      socket.on("close", () => resolve({ answer, error }));
      socket.once("data", (d: Buffer) => {
        answer = d.toString("latin1");
        // The answer is in; a client that had not finished sending goes on with its body.
        socket.end(Buffer.alloc(15 * MiB, 0x20));
      });
      const head = `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: ${16 * MiB}\r\n\r\n`;
      socket.write(Buffer.concat([Buffer.from(head), Buffer.alloc(MiB, 0x20)]));
    });
    expect(outcome.answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(outcome.error).toBeUndefined();
  });

  it("with a body declared far larger than any route takes, then it is refused and the connection closed rather than read", async () => {
    const answer = await call("/v1/chat/completions", { noKey: true, headers: json, body: "{", declaredLength: 1024 * MiB });
    expect(answer.status).toBe(401);
    expect(answer.headers.connection).toBe("close");
  });

  it("that waits on Expect: 100-continue, then it is refused without being asked for its body", async () => {
    const answer = await call("/v1/chat/completions", { noKey: true, headers: { ...json, expect: "100-continue" }, body: chatBody() });
    expect(answer.status).toBe(401);
    expect(answer.continued).toBe(false);
  });

  it("with a key that waits on Expect: 100-continue, then the body is asked for and forwarded", async () => {
    const answer = await call("/v1/chat/completions", { headers: { ...json, expect: "100-continue" }, body: chatBody() });
    expect(answer.continued).toBe(true);
    expect(answer.status).toBe(200);
    expect(seen[0]?.headers.expect).toBeUndefined();
  });
});

describe("when the metrics label a flood of made-up paths", () => {
  it("then the series stay those of the route table, whatever tool or path names are typed", async () => {
    const metrics = async () =>
      (await (await fetch(`${gw.adminUrl}/metrics`, { headers: { authorization: `Bearer ${adminToken}` } })).text())
        .split("\n")
        .filter((line) => line.startsWith("gw_http_requests_total{"));
    for (let i = 0; i < 200; i++) {
      const junk = `t${i}${Math.random().toString(36).slice(2)}`;
      await call(`/v1/tools/${junk}/search`, { noKey: true });
      await call(`/v1/${junk}`, { method: "GET", noKey: true });
    }
    const series = await metrics();
    expect(series.some((s) => s.includes('route="unmatched"'))).toBe(true);
    expect(series.filter((s) => s.includes("/v1/tools/t"))).toEqual([]);
    expect(series.length).toBeLessThan(20);
  });
});

describe("when a body is not of the type its route takes", () => {
  const cases: [string, string, string][] = [
    ["/v1/chat/completions", "text/plain", chatBody()],
    ["/v1/chat/completions", "application/x-www-form-urlencoded", chatBody()],
    ["/v1/chat/completions", "multipart/form-data; boundary=x", chatBody()],
    ["/v1/chat/completions", "application/json; charset=utf-16", chatBody()],
    ["/v1/async/chat/completions", "text/plain", chatBody()],
    ["/v1/tools/webtool/search", "text/plain", '{"query":"q"}'],
    ["/v1/audio/transcriptions", "application/json", '{"model":"m"}'],
  ];
  for (const [path, type, body] of cases) {
    it(`then ${type} on ${path} is a 415 and nothing reaches a backend`, async () => {
      const answer = await call(path, { headers: { "content-type": type }, body });
      expect(answer.status).toBe(415);
      expect(errorOf(answer).code).toBe("unsupported_media_type");
      expect(seen).toHaveLength(0);
    });
  }

  it("then a body on a read is refused and never forwarded", async () => {
    // node's client sends a GET's body without a length unless told one
    const answer = await call("/v1/models", { method: "GET", headers: { ...json, "content-length": 2 }, body: "{}" });
    expect(answer.status).toBe(413);
    expect(seen).toHaveLength(0);
  });
});

describe("when the caller's connection has its own hop-by-hop headers", () => {
  it("then they stay on that connection: the service's pooled one never hears connection: close", async () => {
    const answer = await call("/v1/chat/completions", { headers: { ...json, connection: "close", "keep-alive": "timeout=5" }, body: chatBody() });
    expect(answer.status).toBe(200);
    expect(seen[0]?.headers.connection).not.toBe("close");
    expect(seen[0]?.headers["keep-alive"]).toBeUndefined();
  });
});

describe("when a path is not in its canonical form", () => {
  it("then a double slash is collapsed once at the door: the backend sees the canonical path and the call is charged", async () => {
    const answer = await call("/v1/async//chat/completions", { headers: json, body: chatBody({ max_tokens: 500 }) });
    expect(answer.status).toBe(200);
    expect(seen[0]?.url).toBe("/v1/async/chat/completions");
    const ticket = JSON.parse(String(seen[0]?.headers["x-gw-token-ticket"])) as { tokens: number };
    expect(ticket.tokens).toBeGreaterThanOrEqual(500);
  });

  it("then a trailing slash and a query survive as the canonical path plus the same query", async () => {
    await call("/v1/tools/serptool/search/?q=cats&engine=google", { method: "GET" });
    expect(seen[0]?.url).toBe("/v1/tools/serptool/search?q=cats&engine=google");
  });
});

describe("when a body comes compressed", () => {
  const plain = chatBody();
  for (const [encoding, encode] of [
    ["gzip", gzipSync],
    ["deflate", deflateSync],
    ["br", brotliCompressSync],
  ] as const) {
    it(`with ${encoding}, then the backend gets the decoded bytes and no content-encoding`, async () => {
      const answer = await call("/v1/chat/completions", { headers: { ...json, "content-encoding": encoding }, body: encode(Buffer.from(plain)) });
      expect(answer.status).toBe(200);
      expect(seen[0]?.body.toString()).toBe(plain);
      expect(seen[0]?.headers["content-encoding"]).toBeUndefined();
      expect(seen[0]?.headers["content-length"]).toBe(String(Buffer.byteLength(plain)));
    });
  }

  it("then one that inflates past the route's limit (a zip bomb) is a 413 and reaches no backend", async () => {
    const bomb = gzipSync(Buffer.alloc(40 * MiB, 0x20));
    expect(bomb.length).toBeLessThan(MiB);
    const answer = await call("/v1/tools/webtool/search", { headers: { ...json, "content-encoding": "gzip" }, body: bomb });
    expect(answer.status).toBe(413);
    expect(seen).toHaveLength(0);
  });

  it("then one that inflates past the budget of bodies held at once is refused as it grows, not held", async () => {
    const bomb = gzipSync(Buffer.alloc(40 * MiB, 0x20));
    const answer = await call("/v1/chat/completions", { headers: { ...json, "content-encoding": "gzip" }, body: bomb });
    expect(answer.status).toBe(503);
    expect(errorOf(answer).code).toBe("server_busy");
    expect(seen).toHaveLength(0);
  });

  it("then a corrupt one is a 400 and an unknown encoding a 415", async () => {
    const corrupt = await call("/v1/chat/completions", { headers: { ...json, "content-encoding": "gzip" }, body: "not gzip" });
    expect(corrupt.status).toBe(400);
    const unknown = await call("/v1/chat/completions", { headers: { ...json, "content-encoding": "compress" }, body: plain });
    expect(unknown.status).toBe(415);
    expect(seen).toHaveLength(0);
  });
});

describe("when bodies are large", () => {
  it("then each route has its own bound: 1 MiB and a byte is too much for a tool or an image prompt, not for chat", async () => {
    const body = JSON.stringify({ model: "m", messages: [], pad: "x".repeat(MiB) });
    for (const path of ["/v1/tools/webtool/search", "/v1/images/generations", "/v1/audio/speech"]) {
      const answer = await call(path, { headers: json, body });
      expect(answer.status, path).toBe(413);
    }
    expect(seen).toHaveLength(0);
    const chat = await call("/v1/chat/completions", { headers: json, body });
    expect(chat.status).toBe(200);
  });

  it("then a body over the budget of bodies held at once is a retryable 503 while another is being received, and fine after", async () => {
    // A body declared at 2 MiB holds that much of the 3 MiB budget for as long as it is arriving.
    const stalled = request(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      agent: false,
      headers: { authorization: `Bearer ${key}`, ...json, "content-length": 2 * MiB },
    });
    stalled.on("error", () => undefined);
    stalled.write("{");
    const big = () => call("/v1/chat/completions", { headers: json, body: chatBody({ pad: "x".repeat(MiB + 1024) }) });
    await expect.poll(async () => (await big()).status, { timeout: 10_000 }).toBe(503);
    const busy = await big();
    expect(busy.headers["retry-after"]).toBe("1");
    expect(errorOf(busy).code).toBe("server_busy");
    // A small body still fits beside it; once the stalled upload is gone, so does the large one.
    expect((await call("/v1/chat/completions", { headers: json, body: chatBody() })).status).toBe(200);
    stalled.destroy();
    await expect.poll(async () => (await big()).status, { timeout: 10_000 }).toBe(200);
  });
});

describe("when a compressed upload is cut off midway", () => {
  it("then what it had reserved is given back and the gateway goes on serving", async () => {
    const stream = gzipSync(Buffer.alloc(5 * MiB, 0x20));
    const cut = request(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      agent: false,
      headers: { authorization: `Bearer ${key}`, ...json, "content-encoding": "gzip", "transfer-encoding": "chunked" },
    });
    cut.on("error", () => undefined);
    // About half the stream: some 2.5 MiB decoded, held while the rest is awaited.
    cut.write(stream.subarray(0, Math.floor(stream.length / 2)));
    const big = () => call("/v1/chat/completions", { headers: json, body: chatBody({ pad: "x".repeat(MiB) }) });
    await expect.poll(async () => (await big()).status, { timeout: 10_000 }).toBe(503);
    cut.destroy();
    await expect.poll(async () => (await big()).status, { timeout: 10_000 }).toBe(200);
    expect((await fetch(`${gw.url}/livez`)).status).toBe(200);
  });
});

describe("when a transcription is uploaded", () => {
  it("then it is charged by its size: the token reservation grows with the file", async () => {
    const form = (bytes: number) => {
      const boundary = "b0undary";
      const parts = [
        `--${boundary}\r\ncontent-disposition: form-data; name="model"\r\n\r\nwhisper\r\n`,
        `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="a.mp3"\r\ncontent-type: audio/mpeg\r\n\r\n`,
      ];
      return { boundary, body: Buffer.concat([Buffer.from(parts.join("")), Buffer.alloc(bytes, 1), Buffer.from(`\r\n--${boundary}--\r\n`)]) };
    };
    const remaining = async (bytes: number) => {
      const { boundary, body } = form(bytes);
      const answer = await call("/v1/audio/transcriptions", { headers: { "content-type": `multipart/form-data; boundary=${boundary}` }, body });
      expect(answer.status).toBe(200);
      return Number(answer.headers["x-ratelimit-remaining-tokens"]);
    };
    const before = await remaining(0);
    const after = await remaining(512 * 1024);
    expect(before - after).toBeGreaterThanOrEqual(512);
  });
});
