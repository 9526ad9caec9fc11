import type { Response } from "express";
import { createInProcessBus } from "@gw/bus";
import { GatewayConfig } from "@gw/config";
import type { BroadcastMessage, Budget } from "@gw/contracts";
import type { GatewayError } from "@gw/errors";
import { createLogger } from "@gw/logger";
import { createPricer } from "@gw/pricing";
import { createMetrics } from "@gw/service-kit";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { KeyPrincipal } from "../store/identity-store";
import { testPrincipal } from "../testing/principal";
import { BudgetGate, type BudgetAsk, JOB_HOLD_MS, jobHold, LIVE_HOLD_MS } from "./budget-gate";
import { MemoryBudgetStore } from "./memory-budget-store";
import type { MonthToDate } from "./month-to-date";
import type { BudgetStore } from "./types";

const logger = createLogger({ service: "budget-gate-test", level: "silent" });
const limits = { requests_per_minute: 1, tokens_per_minute: 1 };
// $1 a thousand tokens, in and out: a request of 6 estimated input tokens and max_tokens 4 holds $0.01.
const gateway = GatewayConfig.parse({
  providers: { openai: { kind: "openai", base_url: "https://api.openai.com/v1" } },
  models: { chat: { type: "chat", routes: [{ provider: "openai", model: "gpt-4o" }], price: { input_per_mtok: 1000, output_per_mtok: 1000 } } },
  plans: { plus: limits, pro: limits, enterprise: limits },
});
const ask: BudgetAsk = {
  route: "/v1/chat/completions",
  model: "chat",
  tool: undefined,
  body: { model: "chat", max_tokens: 4, messages: [{ role: "user", content: "hello there friend" }] },
  uploadBytes: 0,
};
const used = (input: number, output: number) => ({
  kind: "answered" as const,
  outcome: { provider: "openai", usage: { input_tokens: input, output_tokens: output } },
});

function principal(budget: Budget | null, keyBudget: Budget | null, timezone = "UTC"): KeyPrincipal {
  return testPrincipal({ keyId: "key_budget", keyBudget }, { id: "ws_budget", timezone, budget });
}

function fakeResponse(): Response & { headers: Record<string, string> } {
  const headers: Record<string, string> = {};
  const setHeader = (name: string, value: string) => {
    headers[name] = value;
  };
  return { headers, setHeader } as unknown as Response & { headers: Record<string, string> };
}

function gate(options: { now: () => number; store?: BudgetStore; monthToDate?: MonthToDate; failureMode?: "open" | "closed" }) {
  const bus = createInProcessBus({ logger });
  const alerts: BroadcastMessage<"budget.alert">[] = [];
  bus.subscribe("budget.alert", (a) => void alerts.push(a));
  const store = options.store ?? new MemoryBudgetStore(options.now);
  const g = new BudgetGate({
    store,
    pricer: createPricer(gateway),
    gateway,
    monthToDate: options.monthToDate ?? (async () => ({ workspace: 0, keys: new Map() })),
    failureMode: options.failureMode ?? "open",
    prefix: "t:",
    bus,
    logger,
    metrics: createMetrics("budget-gate-test", { defaults: false }),
    now: options.now,
  });
  return { gate: g, alerts, store };
}

const refusal = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (err: unknown) => err as GatewayError,
  );

afterEach(() => {
  vi.useRealTimers();
});

describe("BudgetGate", () => {
  it("when a month ends in the workspace's zone but not yet in UTC, then the new month starts from zero there", async () => {
    // 23:30 UTC on 30 November is 00:30 on 1 December in Berlin.
    let now = Date.UTC(2026, 10, 30, 22, 30);
    const { gate: g } = gate({ now: () => now });
    const p = principal({ monthly_usd: 0.01, mode: "hard" }, null, "Europe/Berlin");
    const hold = await g.admit(p, ask, fakeResponse());
    expect(hold).toMatchObject({ period: "2026-11", reserved_nano: 10_000_000 });
    g.settle(hold!, "ws_budget", "key_budget", used(3, 4));
    await g.flush();
    expect((await refusal(g.admit(p, ask, fakeResponse())))?.code).toBe("insufficient_quota");
    now = Date.UTC(2026, 10, 30, 22, 59, 59);
    const still = await refusal(g.admit(p, ask, fakeResponse()));
    expect(still?.message).toBe("Monthly budget of $0.01 reached for this workspace; it resets on 2026-12-01 00:00 Europe/Berlin");
    expect(still?.headers).toMatchObject({ "x-budget-reset": "2026-12-01T00:00:00+01:00", "x-budget-remaining-usd": "0.003000", "x-should-retry": "false" });
    now = Date.UTC(2026, 10, 30, 23, 0);
    const res = fakeResponse();
    expect(await g.admit(p, ask, res)).toMatchObject({ period: "2026-12" });
    expect(res.headers).toMatchObject({ "x-budget-limit-usd": "0.01", "x-budget-remaining-usd": "0.000000", "x-budget-reset": "2027-01-01T00:00:00+01:00" });
  });

  it("when a month has no counter, then the workspace and the key start from their own month-to-date spend in the ledger", async () => {
    const now = Date.UTC(2026, 10, 15);
    const asked: [string, number][] = [];
    const { gate: g } = gate({
      now: () => now,
      monthToDate: async (ws, from) => {
        asked.push([ws, from]);
        return {
          workspace: 4_990_000_000,
          keys: new Map([
            ["key_budget", 995_000_000],
            ["key_other", 3_995_000_000],
          ]),
        };
      },
    });
    const p = principal({ monthly_usd: 5, mode: "hard" }, { monthly_usd: 1, mode: "soft" }, "Asia/Tokyo");
    const res = fakeResponse();
    expect(await g.admit(p, ask, res)).toMatchObject({ reserved_nano: 10_000_000 });
    // Tokyo's November began at 15:00 UTC on 31 October.
    expect(asked).toEqual([["ws_budget", Date.UTC(2026, 9, 31, 15)]]);
    expect(res.headers["x-budget-remaining-usd"]).toBe("0.000000");
    const err = await refusal(g.admit(p, ask, fakeResponse()));
    expect(err?.message).toContain("Monthly budget of $5.00 reached for this workspace");
    expect(asked).toHaveLength(1);
  });

  it("when spend crosses the alert level and then the budget, then each is announced once on the bus", async () => {
    const now = Date.UTC(2026, 10, 15);
    const { gate: g, alerts } = gate({ now: () => now });
    const p = principal(null, { monthly_usd: 0.02, mode: "soft", alert_at_percent: 50 });
    for (let i = 0; i < 5; i++) {
      const hold = await g.admit(p, ask, fakeResponse());
      g.settle(hold!, "ws_budget", "key_budget", used(3, 4));
      await g.flush();
    }
    await vi.waitFor(() => expect(alerts).toHaveLength(2));
    expect(alerts).toEqual([
      expect.objectContaining({ workspace_id: "ws_budget", key_id: "key_budget", scope: "key", threshold: "alert", period: "2026-11", alert_at_percent: 50 }),
      expect.objectContaining({ scope: "key", threshold: "budget", mode: "soft", budget_usd: 0.02 }),
    ]);
  });

  it("when the counters cannot be reached, then requests go on without a hold failing open, and get a 503 failing closed", async () => {
    const broken: BudgetStore = {
      kind: "redis",
      admit: async () => {
        throw new Error("connection refused");
      },
      settle: async () => [],
      peek: async () => [],
      close: async () => {},
    };
    const p = principal({ monthly_usd: 1, mode: "hard" }, null);
    const open = gate({ now: Date.now, store: broken, failureMode: "open" }).gate;
    expect(await open.admit(p, ask, fakeResponse())).toBeUndefined();
    const closed = gate({ now: Date.now, store: broken, failureMode: "closed" }).gate;
    expect(await refusal(closed.admit(p, ask, fakeResponse()))).toMatchObject({ code: "upstream_unavailable", status: 503 });
    const ledgerDown = gate({
      now: Date.now,
      failureMode: "closed",
      monthToDate: async () => {
        throw new Error("usage service down");
      },
    }).gate;
    expect(await refusal(ledgerDown.admit(p, ask, fakeResponse()))).toMatchObject({ status: 503 });
  });

  it("when answers end close together, then their settlements reach the store in one call per workspace", async () => {
    const now = Date.UTC(2026, 10, 15);
    const memory = new MemoryBudgetStore(() => now);
    const calls: number[] = [];
    const counting: BudgetStore = {
      ...memory,
      kind: "memory",
      admit: memory.admit.bind(memory),
      peek: memory.peek.bind(memory),
      close: memory.close.bind(memory),
      settle: (items) => {
        calls.push(items.length);
        return memory.settle(items, now);
      },
    };
    const { gate: g } = gate({ now: () => now, store: counting });
    const p = principal({ monthly_usd: 1, mode: "hard" }, { monthly_usd: 1, mode: "hard" });
    const holds = await Promise.all(Array.from({ length: 5 }, () => g.admit(p, ask, fakeResponse())));
    for (const hold of holds) g.settle(hold!, "ws_budget", "key_budget", used(3, 4));
    expect(calls).toEqual([]);
    await vi.waitFor(() => expect(calls).toEqual([5]));
    expect(
      await memory.peek(
        holds[0]!.scopes.map((s) => s.key),
        now,
      ),
    ).toEqual([
      { spent: 35_000_000, held: 0 },
      { spent: 35_000_000, held: 0 },
    ]);
  });

  it("when a process dies before it settles, then a live call's hold stops counting after two hours and a job's after a day", async () => {
    let now = Date.UTC(2026, 10, 15);
    const { gate: g } = gate({ now: () => now });
    // Room for one hold of $0.01 at a time.
    const p = principal({ monthly_usd: 0.015, mode: "hard" }, null);
    const live = await g.admit(p, ask, fakeResponse());
    expect(live).toMatchObject({ at: now, until: now + LIVE_HOLD_MS });
    expect((await refusal(g.admit(p, ask, fakeResponse())))?.code).toBe("insufficient_quota");
    now += LIVE_HOLD_MS - 60_000;
    expect((await refusal(g.admit(p, ask, fakeResponse())))?.code).toBe("insufficient_quota");
    now += 5 * 60_000;
    const job = await g.admit(p, { ...ask, job: true }, fakeResponse());
    expect(job).toMatchObject({ at: now, until: now + JOB_HOLD_MS });
    now += JOB_HOLD_MS - 60_000;
    expect((await refusal(g.admit(p, ask, fakeResponse())))?.code).toBe("insufficient_quota");
    now += 5 * 60_000;
    expect(await g.admit(p, ask, fakeResponse())).toMatchObject({ reserved_nano: 10_000_000 });
    // The job's settlement arrives after all: its cost is spent, the live hold made since stays held.
    g.settle(job!, "ws_budget", "key_budget", used(3, 4));
    await g.flush();
    expect((await g.status(p.workspace, [])).workspace).toMatchObject({ spent_usd: "0.007000000", held_usd: "0.010000000" });
  });

  it("when a job's hold comes back without its until (through a service from before holds had one), then it settles under the step it was filed under", async () => {
    const start = Date.UTC(2026, 10, 15);
    let now = start;
    const { gate: g } = gate({ now: () => now });
    const p = principal({ monthly_usd: 1, mode: "hard" }, null);
    const first = await g.admit(p, { ...ask, job: true }, fakeResponse());
    await g.admit(p, { ...ask, job: true }, fakeResponse());
    const { until: _dropped, ...stripped } = first!;
    expect(jobHold(stripped)).toEqual(first);
    g.settle(jobHold(stripped), "ws_budget", "key_budget", used(3, 4));
    await g.flush();
    // A live call near the end of the jobs' step: once the step passes, only the other job's hold goes.
    now = start + JOB_HOLD_MS - 60 * 60_000;
    await g.admit(p, ask, fakeResponse());
    now = start + JOB_HOLD_MS + 5 * 60_000;
    expect((await g.status(p.workspace, [])).workspace).toMatchObject({ spent_usd: "0.007000000", held_usd: "0.010000000" });
  });

  it("when a model has no known price, then it holds nothing and a spent budget still refuses it", async () => {
    const now = Date.UTC(2026, 10, 15);
    const { gate: g } = gate({ now: () => now, monthToDate: async () => ({ workspace: 1_000_000_000, keys: new Map() }) });
    const p = principal({ monthly_usd: 1, mode: "hard" }, null);
    const unknown = { ...ask, model: "not-configured" };
    expect((await refusal(g.admit(p, unknown, fakeResponse())))?.code).toBe("insufficient_quota");
    const fresh = gate({ now: () => now }).gate;
    expect(await fresh.admit(p, unknown, fakeResponse())).toMatchObject({ reserved_nano: 0 });
  });
});
