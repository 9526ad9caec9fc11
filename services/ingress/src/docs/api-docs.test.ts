import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorFormatFor } from "@gw/service-kit";
import { buildApiDocument } from "@gw/openapi";
import { publicRoutes, resolveRoute, type BodyKind } from "../routes";
import { mountApiDocs } from "./api-docs";
import { contentSecurityPolicy } from "./reference-page";

type Operation = { requestBody?: { content: Record<string, unknown> }; responses: Record<string, { $ref?: string }> };
const doc = buildApiDocument();
const documented = doc.paths as Record<string, Record<string, Operation>>;
const mediaTypes: Record<BodyKind, string[]> = { json: ["application/json"], multipart: ["multipart/form-data"], none: [] };

/** A concrete path for a template, with ids the route table accepts. */
const concrete = (template: string) =>
  template
    .replace("{model}", "gpt-4o-mini")
    .replace("{job_id}", "job_0123456789abcdef0123456789abcdef")
    .replace("{file_id}", "file-abc123")
    .replace("{batch_id}", "batch_abc123");

describe("the API reference against ingress's route table", () => {
  it("when a route is in the table, then the document has it with the same method and body type", () => {
    for (const { path, target } of publicRoutes()) {
      const operation = documented[path]?.[target.method.toLowerCase()];
      expect(operation, `${target.method} ${path} is not documented`).toBeDefined();
      expect(Object.keys(operation!.requestBody?.content ?? {}), path).toEqual(mediaTypes[target.body]);
    }
  });

  it("when the document has an operation, then the gateway serves it: the path and method resolve to a route", () => {
    const templates = new Set(publicRoutes().map((r) => r.path));
    for (const [path, item] of Object.entries(documented)) {
      expect(templates.has(path), `${path} is documented but not in the route table`).toBe(true);
      for (const method of Object.keys(item)) {
        expect(resolveRoute(concrete(path), method.toUpperCase()), `${method} ${path}`).toHaveProperty("target.method", method.toUpperCase());
      }
    }
  });

  it("when a route answers errors, then the document names the envelope the gateway sends on it", () => {
    for (const [path, item] of Object.entries(documented)) {
      const envelope = errorFormatFor(concrete(path)) === "anthropic" ? "AnthropicError" : "OpenAIError";
      for (const operation of Object.values(item)) {
        for (const [status, response] of Object.entries(operation.responses)) {
          if (Number(status) >= 400) expect(response.$ref, `${path} ${status}`).toContain(`/${envelope}${status}`);
        }
      }
    }
  });
});

describe("GET /openapi.json and GET /docs", () => {
  let server: Server;
  let base: string;
  beforeAll(async () => {
    const app = express();
    mountApiDocs(app);
    app.use((_req, res) => void res.status(418).send("the rest of the gateway"));
    server = app.listen(0, "127.0.0.1");
    await new Promise((resolve) => server.once("listening", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it("when the document is fetched, then it is served cached with an ETag, and a matching If-None-Match gets a 304", async () => {
    const res = await fetch(`${base}/openapi.json`, { headers: { "accept-encoding": "identity" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("public, max-age=86400");
    const served = (await res.json()) as { openapi: string; paths: object };
    expect(served.openapi).toBe("3.1.0");
    expect(Object.keys(served.paths)).toEqual(Object.keys(documented));
    const etag = res.headers.get("etag")!;
    expect(etag).toMatch(/^"[\w-]{27}"$/);
    const again = await fetch(`${base}/openapi.json`, { headers: { "if-none-match": etag, "accept-encoding": "identity" } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe("");
  });

  it("when the caller takes gzip, then the document comes gzipped under its own ETag", async () => {
    const { request } = await import("node:http");
    const { status, headers, body } = await new Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }>((resolve, reject) => {
      request(`${base}/openapi.json`, { headers: { "accept-encoding": "gzip" } }, (res) => {
        const parts: Buffer[] = [];
        res.on("data", (c: Buffer) => parts.push(c)).on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(parts) }));
      })
        .on("error", reject)
        .end();
    });
    expect(status).toBe(200);
    expect(headers["content-encoding"]).toBe("gzip");
    expect(headers.etag).toMatch(/-gz"$/);
    expect(JSON.parse(gunzipSync(body).toString("utf8"))).toHaveProperty("openapi", "3.1.0");
  });

  it("when the reference page is fetched, then it has a strict CSP and loads the renderer from this gateway only", async () => {
    const res = await fetch(`${base}/docs`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("content-security-policy")).toBe(contentSecurityPolicy);
    expect(contentSecurityPolicy).toMatch(/default-src 'none'.*script-src 'self'(;|$)/);
    const html = await res.text();
    expect(html).toContain('spec-url="openapi.json"');
    expect(html).not.toMatch(/https?:\/\//);
    const script = /<script src="(docs\/redoc\.[\w-]+\.js)">/.exec(html)?.[1];
    expect(script).toBeDefined();
    const js = await fetch(`${base}/${script}`);
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(js.headers.get("cache-control")).toContain("immutable");
    expect((await js.arrayBuffer()).byteLength).toBeGreaterThan(100_000);
  });

  it("when a path is not the document's or the page's, then it goes on to the rest of the gateway untouched", async () => {
    for (const [method, path] of [
      ["POST", "/v1/chat/completions"],
      ["POST", "/openapi.json"],
      ["GET", "/docs/nothing.js"],
      ["GET", "/docsx"],
      ["GET", "/openapi.yaml"],
    ]) {
      const res = await fetch(`${base}${path}`, { method });
      expect(res.status, `${method} ${path}`).toBe(418);
    }
    const slash = await fetch(`${base}/docs/`, { redirect: "manual" });
    expect(slash.status).toBe(308);
    expect(slash.headers.get("location")).toBe("../docs");
  });
});
