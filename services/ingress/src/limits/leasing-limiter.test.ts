import { afterEach, describe, expect, it } from "vitest";
import { LeasingLimiter } from "./leasing-limiter";
import { FakeClock } from "./limiter-contract";
import { MemoryLimiter } from "./memory-limiter";
import type { Admission, AdmitRequest, Limiter } from "./types";

/** The store as the replicas share it, counting the calls that reach it. */
class CountingStore extends MemoryLimiter {
  calls = 0;
  leases = 0;
  override async admit(request: AdmitRequest): Promise<Admission> {
    this.calls++;
    if (request.lease) this.leases++;
    return super.admit(request);
  }
  /** Shared by the replicas: one closing must not clear it. The test ends it. */
  override async close(): Promise<void> {}
  end(): Promise<void> {
    return super.close();
  }
}

const window = { windowMs: 60_000, buckets: 60 };
const opened: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of opened.splice(0)) await close();
});

function setup() {
  const clock = new FakeClock();
  const store = new CountingStore({ ...window, now: clock.now });
  const replica = () => {
    const l = new LeasingLimiter(store, { windowMs: window.windowMs, bucketMs: 1_000, now: clock.now });
    opened.push(() => l.close());
    return l;
  };
  opened.push(() => store.end());
  return { clock, store, replica };
}

const limits = (requests: number, tokens = 1_000_000_000) => ({ workspace: { requests, tokens }, key: { requests, tokens } });
const ask = (extra: Partial<AdmitRequest> = {}): AdmitRequest => ({ workspaceId: "ws_1", keyId: "key_1", ...limits(10_000), tokens: 0, ...extra });

/** What the store has counted, seen through a request of a key that is not limited (it charges one more). */
async function used(store: Limiter, requests: number): Promise<{ requests: number; tokens: number }> {
  const probe = await store.admit({ workspaceId: "ws_1", keyId: "key_probe", workspace: { requests, tokens: 1_000_000_000 }, key: limits(1e9).key, tokens: 0 });
  return { requests: requests - probe.status.requests.remaining - 1, tokens: 1_000_000_000 - probe.status.tokens.remaining };
}

describe("LeasingLimiter", () => {
  it("when a busy key is far from its limits, then its blocks grow by doubling to 100, and the headers count down by one", async () => {
    const { store, replica } = setup();
    const l = replica();
    const remaining: number[] = [];
    for (let i = 0; i < 250; i++) {
      const a = await l.admit(ask({ tokens: 10 }));
      if (!a.allowed) throw new Error(`request ${i} denied`);
      remaining.push(a.status.requests.remaining);
    }
    expect(remaining).toEqual(Array.from({ length: 250 }, (_, i) => 10_000 - 1 - i));
    // The first request alone (nothing known yet), then blocks of twice the key's pace: 4 (requests
    // 2–5), 12 (6–17), 36 (18–53), then the most, 100 (54–153, 154–253).
    expect({ calls: store.calls, leases: store.leases }).toEqual({ calls: 6, leases: 5 });
    // The store counted whole blocks, 10 tokens a request.
    expect(await used(store, 1_000_000)).toEqual({ requests: 253, tokens: 2_530 });
  });

  it("when a block's bucket ends, then its unused part goes back to that bucket and the next request asks the store", async () => {
    const { clock, store, replica } = setup();
    const l = replica();
    for (let i = 0; i < 4; i++) await l.admit(ask({ tokens: 10 })); // alone, then a block of 4 with 1 left
    expect(store.calls).toBe(2);
    clock.advance(1_000);
    const next = await l.admit(ask({ tokens: 10 }));
    expect(store.calls).toBe(3);
    expect(next.allowed && next.ticket.bucket).toBe(Math.floor(clock.t / 1_000));
    // Twice the last second's 4 admissions.
    expect(next.allowed && next.lease?.requests).toBe(8);
    // 5 admitted and the new block's 7 unused: the old block's 1 unused request and 10 tokens came back.
    expect(await used(store, 1_000_000)).toEqual({ requests: 5 + 7, tokens: 120 });
  });

  it("when the room left is under a lease's share, then every request goes to the store and the limit is exact", async () => {
    const { store, replica } = setup();
    const l = replica();
    const answers = [];
    for (let i = 0; i < 60; i++) answers.push(await l.admit(ask(limits(50))));
    expect(answers.filter((a) => a.allowed)).toHaveLength(50);
    expect({ calls: store.calls, leases: store.leases }).toEqual({ calls: 60, leases: 0 });
  });

  it("when a request needs more tokens than the block has left, then it asks the store and the rest of the block is given back", async () => {
    const { store, replica } = setup();
    const l = replica();
    await l.admit(ask({ tokens: 100 }));
    const block = await l.admit(ask({ tokens: 100 })); // a block of 4 requests and 400 tokens
    expect(block.allowed && block.ticket.tokens).toBe(100);
    const big = await l.admit(ask({ tokens: 20_000 }));
    expect(big.allowed).toBe(true);
    expect(store.calls).toBe(3);
    // 3 admitted (100 + 100 + 20,000 tokens), and the new block it took for itself: the old one's rest is back.
    const counted = await used(store, 1_000_000);
    expect(counted.requests).toBe(2 + (big.allowed && big.lease ? big.lease.requests : 1));
    expect(counted.tokens).toBe(200 + (big.allowed && big.lease ? big.lease.tokens : 20_000));
  });

  it("when the limits change, then the held block is not used under the new ones", async () => {
    const { store, replica } = setup();
    const l = replica();
    await l.admit(ask());
    await l.admit(ask()); // a block of 4 under 10,000 a minute
    const lowered = await l.admit(ask(limits(2)));
    expect(store.calls).toBe(3);
    // The block's 3 unused requests went back first, so the store holds the 2 admitted: none left under 2.
    expect(lowered.allowed ? undefined : lowered.denial).toMatchObject({ scope: "workspace", dimension: "requests", limit: 2, used: 2 });
  });

  it("when two replicas share a key until its limit, then together they admit exactly the limit, asking the store for a fraction of the requests", async () => {
    const { clock, store, replica } = setup();
    const replicas = [replica(), replica()];
    let admitted = 0;
    let seed = 7;
    for (let i = 0; i < 3_000; i++) {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      const a = await (replicas[seed % 2] as Limiter).admit(ask({ ...limits(2_000), tokens: 5 }));
      if (a.allowed) admitted++;
      clock.advance(5);
    }
    expect(admitted).toBe(2_000);
    expect(store.calls).toBeLessThan(1_500);
  });

  it("when many requests of a key miss at once, then one asks for a block and the others go to the store alone", async () => {
    const { store, replica } = setup();
    const l = replica();
    await l.admit(ask());
    const answers = await Promise.all(Array.from({ length: 200 }, () => l.admit(ask())));
    expect(answers.every((a) => a.allowed)).toBe(true);
    expect(store.leases).toBe(1);
    expect(store.calls).toBe(201);
    await l.close();
    expect(await used(store, 1_000_000)).toMatchObject({ requests: 201 });
  });

  it("when other replicas have used the room since this one last asked, then the store refuses a block too big for what is left", async () => {
    const { clock, store, replica } = setup();
    const l = replica();
    for (let i = 0; i < 60; i++) await l.admit(ask());
    clock.advance(1_000);
    // Another replica's traffic on the same workspace leaves about 140 of 10,000.
    for (let i = 0; i < 9_800; i++) await store.admit(ask({ keyId: "key_2" }));
    const next = await l.admit(ask()); // this replica still sees about 9,900 left and its pace asks for 100
    expect(next.allowed).toBe(true);
    expect(next.allowed && next.lease).toBeUndefined();
    expect(store.leases).toBe(5); // four blocks in the first second, and this ask, refused
  });

  it("when a key goes quiet, then its block's unused part is given back once its bucket has ended, without another request", async () => {
    const clock = new FakeClock();
    const store = new CountingStore({ ...window, now: clock.now });
    const l = new LeasingLimiter(store, { windowMs: window.windowMs, bucketMs: 10, now: clock.now });
    opened.push(
      () => l.close(),
      () => store.end(),
    );
    await l.admit(ask());
    await l.admit(ask());
    await new Promise((r) => setTimeout(r, 30));
    expect(await used(store, 1_000_000)).toMatchObject({ requests: 5 }); // the bucket has not ended: the block of 4 stands
    clock.advance(1_000);
    await new Promise((r) => setTimeout(r, 30));
    expect(await used(store, 1_000_000)).toMatchObject({ requests: 2 + 1 }); // the 2 admitted, and the first probe
  });

  it("when a key sends one request a second, then its blocks stay at 2 and it never holds more than 1 unused", async () => {
    const { clock, store, replica } = setup();
    const l = replica();
    const held: number[] = [];
    for (let i = 1; i <= 10; i++) {
      const a = await l.admit(ask());
      if (a.allowed && a.lease) held.push(a.lease.requests - 1);
      clock.advance(1_000);
    }
    expect(held).toEqual(Array(9).fill(1));
    // 10 admitted; the last block's 1 unused request is still held (its bucket ended; nobody asked since).
    expect(await used(store, 1_000_000)).toMatchObject({ requests: 11 });
  });

  it("when it closes, then what its blocks did not use is given back", async () => {
    const { store, replica } = setup();
    const l = replica();
    await l.admit(ask());
    await l.admit(ask());
    await l.close();
    expect(await used(store, 1_000_000)).toMatchObject({ requests: 2 });
  });
});
