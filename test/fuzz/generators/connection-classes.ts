import fc from "fast-check";
import { fuzzCase } from "../fuzz-case";
import { jsonRoutes } from "../route-table";
import { exact, JSON_TYPE, routeAndModel, type FuzzClass } from "./common";

/**
 * What the client does with its connection: streamed answers read to the end on a connection that
 * closes or stays open, and clients that go away early. Both are judged mostly by what follows:
 * the next call to the same service must still be served (properties.ts).
 */

const streamRoutes = jsonRoutes.filter((r) => ["chat/completions", "messages", "responses", "completions"].includes(r.name));

export const streams: FuzzClass = {
  name: "streams",
  mayRelay: false,
  weight: 4,
  arbitrary: fc
    .record({ rm: routeAndModel(streamRoutes), connection: fc.constantFrom("close", "keep-alive", "default"), accept: fc.boolean() })
    .map(({ rm: { route, model }, connection, accept }) => {
      const headers: Record<string, string> = { ...JSON_TYPE, ...(accept ? { accept: "text/event-stream" } : {}) };
      if (connection !== "default") headers.connection = connection;
      return fuzzCase({
        cls: "streams",
        mayRelay: false,
        method: "POST",
        target: route.path,
        envelope: exact(route),
        key: "valid",
        headers,
        body: Buffer.from(JSON.stringify({ ...route.valid(model), stream: true })),
        keepAlive: connection === "keep-alive",
        note: `a streamed ${route.name} on a connection that is ${connection === "default" ? "closed after the answer (node's default without an agent)" : connection}`,
        expect: { statuses: [200] },
      });
    }),
};

export const cutShort: FuzzClass = {
  name: "cut-short",
  mayRelay: true,
  weight: 3,
  arbitrary: fc
    .record({ rm: routeAndModel(jsonRoutes), cut: fc.constantFrom("after-head", "mid-body", "after-first-byte"), stream: fc.boolean() })
    .map(({ rm: { route, model }, cut, stream }) =>
      fuzzCase({
        cls: "cut-short",
        mayRelay: true,
        method: "POST",
        target: route.path,
        envelope: exact(route),
        key: "valid",
        headers: JSON_TYPE,
        body: Buffer.from(JSON.stringify({ ...route.valid(model), ...(stream ? { stream: true } : {}) })),
        cut,
        note: `the client goes away ${cut === "after-head" ? "after sending the head" : cut === "mid-body" ? "halfway through the body" : "at the first byte of the answer"}${stream ? " (streamed)" : ""}`,
      }),
    ),
};
