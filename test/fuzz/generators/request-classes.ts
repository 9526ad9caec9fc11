import fc from "fast-check";
import { multipart, transcriptionParts } from "../bodies";
import { fuzzCase, type KeyChoice } from "../fuzz-case";
import { jobRoutes, publicRoutes } from "../route-table";
import { exact, JSON_TYPE, pick, routeAndModel, type FuzzClass } from "./common";

/** The request line and the key: ids in paths, methods, paths, keys. */

const badIdTexts = [
  "job_%C0%AF",
  "job_%E9%FF",
  "job_%ED%A0%80",
  "job_%FF",
  "job_%00",
  "%00",
  "job_%",
  "job_%zz",
  "job_%2",
  "..",
  "%2e%2e",
  "job_..%2F..%2Fetc",
  "job_%2F",
  "job_x%2Fextra",
  "job_x/extra",
  "job_x;y=1",
  "job_x?y=%ZZ",
  "job_\xff\xfe",
  "job_%F0%9F%98%80",
  "JOB_abc",
  "job_",
  "job_00000000000000000000000000000000",
  "%6A%6F%62%5F%31",
];

/** A byte as it goes in a path: unreserved characters as they are, the rest percent-encoded. */
export const pathByte = (b: number) =>
  /[A-Za-z0-9._~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).padStart(2, "0").toUpperCase()}`;

export const badIds: FuzzClass = {
  name: "bad-ids",
  mayRelay: false,
  weight: 6,
  arbitrary: fc
    .record({
      route: fc.constantFrom(...jobRoutes, publicRoutes.find((r) => r.name === "models/{id}")!),
      id: fc.oneof(
        fc.nat().map((i) => pick(badIdTexts, i)),
        fc.integer({ min: 200, max: 12_000 }).map((n) => `job_${"a".repeat(n)}`),
        // Random bytes, percent-encoded where a path needs it: mostly not UTF-8 once decoded.
        fc.uint8Array({ minLength: 1, maxLength: 20 }).map((bytes) => `job_${[...bytes].map(pathByte).join("")}`),
      ),
    })
    .map(({ route, id }) => {
      const base = route.jobRoute ? route.path : "/v1/models";
      const target = `${base}/${id}`;
      return fuzzCase({
        cls: "bad-ids",
        mayRelay: false,
        method: "GET",
        target,
        envelope: exact(route, target),
        key: "valid",
        note: `id ${JSON.stringify(id.slice(0, 60))}${id.length > 60 ? ` (${id.length} characters)` : ""}`,
        expect: { statuses: [400, 404, 414, 431] },
      });
    }),
};

const knownMethods = ["PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "TRACE", "PROPFIND", "PURGE", "MKCOL", "COPY", "LOCK", "SEARCH", "QUERY", "GET", "POST"];
const unknownMethods = ["FUZZ", "get", "G3T", "POSTX"];

export const oddMethod: FuzzClass = {
  name: "odd-method",
  mayRelay: false,
  weight: 5,
  arbitrary: fc
    .record({ rm: routeAndModel(publicRoutes), method: fc.constantFrom(...knownMethods, ...unknownMethods), withBody: fc.boolean() })
    .filter(({ rm, method }) => method !== rm.route.method)
    .map(({ rm: { route, model }, method, withBody }) => {
      const target = route.jobRoute ? `${route.path}/job_00000000000000000000000000000000` : route.path;
      const body = withBody && route.body === "json" ? Buffer.from(JSON.stringify(route.valid(model))) : undefined;
      return fuzzCase({
        cls: "odd-method",
        mayRelay: false,
        method,
        target,
        envelope: exact(route, target),
        key: "valid",
        headers: body ? JSON_TYPE : {},
        body,
        note: `${method} on a ${route.method} route${unknownMethods.includes(method) ? " (a method Node's parser does not know)" : ""}`,
      });
    }),
};

const oddPathTexts = [
  "//v1/chat/completions",
  "/v1",
  "/v1/",
  "/v1/async//chat/completions",
  "/v1/async/chat//completions",
  "/V1/chat/completions",
  "/v1/Chat/Completions",
  "/v1/chat%2Fcompletions",
  "/v1/chat%2fcompletions",
  "/v1%2Fchat%2Fcompletions",
  "/v1/./chat/completions",
  "/v1/../v1/chat/completions",
  "/v1/chat/completions//",
  "/v1/chat/completions/..",
  "/v1/chat/completions;x=y",
  "/v1/chat/completions%00",
  "/v1/chat/completions%",
  "/v1/%C0%AF",
  "/v1/%E9%FF/x",
  "/v1/tools//search",
  "/v1/tools/webtool",
  "/v1/tools/webtool/",
  "/v1/tools/%2e%2e/webtool/search",
  "/v1/tools/webtool%2Fsearch",
  "/v1/tools/webtool/research/",
  "/v1/tools/webtool/research//",
  "/v1/tools/webtool/researchx",
  "/v1/tools/serptool/search/",
  "/v1/tools/nosuchtool/search",
  "/v1/async",
  "/v1/async/",
  "/v1/async/chat",
  "/v1/async/job_x",
  "/v1/async/messages//job_x",
  "/v1/models/",
  "/v1/models//gpt",
  "/v1/models/gpt/extra",
  "/v1/messages/",
  "/v1/messages/batches",
  "/",
  "/v2/chat/completions",
  "/livez/../v1/chat/completions",
  "/readyz%2F..%2Fv1",
  "/metrics",
  "/admin/workspaces",
  "*",
  "http://evil.example/v1/chat/completions",
  "/v1/chat/completions?%ZZ=1",
  "/v1/chat/completions?a=%00&b=%C0%AF",
  `/v1/chat/completions?${"a=1&".repeat(2_000)}`,
  "/v1/\xff\xfe",
  "/v1/chat/completions\\..\\x",
];
const segments = [
  "chat",
  "completions",
  "async",
  "tools",
  "webtool",
  "serptool",
  "research",
  "models",
  "messages",
  "..",
  ".",
  "",
  "%2F",
  "%2e%2e",
  "%00",
  "job_x",
  "%C0%AF",
  "x",
];

export const oddPath: FuzzClass = {
  name: "odd-path",
  mayRelay: false,
  weight: 8,
  arbitrary: fc
    .record({
      path: fc.oneof(
        fc.nat().map((i) => pick(oddPathTexts, i)),
        fc.array(fc.constantFrom(...segments), { minLength: 1, maxLength: 6 }).map((s) => `/v1/${s.join("/")}`),
        fc.constantFrom(1_000, 8_000, 15_000, 20_000, 70_000).map((n) => `/v1/${"a".repeat(n)}`),
        fc.integer({ min: 100, max: 12_000 }).map((n) => `/v1/tools/${"t".repeat(n)}/search`),
      ),
      method: fc.constantFrom("GET", "POST"),
    })
    .map(({ path, method }) =>
      fuzzCase({
        cls: "odd-path",
        mayRelay: false,
        method,
        target: path,
        key: "valid",
        headers: method === "POST" ? JSON_TYPE : {},
        body: method === "POST" ? Buffer.from(JSON.stringify({ model: "gpt", messages: [{ role: "user", content: "hi" }] })) : undefined,
        note: `${method} to an odd path of ${path.length} characters`,
      }),
    ),
};

const badKeys = [
  "missing",
  "empty-bearer",
  "bearer-only",
  "basic",
  "malformed",
  "unknown",
  "revoked",
  "disabled",
  "long",
  "latin1",
  "two-keys",
] as const satisfies readonly KeyChoice[];

export const keys: FuzzClass = {
  name: "keys",
  mayRelay: false,
  weight: 8,
  arbitrary: fc.record({ rm: routeAndModel(publicRoutes), key: fc.constantFrom(...badKeys) }).map(({ rm: { route, model }, key }) => {
    const target = route.jobRoute ? `${route.path}/job_00000000000000000000000000000000` : route.path;
    const body =
      route.body === "json"
        ? Buffer.from(JSON.stringify(route.valid(model)))
        : route.body === "multipart"
          ? multipart("fuzzboundary", transcriptionParts(route.valid(model)))
          : undefined;
    const headers: Record<string, string> =
      route.body === "json" ? JSON_TYPE : route.body === "multipart" ? { "content-type": "multipart/form-data; boundary=fuzzboundary" } : {};
    return fuzzCase({
      cls: "keys",
      mayRelay: false,
      method: route.method,
      target,
      envelope: exact(route, target),
      key,
      headers,
      body,
      note: `a ${key} key`,
      expect: { statuses: key === "disabled" ? [403] : [401] },
    });
  }),
};
