import { describe, expect, it } from "vitest";
import { normalisePath, resolveRoute, type RouteTarget } from "./routes";

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
  ];
  for (const [method, path, expected] of cases) {
    it(`when ${method} ${path} is called, then it ${expected ? "counts" : "is free"}${expected?.tokenRoute ? " with a token estimate" : ""}`, () => {
      expect(target(path, method).charge).toEqual(expected);
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
