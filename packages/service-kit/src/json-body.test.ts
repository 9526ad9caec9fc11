import type express from "express";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { finishApp, createServiceApp } from "./app";
import { createMetrics } from "./metrics";
import { jsonBody, jsonDepthExceeds, MAX_JSON_DEPTH } from "./json-body";
import { createLogger } from "@gw/logger";
import { startHttpServer } from "./server";

/** The reference: the depth of a parsed value, walked recursively. */
function depthOf(value: unknown): number {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(depthOf));
  if (typeof value === "object" && value !== null) return 1 + Math.max(0, ...Object.values(value).map(depthOf));
  return 0;
}

const bytes = (text: string) => Buffer.from(text, "utf8");

describe("jsonDepthExceeds", () => {
  it("when arrays or objects nest one level past the bound, then it says so, and not at the bound", () => {
    for (const [open, close] of [
      ["[", "]"],
      ['{"a":', "}"],
    ] as const) {
      const at = (n: number) => `${open.repeat(n)}1${close.repeat(n)}`;
      expect(jsonDepthExceeds(bytes(at(MAX_JSON_DEPTH)))).toBe(false);
      expect(jsonDepthExceeds(bytes(at(MAX_JSON_DEPTH + 1)))).toBe(true);
    }
  });

  it("when brackets sit inside strings, escaped quotes included, then they are not counted", () => {
    const inString = JSON.stringify({ text: `${"[".repeat(500)}\\"{{{\\\\${"{".repeat(100)}` });
    expect(jsonDepthExceeds(bytes(inString))).toBe(false);
    // a string ending in an escaped backslash closes there: the brackets after it count
    const after = `{"a":"x\\\\","b":${"[".repeat(70)}${"]".repeat(70)}}`;
    expect(jsonDepthExceeds(bytes(after))).toBe(true);
  });

  it("when the bound is set, then it agrees with the depth of the parsed value on any JSON", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 0, max: 9 }), (value, max) => {
        const text = JSON.stringify(value);
        expect(jsonDepthExceeds(bytes(text), max)).toBe(depthOf(JSON.parse(text)) > max);
      }),
      { seed: 20, numRuns: 2000 },
    );
  });
});

describe("jsonBody", () => {
  it("when a service is sent JSON nested 10,000 deep, then it answers a 400 naming the bound, not a 500", async () => {
    const app = createServiceApp({
      logger: createLogger({ service: "t", level: "silent" }),
      metrics: createMetrics("t", { defaults: false }),
      trustRequestId: false,
    });
    app.post("/x", jsonBody("1mb"), (req, res) => {
      res.json({ got: typeof req.body });
    });
    finishApp(app);
    const server = await startHttpServer(app as express.Express, 0, "127.0.0.1");
    try {
      const deep = "[".repeat(10_000) + "]".repeat(10_000);
      const refused = await fetch(`${server.url}/x`, { method: "POST", body: deep, headers: { "content-type": "application/json" } });
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { error: { message: string } }).error.message).toContain(`deeper than ${MAX_JSON_DEPTH}`);
      const fine = await fetch(`${server.url}/x`, { method: "POST", body: '{"a":[1]}', headers: { "content-type": "application/json" } });
      expect(await fine.json()).toEqual({ got: "object" });
    } finally {
      await server.close();
    }
  });
});
