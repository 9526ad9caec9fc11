import type express from "express";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { finishApp, createServiceApp } from "./app";
import { createMetrics } from "./metrics";
import { type JsonBounds, jsonBody, jsonShapeProblem, MAX_JSON_DEPTH } from "./json-body";
import { createLogger } from "@gw/logger";
import { startHttpServer } from "./server";

/** The reference: the depth of a parsed value, walked recursively. */
function depthOf(value: unknown): number {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(depthOf));
  if (typeof value === "object" && value !== null) return 1 + Math.max(0, ...Object.values(value).map(depthOf));
  return 0;
}

const bytes = (text: string) => Buffer.from(text, "utf8");
/** An object of `n` members, each named apart. */
const members = (n: number) => `{${Array.from({ length: n }, (_, i) => `"k${i}":0`).join(",")}}`;
/** The depth bound alone. */
const jsonDepthExceeds = (text: Uint8Array, max = MAX_JSON_DEPTH) =>
  jsonShapeProblem(text, { depth: max, objectMembers: Infinity, members: Infinity, items: Infinity }) !== undefined;

describe("jsonShapeProblem's depth bound", () => {
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

/** The reference: a parsed value's largest object, and its members and items (members and elements) in all. */
function shapeOf(value: unknown): { depth: number; objectMembers: number; members: number; items: number } {
  const shape = { depth: depthOf(value), objectMembers: 0, members: 0, items: 0 };
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) {
      shape.items += v.length;
      v.forEach(walk);
    } else if (typeof v === "object" && v !== null) {
      const values = Object.values(v);
      shape.objectMembers = Math.max(shape.objectMembers, values.length);
      shape.members += values.length;
      shape.items += values.length;
      values.forEach(walk);
    }
  };
  walk(value);
  return shape;
}

describe("jsonShapeProblem", () => {
  const unbounded: JsonBounds = { depth: 1_000, objectMembers: Infinity, members: Infinity, items: Infinity };

  it("when any bound is set, then it finds a problem exactly when the parsed value passes that bound, white space and strings of brackets, colons and commas included", () => {
    const text = fc.oneof(
      fc.jsonValue({ maxDepth: 5 }).map((v) => JSON.stringify(v)),
      fc.jsonValue({ maxDepth: 5 }).map((v) => JSON.stringify(v, null, 2)),
      fc.string().map((key) => JSON.stringify({ [`${key}:,[{"`]: [`,:${key}`, {}, []] })),
    );
    fc.assert(
      fc.property(
        text,
        fc.constantFrom<keyof JsonBounds>("depth", "objectMembers", "members", "items"),
        fc.integer({ min: 0, max: 12 }),
        (json, bound, max) => {
          const shape = shapeOf(JSON.parse(json));
          const problem = jsonShapeProblem(bytes(json), { ...unbounded, [bound]: max });
          expect(problem !== undefined, `${bound} ${max} ${JSON.stringify(shape)} ${json}`).toBe(shape[bound] > max);
        },
      ),
      { seed: 21, numRuns: 4000 },
    );
  });

  it("when a body passes the default bounds, then the message names the bound it passed", () => {
    expect(jsonShapeProblem(bytes(members(10_000)))).toBeUndefined();
    expect(jsonShapeProblem(bytes(members(10_001)))).toBe("Invalid body: a JSON object has more than 10,000 members");
    expect(jsonShapeProblem(bytes(`[${Array.from({ length: 26 }, () => members(10_000)).join(",")}]`))).toBe(
      "Invalid body: JSON holds more than 250,000 object members in all",
    );
    expect(jsonShapeProblem(bytes(`[${"0,".repeat(999_999)}0]`))).toBeUndefined();
    expect(jsonShapeProblem(bytes(`[${"0,".repeat(1_000_000)}0]`))).toBe(
      "Invalid body: JSON holds more than 1,000,000 array elements and object members in all",
    );
    expect(jsonShapeProblem(bytes(`${"[".repeat(65)}${"]".repeat(65)}`))).toBe("Invalid body: JSON nested deeper than 64 levels");
  });
});

describe("jsonBody", () => {
  it("when a service is sent JSON nested 10,000 deep, or an object of 20,000 members, then it answers a 400 naming the bound, not a 500", async () => {
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
      const tooWide = await fetch(`${server.url}/x`, { method: "POST", body: members(20_000), headers: { "content-type": "application/json" } });
      expect(tooWide.status).toBe(400);
      expect(await tooWide.json()).toMatchObject({
        error: { message: "Invalid body: a JSON object has more than 10,000 members", type: "invalid_request_error" },
      });
      const fine = await fetch(`${server.url}/x`, { method: "POST", body: '{"a":[1]}', headers: { "content-type": "application/json" } });
      expect(await fine.json()).toEqual({ got: "object" });
    } finally {
      await server.close();
    }
  });
});
