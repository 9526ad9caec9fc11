import fc from "fast-check";
import { badEscapes, badUtf8, huge, multipart, nested, stringWith, transcriptionParts, withValue, type HugeKind, type Nesting } from "../bodies";
import { fuzzCase } from "../fuzz-case";
import { bodyRoutes, jsonRoutes, publicRoutes } from "../route-table";
import { describePlace, jsonCase, pick, place, routeAndModel, type FuzzClass } from "./common";

/** What is inside a JSON body: broken syntax, wrong types, prototype keys, nesting, size, bad strings. */

const malformedTexts = [
  "",
  "{",
  "}",
  "[",
  "null",
  "nul",
  "{}",
  "[]",
  '""',
  "0",
  "-",
  '{"model":}',
  "{'model':'gpt'}",
  '{"model":"gpt",}',
  '{"model" "gpt"}',
  '{"model":"gpt"}{"model":"gpt"}',
  '{"model":"gpt"} trailing',
  '{"model":NaN}',
  '{"model":Infinity}',
  '{"model":undefined}',
  '{"model":"gpt" /* comment */}',
  '{"model":"\\x41"}',
  '{"model":"\\u12"}',
  '{"model":"unterminated}',
  "\ufeff{}",
];

function isJson(body: Buffer): boolean {
  try {
    JSON.parse(body.toString("utf8"));
    return true;
  } catch {
    return false;
  }
}

export const malformedJson: FuzzClass = {
  name: "malformed-json",
  mayRelay: false,
  weight: 8,
  arbitrary: fc
    .record({
      rm: routeAndModel(jsonRoutes),
      how: fc.oneof(
        fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }),
        fc.record({
          kind: fc.constant("insert" as const),
          at: fc.nat(),
          junk: fc.constantFrom("{", "}", "[", "]", ",", ":", '"', "\\", "'", "NaN", "//", "\u0000"),
        }),
        fc.record({ kind: fc.constant("fixed" as const), i: fc.nat() }),
        fc.record({ kind: fc.constant("bytes" as const), bytes: fc.uint8Array({ maxLength: 256 }) }),
        fc.record({ kind: fc.constant("bom" as const) }),
      ),
    })
    .map(({ rm: { route, model }, how }) => {
      const valid = JSON.stringify(route.valid(model));
      let body: Buffer;
      let note: string;
      if (how.kind === "truncate") {
        const at = how.at % valid.length;
        body = Buffer.from(valid.slice(0, at));
        note = `valid body cut after ${at} of ${valid.length} characters`;
      } else if (how.kind === "insert") {
        const at = how.at % valid.length;
        body = Buffer.from(valid.slice(0, at) + how.junk + valid.slice(at));
        note = `${JSON.stringify(how.junk)} inserted at ${at}`;
      } else if (how.kind === "fixed") {
        body = Buffer.from(pick(malformedTexts, how.i));
        note = "a fixed malformed text";
      } else if (how.kind === "bytes") {
        body = Buffer.from(how.bytes);
        note = "random bytes";
      } else {
        body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(valid), Buffer.from(" {")]);
        note = "BOM, a valid body, then a stray brace";
      }
      // A character inserted into a string can leave valid JSON, which a provider may then judge.
      const stillValid = isJson(body);
      return jsonCase("malformed-json", stillValid, route, body, stillValid ? `${note} (still valid JSON)` : note);
    }),
};

export const wrongType: FuzzClass = {
  name: "wrong-type",
  mayRelay: true,
  weight: 9,
  arbitrary: routeAndModel(jsonRoutes)
    .chain(({ route, model }) => fc.record({ route: fc.constant(route), model: fc.constant(model), where: place(route), value: fc.jsonValue({ maxDepth: 3 }) }))
    .map(({ route, model, where, value }) =>
      jsonCase(
        "wrong-type",
        true,
        route,
        withValue(route.valid(model), where, JSON.stringify(value) ?? "null"),
        `${JSON.stringify(value).slice(0, 80)} ${describePlace(where)}`,
      ),
    ),
};

export const protoKeys: FuzzClass = {
  name: "proto-keys",
  mayRelay: true,
  weight: 3,
  arbitrary: routeAndModel(jsonRoutes)
    .chain(({ route, model }) =>
      fc.record({
        route: fc.constant(route),
        model: fc.constant(model),
        where: place(route, false),
        key: fc.constantFrom("__proto__", "constructor", "prototype", "toString", "hasOwnProperty", "valueOf", "toJSON"),
        inner: fc.constantFrom('{"model":"claude","polluted":true}', '{"prototype":{"polluted":true}}', "null", "1", '"x"', "[]"),
      }),
    )
    .map(({ route, model, where, key, inner }) =>
      jsonCase("proto-keys", true, route, withValue(route.valid(model), where, `{"${key}":${inner}}`), `{"${key}":${inner}} ${describePlace(where)}`),
    ),
};

export const deepNesting: FuzzClass = {
  name: "deep-nesting",
  mayRelay: true,
  weight: 8,
  arbitrary: routeAndModel(jsonRoutes)
    .chain(({ route, model }) =>
      fc.record({
        route: fc.constant(route),
        model: fc.constant(model),
        where: place(route),
        depth: fc.oneof(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 1_000, max: 10_000 }), fc.constant(10_000)),
        kind: fc.constantFrom<Nesting>("array", "object", "mixed"),
      }),
    )
    .map(({ route, model, where, depth, kind }) =>
      jsonCase(
        "deep-nesting",
        true,
        route,
        withValue(route.valid(model), where, nested(depth, kind)),
        `${depth} levels of ${kind} nesting ${describePlace(where)}`,
      ),
    ),
};

export const hugeValues: FuzzClass = {
  name: "huge-values",
  mayRelay: true,
  weight: 4,
  arbitrary: routeAndModel(jsonRoutes)
    .chain(({ route, model }) =>
      fc.record({
        route: fc.constant(route),
        model: fc.constant(model),
        where: place(route, false),
        kind: fc.constantFrom<HugeKind>("string", "multibyte-string", "escapes", "array", "keys", "digits", "exponent"),
        size: fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 1, max: 100_000 }) }, { weight: 1, arbitrary: fc.constantFrom(1_000_000, 3_000_000) }),
      }),
    )
    .map(({ route, model, where, kind, size }) => {
      const n = kind === "exponent" ? Math.min(size, 10_000_000) : size;
      return jsonCase("huge-values", true, route, withValue(route.valid(model), where, huge(kind, n)), `${kind} of size ${n} ${describePlace(where)}`);
    }),
};

/** A hostile string: raw bytes that are not UTF-8, or escapes for NUL and lone surrogates. */
const badString = fc.oneof(
  fc.constantFrom(...Object.keys(badUtf8)).map((name) => ({ name, bytes: Buffer.from(badUtf8[name]!) })),
  fc.constantFrom(...badEscapes).map((esc) => ({ name: esc, bytes: Buffer.from(esc) })),
);

export const badStrings: FuzzClass = {
  name: "bad-strings",
  mayRelay: true,
  weight: 10,
  arbitrary: fc
    .record({
      rm: routeAndModel([...bodyRoutes, ...publicRoutes.filter((r) => r.name === "serptool/search")]),
      bad: badString,
      repeat: fc.integer({ min: 1, max: 3 }),
      s: fc.nat(),
      where: fc.constantFrom("string field", "key name", "unknown field"),
    })
    .map(({ rm: { route, model }, bad, repeat, s, where }) => {
      const note = `${bad.name} ×${repeat} in ${where}`;
      if (route.body === "none") {
        // serptool: the bytes percent-encoded into a query parameter, as a client would send them.
        const encoded = [...Buffer.concat(new Array<Buffer>(repeat).fill(bad.bytes))].map((b) => `%${b.toString(16).padStart(2, "0").toUpperCase()}`).join("");
        const param = where === "key name" ? `${encoded}=x&q=fuzz` : `q=ab${encoded}cd`;
        return fuzzCase({
          cls: "bad-strings",
          mayRelay: true,
          method: "GET",
          target: `${route.path}?${param}&engine=google`,
          envelope: "openai",
          key: "valid",
          note: `${note} (percent-encoded query)`,
        });
      }
      const valid = route.valid(model);
      if (route.body === "multipart") {
        const parts = transcriptionParts(valid);
        const value = Buffer.concat([Buffer.from("ab"), ...new Array<Buffer>(repeat).fill(bad.bytes)]);
        if (where === "key name") parts.push({ name: value, value: "x" });
        else if (where === "unknown field") parts.push({ name: "x_fuzz", value });
        else parts[s % (parts.length - 1)]!.value = value;
        const body = multipart("fuzzboundary", parts);
        return jsonCase("bad-strings", true, route, body, note, { "content-type": "multipart/form-data; boundary=fuzzboundary" });
      }
      const literal = stringWith(bad.bytes, repeat);
      let body: Buffer;
      if (where === "string field") body = withValue(valid, { at: "field", path: pick(route.strings, s) }, literal);
      else if (where === "unknown field") body = withValue(valid, { at: "unknown" }, literal);
      else body = withValue(valid, { at: "unknown" }, Buffer.concat([Buffer.from("{"), literal, Buffer.from(":1}")]));
      return jsonCase("bad-strings", true, route, body, note);
    }),
};
