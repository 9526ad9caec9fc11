import { createClient, type RedisClientType } from "redis";
import { afterAll, beforeAll } from "vitest";
import { budgetStoreContract } from "./budget-store-contract";
import { testRedisUrl } from "@gw/testkit";
import { RedisBudgetStore } from "./redis-budget-store";

let url: string;
const clients: RedisClientType[] = [];

beforeAll(async () => {
  url = await testRedisUrl();
});

afterAll(async () => {
  const client = createClient({ url });
  await client.connect();
  for await (const keys of client.scanIterator({ MATCH: "bg-test:*", COUNT: 1000 })) {
    if (keys.length > 0) await client.del(keys);
  }
  client.destroy();
  for (const c of clients) if (c.isOpen) c.destroy();
});

/** A store on its own connection, as each ingress replica has. */
async function store(): Promise<RedisBudgetStore> {
  const client = createClient({ url }) as RedisClientType;
  await client.connect();
  clients.push(client);
  return new RedisBudgetStore(client, 2_000);
}

budgetStoreContract("Redis", store, store);
