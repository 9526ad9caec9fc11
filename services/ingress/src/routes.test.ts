import { describe, expect, it } from "vitest";
import { rateLimitFor, resolveRoute, type RouteTarget } from "./routes";

describe("resolveRoute", () => {
  const table: [string, RouteTarget | undefined][] = [
    ["/v1/models", { backend: "inference", label: "/v1/models" }],
    ["/v1/models/", { backend: "inference", label: "/v1/models" }],
    ["/v1/models/gpt-4o-mini", { backend: "inference", label: "/v1/models/:model" }],
    ["/v1/chat/completions", { backend: "inference", label: "/v1/chat/completions" }],
    ["/v1/chat/completions/", { backend: "inference", label: "/v1/chat/completions" }],
    ["/v1/messages", { backend: "inference", label: "/v1/messages" }],
    ["/v1/responses", { backend: "inference", label: "/v1/responses" }],
    ["/v1/completions", { backend: "inference", label: "/v1/completions" }],
    ["/v1/embeddings", { backend: "inference", label: "/v1/embeddings" }],
    ["/v1/rerank", { backend: "inference", label: "/v1/rerank" }],
    ["/v1/images/generations", { backend: "inference", label: "/v1/images/generations" }],
    ["/v1/audio/speech", { backend: "inference", label: "/v1/audio/speech" }],
    ["/v1/audio/transcriptions", { backend: "inference", label: "/v1/audio/transcriptions" }],
    ["/v1/ocr", { backend: "inference", label: "/v1/ocr" }],
    ["/v1/async/chat/completions", { backend: "jobs", label: "/v1/async" }],
    ["/v1/async/chat/completions/job_abc", { backend: "jobs", label: "/v1/async" }],
    ["/v1/tools/webtool/search", { backend: "tools", label: "/v1/tools/webtool", tool: "webtool" }],
    ["/v1/tools/webtool/extract", { backend: "tools", label: "/v1/tools/webtool", tool: "webtool" }],
    ["/v1/tools/webtool/crawl", { backend: "tools", label: "/v1/tools/webtool", tool: "webtool" }],
    ["/v1/tools/webtool/map", { backend: "tools", label: "/v1/tools/webtool", tool: "webtool" }],
    ["/v1/tools/webtool/research", { backend: "jobs", label: "/v1/tools/webtool/research", tool: "webtool" }],
    ["/v1/tools/webtool/research/job_123", { backend: "jobs", label: "/v1/tools/webtool/research", tool: "webtool" }],
    ["/v1/tools/serptool/search", { backend: "tools", label: "/v1/tools/serptool", tool: "serptool" }],
    ["/v1/nope", undefined],
    ["/v1", undefined],
    ["/v1/", undefined],
    ["/", undefined],
    ["/v2/chat/completions", undefined],
    ["/v1/chat", undefined],
    ["/v1/chat/completions/extra", undefined],
    ["/v1/tools/webtool", undefined],
    ["/v1/tools/webtool/", undefined],
  ];

  for (const [path, expected] of table) {
    it(`when the path is ${path}, then it resolves to ${expected ? `${expected.backend} ${expected.label}` : "nothing"}`, () => {
      expect(resolveRoute(path)).toEqual(expected);
    });
  }

  it("when a tools path is resolved, then the tool named in it is the one to check (serptool research is not a job)", () => {
    expect(resolveRoute("/v1/tools/serptool/research")).toEqual({ backend: "tools", label: "/v1/tools/serptool", tool: "serptool" });
  });

  it("when a model route is resolved, then it carries no tool to check", () => {
    for (const path of ["/v1/chat/completions", "/v1/messages", "/v1/models", "/v1/async/chat/completions"]) {
      expect(resolveRoute(path)?.tool, path).toBeUndefined();
    }
  });
});

describe("rateLimitFor", () => {
  const cases: [string, string, { tokenRoute?: string } | undefined][] = [
    ["POST", "/v1/chat/completions", { tokenRoute: "/v1/chat/completions" }],
    ["POST", "/v1/messages", { tokenRoute: "/v1/messages" }],
    ["POST", "/v1/embeddings", { tokenRoute: "/v1/embeddings" }],
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
      const target = resolveRoute(path);
      if (!target) throw new Error(`unresolved ${path}`);
      expect(rateLimitFor(target, method, path)).toEqual(expected);
    });
  }
});
