import { parse } from "node:url";
import { describe, expect, it } from "vitest";
import { parsedTarget } from "./forward";

describe("parsedTarget", () => {
  it.each(["http://127.0.0.1:4100", "http://inference:8080/", "https://tools.internal/base/path?x=1", "http://[::1]:4102"])(
    "gives http-proxy the fields it reads, as url.parse would have: %s",
    (address) => {
      const legacy = parse(address);
      const target = parsedTarget(address);
      for (const field of ["protocol", "host", "hostname", "port", "pathname", "path"] as const) {
        expect([field, target[field] ?? ""]).toEqual([field, legacy[field] ?? ""]);
      }
    },
  );
});
