import { Identity } from "@gw/contracts";
import { runMigrations, type Db } from "@gw/db";
import { createPgliteDb } from "@gw/db";
import { GatewayError } from "@gw/errors";
import { createLogger } from "@gw/logger";
import { allowedByAll } from "@gw/service-kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ingressMigrations } from "../service";
import { IdentityStore, type KeyPrincipal } from "../store/identity-store";
import { Authenticator } from "./authenticator";

const logger = createLogger({ service: "test", level: "silent" });
let db: Db;

beforeAll(async () => {
  db = await createPgliteDb();
  await runMigrations(db, { schema: "ingress", dir: ingressMigrations });
}, 60_000);
afterAll(async () => {
  await db?.close();
});

/** The real store, counting its lookups and able to fail as if Postgres were down. */
class ObservedStore extends IdentityStore {
  lookups = 0;
  down = false;
  /** When set, each lookup waits for it, so concurrent callers really overlap. */
  gate: Promise<void> | undefined;
  /** When set, each lookup reads the row, then waits for it before answering (a slow network). */
  holdResult: Promise<void> | undefined;
  rowsRead = 0;

  override async findByHash(hash: string): Promise<KeyPrincipal | undefined> {
    this.lookups++;
    if (this.gate) await this.gate;
    if (this.down) throw new Error("connect ECONNREFUSED 127.0.0.1:5432");
    const principal = await super.findByHash(hash);
    this.rowsRead++;
    if (this.holdResult) await this.holdResult;
    return principal;
  }
}

function setup() {
  const store = new ObservedStore(db);
  const clock = { now: 1_700_000_000_000 };
  const auth = new Authenticator(store, { ttlMs: 1_000, negativeTtlMs: 500, maxStaleMs: 60_000, maxEntries: 1_000, now: () => clock.now }, logger);
  return { store, auth, clock };
}

async function newKey(
  store: IdentityStore,
  workspace: { models?: string[]; tools?: ("webtool" | "serptool")[] } = {},
  key: { models?: string[]; tools?: ("webtool" | "serptool")[] } = {},
) {
  const ws = await store.createWorkspace({ name: "acme", plan: "pro", ...workspace });
  const { key: created, secret } = await store.createKey(ws.id, key);
  return { workspace: ws, key: created, secret };
}

const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });
const unknownKey = `gw_live_${"Z".repeat(40)}`;
/** The client address of every call, unless a test says otherwise. */
const ip = "203.0.113.7";

async function authError(promise: Promise<unknown>): Promise<GatewayError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error("expected authentication to fail");
}

describe("Authenticator: rejections", () => {
  it("when no key is sent, then it is 401 missing_api_key without a store query", async () => {
    const { auth, store } = setup();
    const err = await authError(auth.authenticate({}, ip));
    expect([err.code, err.status]).toEqual(["missing_api_key", 401]);
    expect(store.lookups).toBe(0);
  });

  it("when the key is malformed, then it is 401 invalid_api_key without a store query", async () => {
    const { auth, store } = setup();
    for (const headers of [bearer("sk-not-ours"), bearer("gw_live_short"), { "x-api-key": "hello" }]) {
      const err = await authError(auth.authenticate(headers, ip));
      expect([err.code, err.status]).toEqual(["invalid_api_key", 401]);
    }
    expect(store.lookups).toBe(0);
  });

  it("when the key is well formed but unknown, then it is 401 invalid_api_key", async () => {
    const { auth } = setup();
    const err = await authError(auth.authenticate(bearer(unknownKey), ip));
    expect([err.code, err.status]).toEqual(["invalid_api_key", 401]);
  });

  it("when the key is revoked, then it is 401 invalid_api_key", async () => {
    const { auth, store } = setup();
    const { key, secret } = await newKey(store);
    await store.setKeyStatus(key.id, "revoked");
    const err = await authError(auth.authenticate(bearer(secret), ip));
    expect([err.code, err.status]).toEqual(["invalid_api_key", 401]);
  });

  it("when the key is disabled, then it is 403 key_disabled", async () => {
    const { auth, store } = setup();
    const { key, secret } = await newKey(store);
    await store.setKeyStatus(key.id, "disabled");
    const err = await authError(auth.authenticate(bearer(secret), ip));
    expect([err.code, err.status]).toEqual(["key_disabled", 403]);
  });

  it("when the workspace subscription is canceled, then it is 403 subscription_inactive", async () => {
    const { auth, store } = setup();
    const { workspace, secret } = await newKey(store);
    await store.patchWorkspace(workspace.id, { subscription: "canceled" });
    const err = await authError(auth.authenticate(bearer(secret), ip));
    expect([err.code, err.status]).toEqual(["subscription_inactive", 403]);
  });

  it("when a key is disabled after it was cached, then invalidating the key makes the next call see it at once", async () => {
    const { auth, store } = setup();
    const { key, secret } = await newKey(store);
    await auth.authenticate(bearer(secret), ip);
    await store.setKeyStatus(key.id, "disabled");
    expect(auth.cache.invalidate("key", key.id)).toBe(1);
    expect((await authError(auth.authenticate(bearer(secret), ip))).code).toBe("key_disabled");
  });

  it("when a key is revoked and invalidated while its lookup is in flight, then later calls do not get the pre-revoke identity from the cache", async () => {
    const { auth, store } = setup();
    const { key, secret } = await newKey(store);
    let deliver = () => {};
    store.holdResult = new Promise<void>((resolve) => (deliver = resolve));
    const inFlight = auth.authenticate(bearer(secret), ip);
    while (store.rowsRead === 0) await new Promise((r) => setTimeout(r, 1)); // the row was read while active
    // the admin API revokes the key and broadcasts; this replica drops the key from its cache
    await store.setKeyStatus(key.id, "revoked");
    auth.cache.invalidate("key", key.id);
    deliver();
    await inFlight.catch(() => undefined); // began before the revocation: may pass or, re-read, fail
    store.holdResult = undefined;
    const err = await authError(auth.authenticate(bearer(secret), ip));
    expect(err.code).toBe("invalid_api_key");
  });

  it("when a key is revoked after it was cached, then the change shows once the TTL has passed", async () => {
    const { auth, store, clock } = setup();
    const { key, secret } = await newKey(store);
    await auth.authenticate(bearer(secret), ip);
    await store.setKeyStatus(key.id, "revoked");
    clock.now += 1_001;
    expect((await authError(auth.authenticate(bearer(secret), ip))).code).toBe("invalid_api_key");
  });
});

describe("Authenticator: identity", () => {
  it("when an active key is sent as Bearer or as x-api-key, then both give the same valid identity", async () => {
    const { auth, store } = setup();
    const { workspace, key, secret } = await newKey(store);
    const viaBearer = await auth.authenticate(bearer(secret), ip);
    const viaHeader = await auth.authenticate({ "x-api-key": secret }, ip);
    expect(viaBearer.identity).toEqual({
      workspace_id: workspace.id,
      key_id: key.id,
      plan: "pro",
      models: [["*"]],
      tools: ["webtool", "serptool"],
    });
    expect(viaHeader.identity).toEqual(viaBearer.identity);
    expect(Identity.safeParse(viaBearer.identity).success).toBe(true);
    expect(viaBearer.principal.keyId).toBe(key.id);
  });

  it("when the key narrows the workspace's models, then both lists apply and the key cannot widen them", async () => {
    const { auth, store } = setup();
    const { secret } = await newKey(store, { models: ["gpt-*", "claude-sonnet"] }, { models: ["gpt-4o-mini", "claude-opus"] });
    const { identity } = await auth.authenticate(bearer(secret), ip);
    expect(identity.models).toEqual([
      ["gpt-*", "claude-sonnet"],
      ["gpt-4o-mini", "claude-opus"],
    ]);
    expect(allowedByAll(identity.models, "gpt-4o-mini")).toBe(true);
    expect(allowedByAll(identity.models, "gpt-4o")).toBe(false); // the key does not list it
    expect(allowedByAll(identity.models, "claude-opus")).toBe(false); // the workspace does not allow it
    expect(allowedByAll(identity.models, "claude-sonnet")).toBe(false);
  });

  it("when the key has no model list, then only the workspace's list applies", async () => {
    const { auth, store } = setup();
    const { secret } = await newKey(store, { models: ["text-embed-*"] });
    const { identity } = await auth.authenticate(bearer(secret), ip);
    expect(identity.models).toEqual([["text-embed-*"]]);
  });

  it("when key and workspace both list tools, then the identity holds their intersection", async () => {
    const { auth, store } = setup();
    const narrow = await newKey(store, { tools: ["webtool", "serptool"] }, { tools: ["serptool"] });
    expect((await auth.authenticate(bearer(narrow.secret), ip)).identity.tools).toEqual(["serptool"]);

    const widen = await newKey(store, { tools: ["webtool"] }, { tools: ["webtool", "serptool"] });
    expect((await auth.authenticate(bearer(widen.secret), ip)).identity.tools).toEqual(["webtool"]);

    const none = await newKey(store, { tools: ["webtool", "serptool"] }, { tools: [] });
    expect((await auth.authenticate(bearer(none.secret), ip)).identity.tools).toEqual([]);

    const inherit = await newKey(store, { tools: ["serptool"] });
    expect((await auth.authenticate(bearer(inherit.secret), ip)).identity.tools).toEqual(["serptool"]);
  });
});

describe("Authenticator: lookups", () => {
  it("when one key is looked up concurrently, then the store is queried once", async () => {
    const { auth, store } = setup();
    const { secret, key } = await newKey(store);
    let open = () => {};
    store.gate = new Promise<void>((resolve) => (open = resolve));
    const pending = Array.from({ length: 10 }, () => auth.authenticate(bearer(secret), ip));
    await new Promise((r) => setTimeout(r, 10));
    open();
    const results = await Promise.all(pending);
    expect(store.lookups).toBe(1);
    expect(results.every((r) => r.identity.key_id === key.id)).toBe(true);
  });

  it("when a key was seen within the TTL, then it is served without a store query; after the TTL it is queried again", async () => {
    const { auth, store, clock } = setup();
    const { secret } = await newKey(store);
    await auth.authenticate(bearer(secret), ip);
    await auth.authenticate(bearer(secret), ip);
    expect(store.lookups).toBe(1);
    clock.now += 1_001;
    await auth.authenticate(bearer(secret), ip);
    expect(store.lookups).toBe(2);
  });

  it("when an unknown key repeats, then the negative cache spares the store until its short TTL ends", async () => {
    const { auth, store, clock } = setup();
    await authError(auth.authenticate(bearer(unknownKey), ip));
    await authError(auth.authenticate(bearer(unknownKey), ip));
    expect(store.lookups).toBe(1);
    clock.now += 501;
    await authError(auth.authenticate(bearer(unknownKey), ip));
    expect(store.lookups).toBe(2);
  });

  it("when the store fails, then a recently seen key still authenticates from the stale cache", async () => {
    const { auth, store, clock } = setup();
    const { secret, key } = await newKey(store);
    await auth.authenticate(bearer(secret), ip);
    clock.now += 5_000; // past the TTL, within maxStale
    store.down = true;
    const { identity } = await auth.authenticate(bearer(secret), ip);
    expect(identity.key_id).toBe(key.id);
    expect(store.lookups).toBe(2); // it did try the store first
  });

  it("when the store fails, then an unseen key gets 503 upstream_unavailable (not 401)", async () => {
    const { auth, store } = setup();
    const { secret } = await newKey(store);
    store.down = true;
    const err = await authError(auth.authenticate(bearer(secret), ip));
    expect([err.code, err.status]).toEqual(["upstream_unavailable", 503]);
    expect(err.retryable).toBe(true);
  });

  it("when the store fails and the key was seen too long ago, then it gets 503", async () => {
    const { auth, store, clock } = setup();
    const { secret } = await newKey(store);
    await auth.authenticate(bearer(secret), ip);
    clock.now += 61_000; // past maxStale
    store.down = true;
    expect((await authError(auth.authenticate(bearer(secret), ip))).code).toBe("upstream_unavailable");
  });

  it("when the store fails, then a cached revoked key stays rejected", async () => {
    const { auth, store, clock } = setup();
    const { key, secret } = await newKey(store);
    await store.setKeyStatus(key.id, "revoked");
    await authError(auth.authenticate(bearer(secret), ip));
    clock.now += 5_000;
    store.down = true;
    expect((await authError(auth.authenticate(bearer(secret), ip))).code).toBe("invalid_api_key");
  });

  it("when the store comes back, then the next lookup queries it again (a failure is not cached)", async () => {
    const { auth, store } = setup();
    const { secret, key } = await newKey(store);
    store.down = true;
    await authError(auth.authenticate(bearer(secret), ip));
    store.down = false;
    expect((await auth.authenticate(bearer(secret), ip)).identity.key_id).toBe(key.id);
  });
});
