import { afterEach, describe, expect, it } from "vitest";
import { ALERT_CROSSED, BUDGET_REACHED, type BudgetScope, type BudgetStore } from "./types";

let seq = 0;
const DAY = 86_400_000;
const HOUR = 3_600_000;
/** Admissions made now, each hold living an hour. */
const NOW = Date.now();
const T = { at: NOW, ttlMs: DAY, holdUntil: NOW + HOUR };

/** A workspace scope and a key scope of a fresh workspace: budgets in nano-dollars. */
function scopes(ws: Partial<BudgetScope>, key?: Partial<BudgetScope>): BudgetScope[] {
  seq += 1;
  const base = `bg-test:${process.pid}:${Date.now()}:${seq}`;
  const out: BudgetScope[] = [{ key: `${base}:ws`, limitNano: 1_000, hard: true, alertNano: undefined, ...ws }];
  if (key) out.push({ key: `${base}:key`, limitNano: 1_000, hard: true, alertNano: undefined, ...key });
  return out;
}

/**
 * The budget store's semantics, run against every implementation (Redis and in-memory) so the mesh
 * and the embedded default behave the same. `make` opens a store; `second` (when given) opens another
 * on the same backing state, as a second ingress replica would.
 */
export function budgetStoreContract(name: string, make: () => Promise<BudgetStore>, second?: () => Promise<BudgetStore>): void {
  describe(`${name} budget store`, () => {
    const opened: BudgetStore[] = [];
    const open = async (factory = make) => {
      const store = await factory();
      opened.push(store);
      return store;
    };
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((s) => s.close()));
    });

    it("when a month has no counter, then it asks for seeds, reserves nothing, and a seed starts it once", async () => {
      const store = await open();
      const s = scopes({}, {});
      expect(await store.admit(s, 10, undefined, T)).toEqual({ kind: "unseeded", indexes: [0, 1] });
      expect(await store.admit(s, 10, [100, 40], T)).toEqual({ kind: "admitted", used: [100, 40] });
      // A later seed does not overwrite a counter that exists.
      expect(await store.admit(s, 10, [999, 999], T)).toEqual({ kind: "admitted", used: [110, 50] });
      expect(await store.admit(s, 10, undefined, T)).toEqual({ kind: "admitted", used: [120, 60] });
      expect(
        await store.peek(
          s.map((x) => x.key),
          NOW,
        ),
      ).toEqual([
        { spent: 100, held: 30 },
        { spent: 40, held: 30 },
      ]);
      expect(await store.peek(["bg-test:never-made"], NOW)).toEqual([undefined]);
    });

    it("when holds fill a hard budget, then the request that does not fit is denied and nothing is held for it", async () => {
      const store = await open();
      const s = scopes({ limitNano: 1_000 }, { limitNano: 250 });
      await store.admit(s, 0, [0, 0], T);
      expect(await store.admit(s, 100, undefined, T)).toMatchObject({ kind: "admitted" });
      expect(await store.admit(s, 100, undefined, T)).toMatchObject({ kind: "admitted" });
      // The key has 50 left: 100 does not fit; the workspace's 800 would.
      expect(await store.admit(s, 100, undefined, T)).toEqual({ kind: "denied", index: 1, used: 200 });
      expect(await store.admit(s, 50, undefined, T)).toEqual({ kind: "admitted", used: [200, 200] });
      // Exactly at the budget: spent, so even a request that costs nothing is refused.
      expect(await store.admit(s, 0, undefined, T)).toEqual({ kind: "denied", index: 1, used: 250 });
    });

    it("when settled, then the hold is released and the real cost spent, so a cheaper call makes room", async () => {
      const store = await open();
      const s = scopes({ limitNano: 300 });
      await store.admit(s, 0, [0], T);
      await store.admit(s, 100, undefined, T);
      await store.admit(s, 100, undefined, T);
      await store.admit(s, 100, undefined, T);
      expect(await store.admit(s, 100, undefined, T)).toMatchObject({ kind: "denied" });
      await store.settle([{ scopes: s, reservedNano: 100, actualNano: 20, holdUntil: T.holdUntil }], NOW);
      await store.settle([{ scopes: s, reservedNano: 100, actualNano: 0, holdUntil: T.holdUntil }], NOW); // a failed call gives its reservation back
      expect(await store.admit(s, 100, undefined, T)).toEqual({ kind: "admitted", used: [120] });
      expect(await store.admit(s, 80, undefined, T)).toEqual({ kind: "admitted", used: [220] });
      expect(await store.admit(s, 1, undefined, T)).toMatchObject({ kind: "denied", used: 300 });
    });

    it("when a soft budget is passed, then requests go on and each threshold is reported once", async () => {
      const store = await open();
      const s = scopes({ limitNano: 100, hard: false, alertNano: 80 });
      await store.admit(s, 0, [0], T);
      expect((await store.settle([{ scopes: s, reservedNano: 0, actualNano: 50, holdUntil: T.holdUntil }], NOW))[0]).toEqual([0]);
      expect((await store.settle([{ scopes: s, reservedNano: 0, actualNano: 40, holdUntil: T.holdUntil }], NOW))[0]).toEqual([ALERT_CROSSED]);
      expect((await store.settle([{ scopes: s, reservedNano: 0, actualNano: 5, holdUntil: T.holdUntil }], NOW))[0]).toEqual([0]);
      expect((await store.settle([{ scopes: s, reservedNano: 0, actualNano: 10, holdUntil: T.holdUntil }], NOW))[0]).toEqual([BUDGET_REACHED]);
      expect(await store.admit(s, 500, undefined, T)).toEqual({ kind: "admitted", used: [105] });
      expect((await store.settle([{ scopes: s, reservedNano: 500, actualNano: 500, holdUntil: T.holdUntil }], NOW))[0]).toEqual([0]);
      // Several settlements in one call apply in order, each reporting its own crossings.
      const many = scopes({ limitNano: 100, hard: false, alertNano: 50 }, { limitNano: 60, hard: false, alertNano: undefined });
      await store.admit(many, 0, [0, 0], T);
      expect(
        await store.settle(
          [
            { scopes: many, reservedNano: 0, actualNano: 40, holdUntil: T.holdUntil },
            { scopes: many, reservedNano: 0, actualNano: 30, holdUntil: T.holdUntil },
            { scopes: [many[0]!], reservedNano: 0, actualNano: 30, holdUntil: T.holdUntil },
          ],
          NOW,
        ),
      ).toEqual([[0, 0], [ALERT_CROSSED, BUDGET_REACHED], [BUDGET_REACHED]]);
      const jump = scopes({ limitNano: 100, hard: false, alertNano: 50 });
      await store.admit(jump, 0, [0], T);
      expect((await store.settle([{ scopes: jump, reservedNano: 0, actualNano: 150, holdUntil: T.holdUntil }], NOW))[0]).toEqual([
        ALERT_CROSSED | BUDGET_REACHED,
      ]);
    });

    it("when a hold is never settled, then it stops counting once its life has ended, and settling it late changes only the spend", async () => {
      const store = await open();
      const s = scopes({ limitNano: 300 });
      await store.admit(s, 0, [0], T);
      const long = { ...T, holdUntil: NOW + 3 * HOUR };
      expect(await store.admit(s, 100, undefined, T)).toEqual({ kind: "admitted", used: [0] });
      expect(await store.admit(s, 100, undefined, long)).toEqual({ kind: "admitted", used: [100] });
      expect(await store.admit(s, 200, undefined, T)).toEqual({ kind: "denied", index: 0, used: 200 });
      // Past the first hold's life (a process died with its settlement): it no longer counts, the other does.
      const later = { ...T, at: NOW + HOUR + 5 * 60_000, holdUntil: NOW + 2 * HOUR };
      expect(await store.admit(s, 150, undefined, later)).toEqual({ kind: "admitted", used: [100] });
      expect(await store.peek([s[0]!.key], later.at)).toEqual([{ spent: 0, held: 250 }]);
      // The lost settlement arrives after all: its cost is spent, and no other hold is released for it.
      await store.settle([{ scopes: s, reservedNano: 100, actualNano: 40, holdUntil: T.holdUntil }], later.at);
      expect(await store.peek([s[0]!.key], later.at)).toEqual([{ spent: 40, held: 250 }]);
      await store.settle([{ scopes: s, reservedNano: 100, actualNano: 30, holdUntil: long.holdUntil }], later.at);
      expect(await store.peek([s[0]!.key], later.at)).toEqual([{ spent: 70, held: 150 }]);
      // Once every life has ended nothing is held, as read even before an admission drops them.
      const end = NOW + 4 * HOUR;
      expect(await store.peek([s[0]!.key], end)).toEqual([{ spent: 70, held: 0 }]);
      expect(await store.admit(s, 0, undefined, { ...T, at: end })).toEqual({ kind: "admitted", used: [70] });
      expect(await store.peek([s[0]!.key], end)).toEqual([{ spent: 70, held: 0 }]);
    });

    it("when holds share the step their life ends in, then each settles its own part and the rest still ends with the step", async () => {
      const store = await open();
      const s = scopes({ limitNano: 1_000 }, { limitNano: 1_000 });
      await store.admit(s, 0, [0, 0], T);
      for (const worst of [100, 200, 300]) await store.admit(s, worst, undefined, T);
      await store.settle([{ scopes: s, reservedNano: 200, actualNano: 150, holdUntil: T.holdUntil }], NOW);
      expect(
        await store.peek(
          s.map((x) => x.key),
          NOW,
        ),
      ).toEqual([
        { spent: 150, held: 400 },
        { spent: 150, held: 400 },
      ]);
      const past = T.holdUntil + 5 * 60_000;
      expect(await store.admit(s, 0, undefined, { ...T, at: past })).toEqual({ kind: "admitted", used: [150, 150] });
      // The step's remaining holds ended together; a settlement of one of them now releases nothing.
      await store.settle([{ scopes: s, reservedNano: 300, actualNano: 20, holdUntil: T.holdUntil }], past);
      expect(
        await store.peek(
          s.map((x) => x.key),
          past,
        ),
      ).toEqual([
        { spent: 170, held: 0 },
        { spent: 170, held: 0 },
      ]);
    });

    it("when a call that held nothing settles beside holds of the same step, then each settles and the others keep their share", async () => {
      const store = await open();
      const s = scopes({ limitNano: 1_000, hard: false, alertNano: 50 });
      await store.admit(s, 0, [0], T);
      await store.admit(s, 100, undefined, T);
      await store.admit(s, 0, undefined, T); // an unpriced model holds nothing
      await store.admit(s, 200, undefined, T);
      // The one that held nothing first, in one call with one that held 100 and crosses the alert level.
      expect(
        await store.settle(
          [
            { scopes: s, reservedNano: 0, actualNano: 0, holdUntil: T.holdUntil },
            { scopes: s, reservedNano: 100, actualNano: 60, holdUntil: T.holdUntil },
          ],
          NOW,
        ),
      ).toEqual([[0], [ALERT_CROSSED]]);
      expect(await store.peek([s[0]!.key], NOW)).toEqual([{ spent: 60, held: 200 }]);
      expect(await store.peek([s[0]!.key], T.holdUntil + 5 * 60_000)).toEqual([{ spent: 60, held: 0 }]);
    });

    it("when a counter is gone (a flush), then settling it changes nothing and does not recreate it", async () => {
      const store = await open();
      const s = scopes({});
      expect((await store.settle([{ scopes: s, reservedNano: 10, actualNano: 10, holdUntil: T.holdUntil }], NOW))[0]).toEqual([0]);
      expect(await store.admit(s, 10, undefined, T)).toEqual({ kind: "unseeded", indexes: [0] });
    });

    it("when 500 requests race against a budget for 50 worst cases, from two replicas, then exactly 50 are held", async () => {
      const first = await open();
      const other = second ? await open(second) : first;
      const s = scopes({ limitNano: 50 * 1_000_003 }, { limitNano: 80 * 1_000_003 });
      await first.admit(s, 0, [0, 0], T);
      const results = await Promise.all(Array.from({ length: 500 }, (_, i) => (i % 2 === 0 ? first : other).admit(s, 1_000_003, undefined, T)));
      const admitted = results.filter((r) => r.kind === "admitted");
      expect(admitted).toHaveLength(50);
      // Every refusal names the workspace, the scope with the least room, and saw it full.
      const denied = results.filter((r) => r.kind === "denied");
      expect(denied.every((r) => r.kind === "denied" && r.index === 0 && r.used === 50 * 1_000_003)).toBe(true);
    });
  });
}
