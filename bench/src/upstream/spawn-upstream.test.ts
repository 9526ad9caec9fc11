import { describe, expect, it } from "vitest";
import { spawnUpstream } from "./spawn-upstream";

describe("spawnUpstream", () => {
  it("runs the fixed upstream in its own process, counts answers, and exits 0 on stop", async () => {
    const upstream = await spawnUpstream({ apiKey: "sk-child" });
    try {
      expect(upstream.pid).not.toBe(process.pid);
      const res = await fetch(`${upstream.url}/chat/completions`, {
        method: "POST",
        headers: { authorization: "Bearer sk-child", "content-type": "application/json" },
        body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
      });
      expect(res.status).toBe(200);
      expect(await upstream.answered()).toBe(1);
    } finally {
      expect(await upstream.stop()).toBe(0);
    }
  });
});
