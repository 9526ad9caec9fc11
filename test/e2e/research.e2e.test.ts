import { tavily } from "@tavily/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSpecValidator, startTavilyUpstream, type TavilyUpstream } from "@gw/testkit";
import { adminClient } from "./harness";
import { newWorkspaceKey, startGatewayTarget, targetNames, testPlans, type GatewayTarget } from "./targets";

/**
 * Research jobs through ingress, in the mesh and the embedded default: `@tavily/core`'s `research()`
 * and `getResearch()` against `<gateway>/v1/tools/webtool` unchanged, the job bound to its key and
 * workspace, the tools service polling the Tavily emulator until the task finishes.
 */
const TAVILY_KEY = "tvly-research-platform";
const tavilySpec = createSpecValidator("tavily-openapi.json", "Tavily");
const config = (url: string) => `
providers:
  webtool: { kind: tavily, base_url: "${url}", api_key_env: RESEARCH_TAVILY_KEY }
${testPlans}`;

for (const name of targetNames) {
  describe(`when research runs through ${name}`, () => {
    let tav: TavilyUpstream;
    let gw: GatewayTarget;
    let key: string;
    let sameWorkspaceKey: string;
    let otherWorkspaceKey: string;
    let noToolKey: string;

    beforeAll(async () => {
      tav = await startTavilyUpstream({ apiKey: TAVILY_KEY, research: { pendingPolls: 1, inProgressPolls: 2 } });
      gw = await startGatewayTarget(name, config(tav.url), { RESEARCH_TAVILY_KEY: TAVILY_KEY, GATEWAY_RESEARCH_POLL_MS: "100" });
      const mine = await newWorkspaceKey(gw, { name: "research" });
      key = mine.key;
      sameWorkspaceKey = (await adminClient(gw.adminURL, gw.adminToken)<{ key: string }>("POST", `/admin/workspaces/${mine.workspaceId}/keys`, {})).key;
      otherWorkspaceKey = (await newWorkspaceKey(gw, { name: "research-other" })).key;
      noToolKey = (await newWorkspaceKey(gw, { name: "research-serp-only", tools: ["serptool"] })).key;
    }, 180_000);
    afterAll(async () => {
      await gw?.stop();
      await tav?.close();
    });

    const client = (as = key) => tavily({ apiKey: as, apiBaseURL: `${gw.baseURL}/tools/webtool` });
    /** `research()` returns a stream only when asked for one; this narrows its answer for the compiler. */
    const research = async (input: string, options: { model?: "mini" | "pro" | "auto" } = {}, as = key) => {
      const started = await client(as).research(input, options);
      if (!("requestId" in started)) throw new Error("research() answered a stream");
      return started;
    };
    const get = async (id: string, as = key) => {
      const res = await fetch(`${gw.baseURL}/tools/webtool/research/${id}`, { headers: { authorization: `Bearer ${as}` } });
      return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
    };
    const finished = async (id: string, as = key) => {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const answer = (await client(as).getResearch(id)) as Record<string, unknown>;
        if (answer.status === "completed" || answer.status === "failed") return answer;
        expect(["pending", "in_progress"]).toContain(answer.status);
        if (Date.now() > deadline) throw new Error(`research ${id} still ${String(answer.status)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };

    it("then @tavily/core starts research and reads the report, with our job id as its request id", async () => {
      const started = await research("How do gateways batch requests?", { model: "mini" });
      expect(started).toMatchObject({ requestId: expect.stringMatching(/^job_/), status: "pending", input: "How do gateways batch requests?", model: "mini" });
      const running = await get(started.requestId);
      expect(running.status).toBe(202);
      expect(running.body).toMatchObject({ id: started.requestId, request_id: started.requestId });
      expect(Number(running.headers.get("retry-after"))).toBeGreaterThanOrEqual(2);

      const report = await finished(started.requestId);
      expect(report).toMatchObject({
        id: started.requestId,
        request_id: started.requestId,
        status: "completed",
        content: expect.stringContaining("batch requests"),
      });
      expect((report.sources as unknown[]).length).toBeGreaterThan(0);
      tavilySpec.assert("ResearchTaskCompleted", report);
      // The provider saw one task, started with the gateway's credential, and our id never.
      expect([...tav.researchTasks.values()].filter((t) => t.input === "How do gateways batch requests?")).toHaveLength(1);
      for (const seen of tav.requests) {
        expect(seen.headers.authorization).toBe(`Bearer ${TAVILY_KEY}`);
        expect(seen.path).not.toContain(started.requestId);
      }
    });

    it("then another key of the workspace, and any key of another workspace, get 404 as for no job at all", async () => {
      const { requestId } = await research("private question");
      for (const other of [sameWorkspaceKey, otherWorkspaceKey]) {
        const seen = await get(requestId, other);
        expect(seen.status).toBe(404);
        expect(seen.body).toMatchObject({ error: { code: "not_found" } });
      }
      expect((await get(`job_${"f".repeat(32)}`)).status).toBe(404);
      expect((await finished(requestId)).status).toBe("completed");
    });

    it("then a task that fails at the provider ends failed, with an error", async () => {
      tav.failNextResearch();
      const { requestId } = await research("this one fails");
      const answer = await finished(requestId);
      expect(answer).toMatchObject({ status: "failed", request_id: requestId, error: { error: { type: "server_error" } } });
    });

    it("then bad input is a 400 before any job exists, and a workspace without webtool gets 403", async () => {
      const bad = await fetch(`${gw.baseURL}/tools/webtool/research`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ input: "", model: "mini" }),
      });
      expect(bad.status).toBe(400);
      expect(await bad.json()).toMatchObject({ error: { param: "input" } });
      // A caller's own provider key is refused, as on every tool route, and no task starts.
      const tasksBefore = tav.researchTasks.size;
      await expect(research("with my key", { api_key: "tvly-mine" } as never)).rejects.toThrow(/api_key/);
      const keyed = await fetch(`${gw.baseURL}/tools/webtool/research?apiKey=tvly-mine`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ input: "with my key" }),
      });
      expect(keyed.status).toBe(400);
      expect(await keyed.json()).toMatchObject({ error: { param: "apiKey", message: expect.stringContaining("Do not send") } });
      expect(tav.researchTasks.size).toBe(tasksBefore);
      await expect(research("no permission", {}, noToolKey)).rejects.toThrow();
      const denied = await fetch(`${gw.baseURL}/tools/webtool/research`, {
        method: "POST",
        headers: { authorization: `Bearer ${noToolKey}`, "content-type": "application/json" },
        body: JSON.stringify({ input: "no permission" }),
      });
      expect(denied.status).toBe(403);
    });
  });
}
