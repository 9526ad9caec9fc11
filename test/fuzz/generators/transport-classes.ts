import fc from "fast-check";
import { compress, multipart, transcriptionParts, zipBomb, type Coding } from "../bodies";
import { fuzzCase, type KeyChoice } from "../fuzz-case";
import { bodyRoutes, jsonRoutes } from "../route-table";
import { BODY_LIMIT, exact, jsonCase, JSON_TYPE, routeAndModel, type FuzzClass } from "./common";

/** How a body travels: its content type and coding, its size, the headers around it. */

const contentTypes = [
  undefined,
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=fuzzboundary",
  "multipart/form-data",
  "application/json; charset=utf-16",
  "application/json; charset=latin1",
  "application/json; charset=bogus",
  "application/json;;;",
  "application/JSON",
  "application/vnd.api+json",
  "application/octet-stream",
  "*/*",
  "json",
  "",
  ";",
  "application/json, text/plain",
  `application/json; x=${"a".repeat(4000)}`,
];
type BodyShape = "json" | "utf16" | "form" | "multipart" | "multipart-no-file" | "multipart-truncated" | "multipart-wrong-boundary" | "empty";

export const contentType: FuzzClass = {
  name: "content-type",
  mayRelay: false,
  weight: 8,
  arbitrary: fc
    .record({
      rm: routeAndModel(bodyRoutes),
      type: fc.constantFrom(...contentTypes),
      shape: fc.constantFrom<BodyShape>("json", "utf16", "form", "multipart", "multipart-no-file", "multipart-truncated", "multipart-wrong-boundary", "empty"),
    })
    .map(({ rm: { route, model }, type, shape }) => {
      const valid = route.valid(model);
      const text = JSON.stringify(valid);
      const parts = transcriptionParts(valid);
      const bodies: Record<BodyShape, Buffer> = {
        json: Buffer.from(text),
        utf16: Buffer.from(text, "utf16le"),
        form: Buffer.from(new URLSearchParams(Object.entries(valid).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)])).toString()),
        multipart: multipart("fuzzboundary", parts),
        "multipart-no-file": multipart("fuzzboundary", parts.slice(0, -1)),
        "multipart-truncated": multipart("fuzzboundary", parts, false).subarray(0, 300),
        "multipart-wrong-boundary": multipart("otherboundary", parts),
        empty: Buffer.alloc(0),
      };
      const headers: Record<string, string> = type === undefined ? {} : { "content-type": type };
      return jsonCase(
        "content-type",
        false,
        route,
        bodies[shape],
        `${shape} body sent as ${type === undefined ? "no content-type" : JSON.stringify(type.slice(0, 60))}`,
        headers,
      );
    }),
};

type EncodingHow = "valid" | "truncated" | "flipped" | "plain-but-labelled" | "bomb";

export const contentEncoding: FuzzClass = {
  name: "content-encoding",
  mayRelay: false,
  weight: 6,
  arbitrary: fc
    .record({
      rm: routeAndModel(jsonRoutes),
      coding: fc.constantFrom<Coding>("gzip", "deflate", "br"),
      how: fc.constantFrom<EncodingHow>("valid", "truncated", "flipped", "plain-but-labelled", "bomb"),
      label: fc.constantFrom<string | undefined>(undefined, undefined, undefined, "compress", "zstd", "identity", "GZIP", "gzip, gzip", "gzip, br", "x-fuzz"),
      at: fc.nat(),
    })
    .map(({ rm: { route, model }, coding, how, label, at }) => {
      const plain = Buffer.from(JSON.stringify(route.valid(model)));
      const packed = compress(coding, plain);
      let body: Buffer;
      if (how === "valid") body = packed;
      else if (how === "truncated") body = packed.subarray(0, Math.max(1, at % packed.length));
      else if (how === "flipped") {
        body = Buffer.from(packed);
        const i = at % body.length;
        body[i] = body[i]! ^ 0xff;
      } else if (how === "plain-but-labelled") body = plain;
      else body = zipBomb(coding);
      const encoding = label ?? coding;
      return jsonCase("content-encoding", false, route, body, `${how} ${coding} body labelled content-encoding: ${encoding}`, {
        ...JSON_TYPE,
        "content-encoding": encoding,
      });
    }),
};

export const oddHeaders: FuzzClass = {
  name: "odd-headers",
  mayRelay: true,
  weight: 4,
  arbitrary: fc
    .record({
      rm: routeAndModel(jsonRoutes),
      header: fc.constantFrom<[string, string]>(
        ["x-gw-identity", "forged"],
        ["x-gw-credentials", "forged"],
        ["x-gw-token-ticket", '{"workspace_id":"ws_x","key_id":"key_x","bucket":1,"tokens":-1}'],
        ["x-gw-request-id", "../../etc/passwd"],
        ["x-request-id", "\xff\xfe../\xe9"],
        ["x-request-id", "r".repeat(8_000)],
        ["traceparent", "00-zzzz-zzzz-01"],
        ["anthropic-version", "1999-99-99"],
        ["anthropic-beta", "b".repeat(8_000)],
        ["idempotency-key", "\xe9\xff"],
        ["idempotency-key", "k".repeat(300)],
        ["accept", "text/event-stream"],
        ["accept-encoding", "br;q=2, *;q=0"],
        ["expect", "100-continue"],
        ["host", "evil.example"],
        ["host", ""],
        ["connection", "close"],
        ["x-forwarded-for", "1.2.3.4, ::1, \xff"],
      ),
    })
    .map(({ rm: { route, model }, header: [name, value] }) =>
      jsonCase("odd-headers", true, route, Buffer.from(JSON.stringify(route.valid(model))), `header ${name}: ${JSON.stringify(value.slice(0, 40))}`, {
        ...JSON_TYPE,
        [name]: value,
      }),
    ),
};

export const oversized: FuzzClass = {
  name: "oversized",
  mayRelay: false,
  weight: 1,
  arbitrary: fc
    .record({
      route: fc.constantFrom(...bodyRoutes),
      over: fc.integer({ min: 1, max: 4 * 1024 * 1024 }),
      chunked: fc.boolean(),
      key: fc.constantFrom<KeyChoice>("valid", "valid", "missing"),
    })
    .map(({ route, over, chunked, key }) =>
      fuzzCase({
        cls: "oversized",
        mayRelay: false,
        method: "POST",
        target: route.path,
        envelope: exact(route),
        key,
        headers: route.body === "multipart" ? { "content-type": "multipart/form-data; boundary=fuzzboundary" } : JSON_TYPE,
        streamed: { bytes: BODY_LIMIT + over, chunked },
        note: `a body ${over} bytes over the limit, ${key === "missing" ? "without a key" : "with a valid key"}`,
        expect: { statuses: key === "missing" ? [401, 413] : [413] },
      }),
    ),
};
