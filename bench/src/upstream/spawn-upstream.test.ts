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

  it("when no pace is given, then streams carry 20 content chunks, one frame every 5 ms", async () => {
    const upstream = await spawnUpstream({ apiKey: "sk-child" });
    try {
      expect(upstream.stream).toEqual({ pieces: 20, frameIntervalMs: 5 });
      const started = performance.now();
      const res = await fetch(`${upstream.url}/chat/completions`, {
        method: "POST",
        headers: { authorization: "Bearer sk-child", "content-type": "application/json" },
        body: JSON.stringify({ model: "m", messages: [], stream: true, stream_options: { include_usage: true } }),
      });
      const events = (await res.text()).split("\n\n").filter(Boolean);
      expect(events).toHaveLength(24); // role, 20 content, finish, usage, [DONE]
      expect(performance.now() - started).toBeGreaterThanOrEqual(5 * 23 - 5);
    } finally {
      expect(await upstream.stop()).toBe(0);
    }
  });
});
