import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTimedClient } from "../http-client";
import { spawnListening } from "../listening-child";
import { chatRequestBody } from "../targets";
import { startFixedUpstream, type FixedUpstream } from "../upstream/fixed-upstream";

const entry = fileURLToPath(new URL("./floor-proxy-main.ts", import.meta.url));

describe("the floor proxies", () => {
  let upstream: FixedUpstream;
  beforeAll(async () => {
    upstream = await startFixedUpstream({ apiKey: "sk-floor" });
  });
  afterAll(() => upstream.close());

  const chat = (origin: string) => ({
    origin,
    path: "/v1/chat/completions",
    headers: { authorization: "Bearer sk-floor", "content-type": "application/json" },
    body: chatRequestBody,
  });

  it.each(["tcp", "node", "stack", "stack-default"])(
    "FLOOR_KIND=%s forwards the request and relays the upstream's answer unchanged, twice in a row",
    async (kind) => {
      const origin = new URL(upstream.url).origin;
      const direct = createTimedClient(chat(origin));
      const proxy = await spawnListening(entry, { FLOOR_KIND: kind, FLOOR_TARGET: origin });
      const through = createTimedClient(chat(proxy.url));
      try {
        const expected = await direct.once();
        const before = upstream.answered;
        for (const _ of [1, 2]) {
          const answer = await through.once();
          expect(answer.status).toBe(200);
          expect(answer.headers["content-type"]).toBe("application/json");
          expect(answer.text).toBe(expected.text);
        }
        expect(upstream.answered - before).toBe(2);
      } finally {
        await Promise.all([direct.close(), through.close()]);
        expect(await proxy.stop()).toBe(0);
      }
    },
  );

  it("refuses a kind it does not know", async () => {
    await expect(spawnListening(entry, { FLOOR_KIND: "nginx", FLOOR_TARGET: "http://127.0.0.1:1" })).rejects.toThrow(/exited before listening/);
  });
});
