import { afterEach, describe, expect, it } from "vitest";
import type { AdmitRequest, Limiter, WindowOptions } from "./types";

/** A clock the test moves by hand; starts at a whole minute so bucket edges are easy to reason about. */
export class FakeClock {
  t = 1_800_000_000_000;
  readonly now = () => this.t;
  advance(ms: number): void {
    this.t += ms;
  }
}

let seq = 0;
function request(overrides: Partial<AdmitRequest> = {}): AdmitRequest {
  return {
    workspaceId: `ws_${process.pid}_${seq}`,
    keyId: `key_${process.pid}_${seq}`,
    workspace: { requests: 1000, tokens: 1_000_000 },
    key: { requests: 1000, tokens: 1_000_000 },
    tokens: 0,
    ...overrides,
  };
}

/**
 * The limiter's semantics, run against every implementation (Redis and in-memory) so the mesh and
 * the embedded default behave the same. The window is 60 s in 60 buckets of 1 s.
 */
export function limiterContract(name: string, make: (options: WindowOptions) => Promise<Limiter>): void {
  describe(`${name} limiter`, () => {
    let limiter: Limiter | undefined;
    let clock: FakeClock;
    const open = async () => {
      seq += 1;
      clock = new FakeClock();
      limiter = await make({ windowMs: 60_000, buckets: 60, now: clock.now });
      return limiter;
    };
    afterEach(async () => {
      await limiter?.close();
      limiter = undefined;
    });

    it("when a key sends its limit of requests, then the next one is denied until the first leaves the window", async () => {
      const l = await open();
      const req = request({ key: { requests: 3, tokens: 1_000_000 } });
      const first = await l.admit(req);
      expect(first).toMatchObject({ allowed: true, status: { requests: { limit: 3, remaining: 2, resetMs: 60_000 } } });
      clock.advance(10_500);
      await l.admit(req);
      await l.admit(req);
      const denied = await l.admit(req);
      expect(denied.allowed).toBe(false);
      if (denied.allowed) return;
      expect(denied.denial).toEqual({ scope: "key", dimension: "requests", limit: 3, used: 3, requested: 1, retryAfterMs: 49_500 });
      expect(denied.status.requests.remaining).toBe(0);
      clock.advance(49_499);
      expect((await l.admit(req)).allowed).toBe(false);
      clock.advance(1);
      expect(await l.admit(req)).toMatchObject({ allowed: true, status: { requests: { remaining: 0 } } });
    });

    it("when a burst fills the end of one window, then the start of the next window admits nothing more", async () => {
      const l = await open();
      const req = request({ workspace: { requests: 5, tokens: 1_000_000 } });
      clock.advance(59_900); // the last 100 ms of a fixed minute
      for (let i = 0; i < 5; i++) expect((await l.admit(req)).allowed).toBe(true);
      clock.advance(200); // a fixed window would reset here and let 5 more through
      let admitted = 0;
      for (let i = 0; i < 5; i++) if ((await l.admit(req)).allowed) admitted++;
      expect(admitted).toBe(0);
      clock.advance(59_800); // now 60 s after the burst's bucket began: it has left the window
      for (let i = 0; i < 5; i++) if ((await l.admit(req)).allowed) admitted++;
      expect(admitted).toBe(5);
    });

    it("when two keys share a workspace, then the workspace limit binds both and the denial names the workspace", async () => {
      const l = await open();
      const a = request({ workspace: { requests: 4, tokens: 1_000_000 }, key: { requests: 3, tokens: 1_000_000 } });
      const b = { ...a, keyId: `${a.keyId}_b` };
      for (let i = 0; i < 3; i++) expect((await l.admit(a)).allowed).toBe(true);
      const keyDenied = await l.admit(a);
      expect(keyDenied.allowed ? undefined : keyDenied.denial.scope).toBe("key");
      const viaB = await l.admit(b);
      // b's own key scope is empty; the workspace now has 4 of 4 and reports the tighter scope.
      expect(viaB).toMatchObject({ allowed: true, status: { requests: { limit: 4, remaining: 0 } } });
      const wsDenied = await l.admit(b);
      expect(wsDenied.allowed ? undefined : wsDenied.denial).toMatchObject({ scope: "workspace", dimension: "requests", limit: 4, used: 4 });
    });

    it("when reservations fill the token limit, then settling a smaller actual usage frees the difference", async () => {
      const l = await open();
      const req = request({ tokens: 400, key: { requests: 100, tokens: 1000 } });
      const first = await l.admit(req);
      const second = await l.admit(req);
      expect(second).toMatchObject({ allowed: true, status: { tokens: { limit: 1000, remaining: 200 } } });
      const third = await l.admit(req);
      expect(third.allowed ? undefined : third.denial).toMatchObject({ scope: "key", dimension: "tokens", used: 800, requested: 400 });
      if (!first.allowed) throw new Error("first was denied");
      await l.settle(first.ticket, 100);
      expect(await l.admit(req)).toMatchObject({ allowed: true, status: { tokens: { remaining: 100 } } });
    });

    it("when the real usage exceeds the reservation, then the extra tokens are charged", async () => {
      const l = await open();
      const req = request({ tokens: 100, workspace: { requests: 100, tokens: 1000 } });
      const first = await l.admit(req);
      if (!first.allowed) throw new Error("first was denied");
      await l.settle(first.ticket, 700);
      const next = await l.admit({ ...req, tokens: 301 });
      expect(next.allowed ? undefined : next.denial).toMatchObject({ scope: "workspace", dimension: "tokens", used: 700 });
      expect((await l.admit({ ...req, tokens: 300 })).allowed).toBe(true);
    });

    it("when a request settles after its bucket left the window, then a refund is dropped and an excess counts from now", async () => {
      const l = await open();
      const req = request({ tokens: 500, key: { requests: 100, tokens: 1000 } });
      const first = await l.admit(req);
      const second = await l.admit(req);
      if (!first.allowed || !second.allowed) throw new Error("denied");
      clock.advance(61_000);
      await l.settle(first.ticket, 0);
      await l.settle(second.ticket, 900);
      const probe = await l.admit({ ...req, tokens: 601 });
      expect(probe.allowed ? undefined : probe.denial).toMatchObject({ dimension: "tokens", used: 400 });
    });

    it("when a request alone needs more tokens than the limit, then it is denied with no retry time", async () => {
      const l = await open();
      const denied = await l.admit(request({ tokens: 5000, key: { requests: 10, tokens: 4000 } }));
      expect(denied.allowed ? undefined : denied.denial).toEqual({
        scope: "key",
        dimension: "tokens",
        limit: 4000,
        used: 0,
        requested: 5000,
        retryAfterMs: undefined,
      });
    });

    it("when both requests and tokens are exhausted, then the denial names the one that clears last", async () => {
      const l = await open();
      const req = request({ tokens: 600, key: { requests: 2, tokens: 1000 } });
      expect((await l.admit({ ...req, tokens: 100 })).allowed).toBe(true);
      clock.advance(20_000);
      expect((await l.admit(req)).allowed).toBe(true); // requests 2/2, tokens 700/1000
      const denied = await l.admit(req);
      // Requests clear when the first bucket leaves (40 s); the 600 tokens only when the second does (60 s).
      expect(denied.allowed ? undefined : denied.denial).toMatchObject({ dimension: "tokens", retryAfterMs: 60_000 });
    });

    it("when a denied request is refused, then nothing is charged for it", async () => {
      const l = await open();
      const req = request({ tokens: 10, key: { requests: 1, tokens: 1000 } });
      expect((await l.admit(req)).allowed).toBe(true);
      for (let i = 0; i < 5; i++) expect((await l.admit(req)).allowed).toBe(false);
      const other = await l.admit({ ...req, keyId: `${req.keyId}_other` });
      // The workspace saw one admitted request and 10 tokens, not the denied ones.
      expect(other).toMatchObject({ allowed: true, status: { requests: { limit: 1, remaining: 0 } } });
      clock.advance(60_000);
      const again = await l.admit(req);
      expect(again).toMatchObject({ allowed: true, status: { tokens: { remaining: 990 } } });
    });

    it("when a lease fits, then the whole block is charged at once and lasts until its bucket ends", async () => {
      const l = await open();
      clock.advance(300);
      const req = request({ tokens: 100, key: { requests: 100, tokens: 10_000 } });
      const leased = await l.admit({ ...req, lease: { requests: 10, tokens: 1_000, share: 1 } });
      expect(leased).toMatchObject({
        allowed: true,
        lease: { requests: 10, tokens: 1_000, expiresInMs: 700 },
        status: { requests: { limit: 100, remaining: 90 }, tokens: { remaining: 9_000 } },
        ticket: { tokens: 100 },
      });
      // The workspace was charged the block too.
      const other = await l.admit({
        ...req,
        keyId: `${req.keyId}_other`,
        key: { requests: 1000, tokens: 1_000_000 },
        workspace: { requests: 20, tokens: 1_000_000 },
      });
      expect(other).toMatchObject({ allowed: true, status: { requests: { limit: 20, remaining: 9 } } });
    });

    it("when a lease does not fit, then the request alone is checked and charged, and denied as itself", async () => {
      const l = await open();
      const req = request({ tokens: 100, key: { requests: 3, tokens: 10_000 } });
      const lease = { requests: 5, tokens: 500, share: 1 };
      const alone = await l.admit({ ...req, lease });
      expect(alone.allowed && alone.lease).toBeUndefined();
      expect(alone).toMatchObject({ allowed: true, status: { requests: { remaining: 2 }, tokens: { remaining: 9_900 } } });
      await l.admit({ ...req, lease });
      await l.admit({ ...req, lease });
      const denied = await l.admit({ ...req, lease });
      expect(denied.allowed ? undefined : denied.denial).toMatchObject({ scope: "key", dimension: "requests", used: 3, requested: 1 });
      // Too few tokens for the block is the same: the request alone.
      const fresh = request({ workspaceId: `${req.workspaceId}_t`, keyId: `${req.keyId}_t`, tokens: 100, key: { requests: 100, tokens: 400 } });
      const tokensShort = await l.admit({ ...fresh, lease: { requests: 5, tokens: 500, share: 1 } });
      expect(tokensShort).toMatchObject({ allowed: true, status: { requests: { remaining: 99 }, tokens: { remaining: 300 } } });
      expect(tokensShort.allowed && tokensShort.lease).toBeUndefined();
    });

    it("when a block fits but is more than its share of the room left, then the request alone is charged", async () => {
      const l = await open();
      const req = request({ key: { requests: 100, tokens: 1_000_000 } });
      const lease = { requests: 5, tokens: 0, share: 20 };
      expect(await l.admit({ ...req, lease })).toMatchObject({ allowed: true, lease: { requests: 5 }, status: { requests: { remaining: 95 } } });
      const alone = await l.admit({ ...req, lease }); // 5 × 20 > the 95 left
      expect(alone).toMatchObject({ allowed: true, status: { requests: { remaining: 94 } } });
      expect(alone.allowed && alone.lease).toBeUndefined();
      // Tokens too, and the workspace's room as well as the key's.
      const t = request({ workspaceId: `${req.workspaceId}_t`, keyId: `${req.keyId}_t`, tokens: 10, workspace: { requests: 1000, tokens: 1_000 } });
      const tokenLease = { requests: 2, tokens: 20, share: 50 };
      expect(await l.admit({ ...t, lease: tokenLease })).toMatchObject({ allowed: true, lease: { tokens: 20 }, status: { tokens: { remaining: 980 } } });
      const tokensAlone = await l.admit({ ...t, lease: tokenLease });
      expect(tokensAlone).toMatchObject({ allowed: true, status: { tokens: { remaining: 970 } } });
      expect(tokensAlone.allowed && tokensAlone.lease).toBeUndefined();
    });

    it("when a lease's unused part is released, then its bucket gets it back, never below zero, and not once the bucket has left the window", async () => {
      const l = await open();
      const req = request({ tokens: 100, key: { requests: 20, tokens: 2_000 } });
      const first = await l.admit({ ...req, lease: { requests: 10, tokens: 1_000, share: 1 } });
      if (!first.allowed) throw new Error("denied");
      clock.advance(1_500); // the lease's bucket has ended; its window has not
      await l.release({ ...first.ticket, requests: 6, tokens: 600 });
      expect(await l.admit(req)).toMatchObject({ allowed: true, status: { requests: { remaining: 15 }, tokens: { remaining: 1_500 } } });
      // Giving back more than the bucket holds empties it and takes nothing from the next bucket.
      await l.release({ ...first.ticket, requests: 50, tokens: 5_000 });
      expect(await l.admit(req)).toMatchObject({ allowed: true, status: { requests: { remaining: 18 }, tokens: { remaining: 1_800 } } });

      const late = await l.admit({ ...req, lease: { requests: 10, tokens: 1_000, share: 1 } });
      if (!late.allowed || !late.lease) throw new Error("no lease");
      clock.advance(61_000);
      await l.release({ ...late.ticket, requests: 10, tokens: 1_000 });
      expect(await l.admit(req)).toMatchObject({ allowed: true, status: { requests: { remaining: 19 }, tokens: { remaining: 1_900 } } });
    });

    it("when a scope stays idle for longer than the window, then it starts afresh", async () => {
      const l = await open();
      const req = request({ tokens: 50, key: { requests: 2, tokens: 100 } });
      await l.admit(req);
      await l.admit(req);
      expect((await l.admit(req)).allowed).toBe(false);
      clock.advance(10 * 60_000);
      expect(await l.admit(req)).toMatchObject({ allowed: true, status: { requests: { remaining: 1 }, tokens: { remaining: 50 } } });
    });
  });
}
