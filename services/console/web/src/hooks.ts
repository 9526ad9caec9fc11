import { useQuery } from "@tanstack/react-query";
import { get, listOf, wsPath } from "./api";
import type { ApiKey, List, UsageRow } from "./types";
import { useWorkspace } from "./workspace";

export interface UsageQuery {
  from: string;
  to?: string;
  group_by?: string;
  model?: string;
  key_id?: string;
}

/** `GET …/usage` in the workspace's zone. */
export function useUsage(q: UsageQuery, enabled = true) {
  const { ws, tz } = useWorkspace();
  const query = { ...q, tz };
  return useQuery({
    queryKey: ["usage", ws, query],
    queryFn: async () => listOf(await get<List<UsageRow>>(wsPath(ws, "/usage"), query)),
    enabled,
  });
}

export const keysKey = (ws: string) => ["keys", ws] as const;

/** The workspace's keys (when the role may read them). */
export function useKeys() {
  const { ws, can } = useWorkspace();
  return useQuery({
    queryKey: keysKey(ws),
    queryFn: async () => listOf(await get<List<ApiKey>>(wsPath(ws, "/keys"))),
    enabled: can("keys.read"),
  });
}

/** A key's name for tables: its name and prefix when the keys are readable, else its id. */
export function useKeyLabel(): (id: string | undefined | null) => string {
  const keys = useKeys();
  const byId = new Map((keys.data ?? []).map((k) => [k.id, k]));
  return (id) => {
    if (!id) return "—";
    const key = byId.get(id);
    if (!key) return id;
    return key.name ? `${key.name} (${key.prefix}…)` : `${key.prefix}…`;
  };
}

/** A key as two parts for a table cell: its name (or prefix), and its prefix below. */
export function useKeyParts(): (id: string | undefined | null) => { name: string; detail?: string } {
  const keys = useKeys();
  const byId = new Map((keys.data ?? []).map((k) => [k.id, k]));
  return (id) => {
    if (!id) return { name: "—" };
    const key = byId.get(id);
    if (!key) return { name: id };
    return key.name ? { name: key.name, detail: `${key.prefix}…` } : { name: `${key.prefix}…` };
  };
}

export function sumRows(rows: readonly UsageRow[]) {
  const total = { requests: 0, errors: 0, input_tokens: 0, output_tokens: 0, cost: 0, priced: false };
  for (const row of rows) {
    total.requests += row.requests;
    total.errors += row.errors;
    total.input_tokens += row.input_tokens;
    total.output_tokens += row.output_tokens;
    if (row.cost_usd !== null) {
      total.cost += Number(row.cost_usd);
      total.priced = true;
    }
  }
  return total;
}
