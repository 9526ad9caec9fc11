import { Client } from "pg";
import { startContainer } from "./container";
import { uniqueId } from "./unique-id";

export interface TestDatabase {
  /** Connection URL of a new, empty database of its own. */
  url: string;
  /** Drops the database even if connections are still open. Safe to call twice. */
  drop(): Promise<void>;
}

const LOCAL_URL = "postgres://postgres@127.0.0.1:5432/postgres";

// One server per test process: discovering it (or starting a container) is the slow part, and every
// test then gets its own database on it.
let server: Promise<string> | undefined;

/**
 * A fresh database named `gw_t_<time36><rand>` on the first server found: `DATABASE_URL`, else a
 * local Postgres on 127.0.0.1:5432, else a throwaway testcontainers Postgres (needs Docker).
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const adminUrl = await serverUrl();
  const name = `gw_t_${uniqueId()}`;
  await withClient(adminUrl, (c) => c.query(`create database "${name}"`));
  let dropping: Promise<void> | undefined;
  return {
    url: withDatabase(adminUrl, name),
    drop() {
      // FORCE (Postgres 13+) ends sessions a test forgot to close, so cleanup never hangs on them.
      dropping ??= withClient(adminUrl, async (c) => {
        await c.query(`drop database if exists "${name}" with (force)`);
      });
      return dropping;
    },
  };
}

function serverUrl(): Promise<string> {
  server ??= findServer().catch((err: unknown) => {
    server = undefined; // let the next caller retry instead of caching the failure
    throw err;
  });
  return server;
}

async function findServer(): Promise<string> {
  // Test infrastructure is the one place outside a service's config.ts that reads the environment:
  // CI points tests at its database this way.
  const fromEnv = process.env.DATABASE_URL;
  if (fromEnv) return fromEnv;
  if (await answers(LOCAL_URL)) return LOCAL_URL;
  return startContainer("Postgres", `DATABASE_URL is unset and nothing answers at ${LOCAL_URL}`, async () => {
    // Loaded only here, so runs that have a server never load testcontainers.
    const { PostgreSqlContainer } = await import("@testcontainers/postgresql");
    // Not stopped explicitly: testcontainers' reaper removes it when this process exits.
    const container = await new PostgreSqlContainer("postgres:16-alpine").start();
    return container.getConnectionUri();
  });
}

async function answers(url: string): Promise<boolean> {
  try {
    await withClient(url, (c) => c.query("select 1"), 1_000);
    return true;
  } catch {
    return false;
  }
}

export async function withClient<T>(url: string, fn: (client: Client) => Promise<T>, timeoutMs = 10_000): Promise<T> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  // A server-side disconnect after the work is done must not become an unhandled 'error' event.
  client.on("error", () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}
