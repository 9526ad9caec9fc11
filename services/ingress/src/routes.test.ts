import { describe, expect, it } from "vitest";
import { ledgerRouteOf, normalisePath, publicRoutes, resolveRoute, type RouteTarget } from "./routes";

type Expected = Pick<RouteTarget, "backend" | "label" | "body"> & { tool?: string };

const target = (path: string, method: string): RouteTarget => {
  const match = resolveRoute(path, method);
  if (!("target" in match)) throw new Error(`${method} ${path}: ${match.error}`);
  return match.target;
};

describe("resolveRoute", () => {
  const table: [string, string, Expected][] = [
    ["GET", "/v1/models", { backend: "inference", label: "/v1/models", body: "none" }],
    ["GET", "/v1/models/gpt-4o-mini", { backend: "inference", label: "/v1/models/:model", body: "none" }],
    ["POST", "/v1/chat/completions", { backend: "inference", label: "/v1/chat/completions", body: "json" }],
    ["POST", "/v1/messages", { backend: "inference", label: "/v1/messages", body: "json" }],
    ["POST", "/v1/responses", { backend: "inference", label: "/v1/responses", body: "json" }],
    ["POST", "/v1/completions", { backend: "inference", label: "/v1/completions", body: "json" }],
    ["POST", "/v1/embeddings", { backend: "inference", label: "/v1/embeddings", body: "json" }],
    ["POST", "/v1/rerank", { backend: "inference", label: "/v1/rerank", body: "json" }],
    ["POST", "/v1/images/generations", { backend: "inference", label: "/v1/images/generations", body: "json" }],
    ["POST", "/v1/audio/speech", { backend: "inference", label: "/v1/audio/speech", body: "json" }],
    ["POST", "/v1/audio/transcriptions", { backend: "inference", label: "/v1/audio/transcriptions", body: "multipart" }],
    ["POST", "/v1/ocr", { backend: "inference", label: "/v1/ocr", body: "json" }],
    ["POST", "/v1/async/chat/completions", { backend: "jobs", label: "/v1/async", body: "json" }],
    ["POST", "/v1/async/audio/transcriptions", { backend: "jobs", label: "/v1/async", body: "multipart" }],
    ["GET", "/v1/async/chat/completions/job_abc", { backend: "jobs", label: "/v1/async", body: "none" }],
    ["POST", "/v1/tools/webtool/search", { backend: "tools", label: "/v1/tools/webtool", body: "json", tool: "webtool" }],
    ["POST", "/v1/tools/webtool/extract", { backend: "tools", label: "/v1/tools/webtool", body: "json", tool: "webtool" }],
    ["POST", "/v1/tools/webtool/crawl", { backend: "tools", label: "/v1/tools/webtool", body: "json", tool: "webtool" }],
    ["POST", "/v1/tools/webtool/map", { backend: "tools", label: "/v1/tools/webtool", body: "json", tool: "webtool" }],
    ["POST", "/v1/tools/webtool/research", { backend: "jobs", label: "/v1/tools/webtool/research", body: "json", tool: "webtool" }],
    ["GET", "/v1/tools/webtool/research/job_123", { backend: "jobs", label: "/v1/tools/webtool/research", body: "none", tool: "webtool" }],
    ["GET", "/v1/tools/serptool/search", { backend: "tools", label: "/v1/tools/serptool", body: "none", tool: "serptool" }],
    ["HEAD", "/v1/models", { backend: "inference", label: "/v1/models", body: "none" }],
    ["POST", "/v1/files", { backend: "jobs", label: "/v1/files", body: "multipart" }],
    ["GET", "/v1/files", { backend: "jobs", label: "/v1/files", body: "none" }],
    ["GET", "/v1/files/file-abc123", { backend: "jobs", label: "/v1/files/{file_id}", body: "none" }],
    ["DELETE", "/v1/files/file-abc123", { backend: "jobs", label: "/v1/files/{file_id}", body: "none" }],
    ["GET", "/v1/files/file-abc123/content", { backend: "jobs", label: "/v1/files/{file_id}/content", body: "none" }],
    ["HEAD", "/v1/files/file-abc123/content", { backend: "jobs", label: "/v1/files/{file_id}/content", body: "none" }],
    ["POST", "/v1/batches", { backend: "jobs", label: "/v1/batches", body: "json" }],
    ["GET", "/v1/batches", { backend: "jobs", label: "/v1/batches", body: "none" }],
    ["GET", "/v1/batches/batch_abc123", { backend: "jobs", label: "/v1/batches/{batch_id}", body: "none" }],
    ["POST", "/v1/batches/batch_abc123/cancel", { backend: "jobs", label: "/v1/batches/{batch_id}/cancel", body: "none" }],
  ];
  for (const [method, path, expected] of table) {
    it(`when ${method} ${path} is matched, then it goes to ${expected.backend} under ${expected.label}`, () => {
      expect(target(path, method)).toMatchObject(expected);
    });
  }

  const unknown = [
    "/v1/nope",
    "/v1",
    "/",
    "/v2/chat/completions",
    "/v1/chat",
    "/v1/chat/completions/extra",
    "/v1/tools/webtool",
    "/v1/tools/serptool/research",
    "/v1/tools/anything-typed-by-a-caller/search",
    "/v1/async/nope",
    "/v1/async/chat/completions/not-a-job",
    "/v1/async/nope/job_123",
    "/v1/async/chat/completions/job_%C0%AF",
    `/v1/tools/webtool/research/job_${"a".repeat(65)}`,
    "/v1/files/abc",
    "/v1/files/file_abc",
    "/v1/files/file-",
    "/v1/files/file-a.b",
    "/v1/files/file-%41bc",
    `/v1/files/file-${"a".repeat(65)}`,
    "/v1/files/file-abc/contents",
    "/v1/files/file-abc/content/more",
    "/v1/files/content",
    "/v1/batches/abc",
    "/v1/batches/batch-abc",
    "/v1/batches/batch_",
    `/v1/batches/batch_${"a".repeat(65)}`,
    "/v1/batches/batch_abc/cancelled",
    "/v1/batches/batch_abc/cancel/now",
    "/v1/batches/job_abc",
    "/v1/batches/file-abc/cancel",
  ];
  for (const path of unknown) {
    it(`when the path is ${path.slice(0, 60)}, then nothing matches: a 404 before anything is read`, () => {
      expect(resolveRoute(path, "POST")).toEqual({ error: "not_found" });
      expect(resolveRoute(path, "GET")).toEqual({ error: "not_found" });
    });
  }

  it("when a known path is called with another method, then the answer names the method it takes", () => {
    expect(resolveRoute("/v1/chat/completions", "GET")).toEqual({ error: "method_not_allowed", allow: "POST" });
    expect(resolveRoute("/v1/models", "DELETE")).toEqual({ error: "method_not_allowed", allow: "GET" });
    expect(resolveRoute("/v1/async/chat/completions/job_1", "POST")).toEqual({ error: "method_not_allowed", allow: "GET" });
  });

  it("when a path takes several methods and is called with another, then the answer names them all, as an Allow header does", () => {
    const cases: [string, string, string][] = [
      ["POST", "/v1/files/file-abc", "GET, DELETE"],
      ["PUT", "/v1/files/file-abc", "GET, DELETE"],
      ["DELETE", "/v1/files", "GET, POST"],
      ["PATCH", "/v1/files", "GET, POST"],
      ["DELETE", "/v1/batches", "GET, POST"],
      ["DELETE", "/v1/files/file-abc/content", "GET"],
      ["POST", "/v1/batches/batch_abc", "GET"],
      ["DELETE", "/v1/batches/batch_abc", "GET"],
      ["GET", "/v1/batches/batch_abc/cancel", "POST"],
      ["HEAD", "/v1/batches/batch_abc/cancel", "POST"],
      ["DELETE", "/v1/chat/completions", "POST"],
      ["constructor", "/v1/models", "GET"],
    ];
    for (const [method, path, allow] of cases) {
      expect(resolveRoute(path, method), `${method} ${path}`).toEqual({ error: "method_not_allowed", allow });
    }
  });

  it("when any path is matched, then the label is one of a fixed set, whatever the caller typed", () => {
    const labels = new Set<string>();
    for (let i = 0; i < 500; i++) {
      const junk = Math.random().toString(36).slice(2);
      for (const path of [`/v1/tools/${junk}/search`, `/v1/models/${junk}`, `/v1/async/${junk}`, `/v1/${junk}`]) {
        const match = resolveRoute(path, "GET");
        if ("target" in match) labels.add(match.target.label);
      }
    }
    expect([...labels]).toEqual(["/v1/models/:model"]);
  });
});

describe("charges", () => {
  const cases: [string, string, RouteTarget["charge"]][] = [
    ["POST", "/v1/chat/completions", { tokenRoute: "/v1/chat/completions" }],
    ["POST", "/v1/messages", { tokenRoute: "/v1/messages" }],
    ["POST", "/v1/embeddings", { tokenRoute: "/v1/embeddings" }],
    ["POST", "/v1/audio/transcriptions", { tokenRoute: "/v1/audio/transcriptions" }],
    ["GET", "/v1/models", undefined],
    ["GET", "/v1/models/gpt-4o-mini", undefined],
    ["POST", "/v1/async/chat/completions", { tokenRoute: "/v1/chat/completions" }],
    ["GET", "/v1/async/chat/completions/job_1", undefined],
    ["POST", "/v1/tools/webtool/search", {}],
    ["GET", "/v1/tools/serptool/search", {}],
    ["POST", "/v1/tools/webtool/research", {}],
    ["GET", "/v1/tools/webtool/research/job_1", undefined],
    ["POST", "/v1/files", {}],
    ["GET", "/v1/files", undefined],
    ["GET", "/v1/files/file-1", undefined],
    ["DELETE", "/v1/files/file-1", undefined],
    ["GET", "/v1/files/file-1/content", undefined],
    ["POST", "/v1/batches", {}],
    ["GET", "/v1/batches", undefined],
    ["GET", "/v1/batches/batch_1", undefined],
    ["POST", "/v1/batches/batch_1/cancel", undefined],
  ];
  for (const [method, path, expected] of cases) {
    it(`when ${method} ${path} is called, then it ${expected ? "counts" : "is free"}${expected?.tokenRoute ? " with a token estimate" : ""}`, () => {
      expect(target(path, method).charge).toEqual(expected);
    });
  }
});

describe("body bounds", () => {
  it("when a file is uploaded, then it may be as large as OpenAI's batch files (200 MiB); a batch's creation takes 1 MiB", () => {
    expect(target("/v1/files", "POST").maxBodyBytes).toBe(200 * 1024 * 1024);
    expect(target("/v1/batches", "POST").maxBodyBytes).toBe(1024 * 1024);
    expect(target("/v1/batches/batch_1/cancel", "POST").maxBodyBytes).toBe(0);
  });
});

describe("publicRoutes and ledgerRouteOf", () => {
  it("when the table is listed, then each path and method comes once, the Files and Batch routes among them", () => {
    const pairs = publicRoutes().map(({ path, target }) => `${target.method} ${path}`);
    expect(new Set(pairs).size).toBe(pairs.length);
    expect(pairs).toEqual(
      expect.arrayContaining([
        "POST /v1/files",
        "GET /v1/files",
        "GET /v1/files/{file_id}",
        "DELETE /v1/files/{file_id}",
        "GET /v1/files/{file_id}/content",
        "POST /v1/batches",
        "GET /v1/batches",
        "GET /v1/batches/{batch_id}",
        "POST /v1/batches/{batch_id}/cancel",
      ]),
    );
  });

  const ledger: [string, string, string][] = [
    ["POST", "/v1/chat/completions", "/v1/chat/completions"],
    ["GET", "/v1/models/gpt-4o-mini", "/v1/models/{model}"],
    ["GET", "/v1/async/chat/completions/job_1", "/v1/async/chat/completions/{job_id}"],
    ["GET", "/v1/tools/webtool/research/job_1", "/v1/tools/webtool/research/{job_id}"],
    ["POST", "/v1/files", "/v1/files"],
    ["GET", "/v1/files", "/v1/files"],
    ["GET", "/v1/files/file-abc", "/v1/files/{file_id}"],
    ["DELETE", "/v1/files/file-abc", "/v1/files/{file_id}"],
    ["GET", "/v1/files/file-abc/content", "/v1/files/{file_id}/content"],
    ["POST", "/v1/batches", "/v1/batches"],
    ["GET", "/v1/batches/batch_abc", "/v1/batches/{batch_id}"],
    ["POST", "/v1/batches/batch_abc/cancel", "/v1/batches/{batch_id}/cancel"],
  ];
  for (const [method, path, expected] of ledger) {
    it(`when ${method} ${path} is recorded, then the ledger names ${expected}`, () => {
      expect(ledgerRouteOf(path, target(path, method))).toBe(expected);
    });
  }
});

describe("normalisePath", () => {
  const canonical: [string, string][] = [
    ["/v1/chat/completions", "/v1/chat/completions"],
    ["/v1/chat/completions/", "/v1/chat/completions"],
    ["//v1//chat///completions", "/v1/chat/completions"],
    ["/v1/async//chat/completions", "/v1/async/chat/completions"],
    ["/v1/models/meta-llama%2FLlama-3", "/v1/models/meta-llama%2FLlama-3"],
    ["/v1/models/caf%C3%A9", "/v1/models/caf%C3%A9"],
    ["/", "/"],
  ];
  for (const [path, expected] of canonical) {
    it(`when the path is ${path}, then its canonical form is ${expected}`, () => {
      expect(normalisePath(path)).toBe(expected);
    });
  }

  const malformed = [
    "/v1/async/chat/completions/job_%C0%AF",
    "/v1/tools/webtool/research/job_%E9%FF",
    "/v1/models/%",
    "/v1/models/%zz",
    "/v1/../admin/workspaces",
    "/v1/./models",
    "v1/models",
    `/v1/models/${"a".repeat(2000)}`,
  ];
  for (const path of malformed) {
    it(`when the path is ${path.slice(0, 50)}, then it names nothing`, () => {
      expect(normalisePath(path)).toBeUndefined();
    });
  }
});
