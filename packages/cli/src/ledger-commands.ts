import { parseArgs } from "node:util";
import type { ParsedCommand } from "./commands";
import { UsageError } from "./usage-error";

/** The commands over the usage ledger: `usage`, `logs` and `statement`, all reads. */
export const ledgerNouns = ["usage", "logs", "statement"] as const;

export const ledgerUsage = `  usage [--workspace W] [--key K] [--model M] [--from ISO] [--to ISO] [--group-by day,model] [--tz Zone]
  logs [--workspace W] [--key K] [--model M] [--status S] [--route R] [--from ISO] [--to ISO] [--limit N] [--cursor C]
  logs <request-id>                      one request's record
  statement <workspace-id> --month YYYY-MM [--csv]`;

export const ledgerNotes = `  --group-by takes any of hour, day, month, model, key, provider, route, status; --from and --to are ISO 8601
  (2026-05-01 or 2026-05-01T09:30:00Z); --tz is an IANA zone (Europe/Paris) for the hour, day and month
  groups. logs prints the next page's --cursor when there is one; statement --csv prints the API's CSV.`;

export const groupByValues = ["hour", "day", "month", "model", "key", "provider", "route", "status"] as const;

export const ledgerOptions = {
  json: { type: "boolean" },
  workspace: { type: "string" },
  key: { type: "string" },
  model: { type: "string" },
  from: { type: "string" },
  to: { type: "string" },
  "group-by": { type: "string" },
  tz: { type: "string" },
  status: { type: "string" },
  route: { type: "string" },
  limit: { type: "string" },
  cursor: { type: "string" },
  month: { type: "string" },
  csv: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

type Values = ReturnType<typeof parseArgs<{ args: string[]; options: typeof ledgerOptions; allowPositionals: true; strict: true }>>["values"];
type StringFlag = { [K in keyof Values]-?: Values[K] extends string | undefined ? K : never }[keyof Values];

/** Which flags each command takes; any other flag given is a usage error rather than silently ignored. */
const flagsOf: Record<string, readonly (keyof Values)[]> = {
  usage: ["workspace", "key", "model", "from", "to", "group-by", "tz"],
  logs: ["workspace", "key", "model", "status", "route", "from", "to", "limit", "cursor"],
  statement: ["month", "csv"],
};

export function parseLedgerCommand(argv: string[]): ParsedCommand {
  let parsed: ReturnType<typeof parseArgs<{ args: string[]; options: typeof ledgerOptions; allowPositionals: true; strict: true }>>;
  try {
    parsed = parseArgs({ args: argv, options: ledgerOptions, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) throw new UsageError("");
  const [noun, target, extra] = positionals;
  const json = values.json === true;
  const given = (Object.keys(values) as (keyof Values)[]).filter((flag) => flag !== "json" && values[flag] !== undefined);
  const allowed = flagsOf[noun ?? ""] ?? [];
  const stray = given.find((flag) => !allowed.includes(flag));
  if (stray) throw new UsageError(`${noun} does not take --${stray}`);

  const query = new URLSearchParams();
  const put = (param: string, flag: StringFlag, check?: (v: string) => string | undefined) => {
    const v = values[flag];
    if (v === undefined) return;
    const problem = v === "" ? "must not be empty" : check?.(v);
    if (problem) throw new UsageError(`--${flag} ${problem}`);
    query.set(param, v);
  };
  const path = (base: string) => (query.toString() ? `${base}?${query}` : base);

  switch (noun) {
    case "usage": {
      if (target !== undefined) throw new UsageError(`unexpected argument: ${target}`);
      putFilters(put);
      put("group_by", "group-by", checkGroupBy);
      // Sent as one comma-separated list, spaces trimmed: `--group-by "day, model"` is day,model.
      if (query.has("group_by")) query.set("group_by", splitList(query.get("group_by")!).join(","));
      put("tz", "tz", checkZone);
      return { call: { method: "GET", path: path("/admin/usage") }, json, output: "usage" };
    }
    case "logs": {
      if (extra !== undefined) throw new UsageError(`unexpected argument: ${extra}`);
      if (target !== undefined) {
        if (given.length) throw new UsageError(`logs <request-id> takes no filter (--${given[0]})`);
        return { call: { method: "GET", path: `/admin/logs/${encodeURIComponent(target)}` }, json, output: "log" };
      }
      putFilters(put);
      put("status", "status");
      put("route", "route");
      put("limit", "limit", (v) => (/^[1-9]\d*$/.test(v) ? undefined : "must be a whole number from 1"));
      put("cursor", "cursor");
      return { call: { method: "GET", path: path("/admin/logs") }, json, output: "logs" };
    }
    case "statement": {
      if (!target) throw new UsageError("statement needs a workspace id");
      if (extra !== undefined) throw new UsageError(`unexpected argument: ${extra}`);
      if (values.month === undefined) throw new UsageError("statement needs --month YYYY-MM");
      if (values.csv && json) throw new UsageError("--csv and --json cannot be combined");
      put("month", "month", (v) => (/^\d{4}-(0[1-9]|1[0-2])$/.test(v) ? undefined : "must be a month as YYYY-MM"));
      if (values.csv) query.set("format", "csv");
      return {
        call: { method: "GET", path: path(`/admin/workspaces/${encodeURIComponent(target)}/statement`) },
        json,
        output: values.csv ? "csv" : "statement",
      };
    }
    default:
      throw new UsageError(`unknown command: ${positionals.join(" ")}`);
  }
}

/** The filters `usage` and `logs` share, under the admin API's parameter names. */
function putFilters(put: (param: string, flag: StringFlag, check?: (v: string) => string | undefined) => void): void {
  put("workspace_id", "workspace");
  put("key_id", "key");
  put("model", "model");
  put("from", "from", checkIso);
  put("to", "to", checkIso);
}

const isoPattern = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** An ISO 8601 date or date-time (passed on as written: the API reads it, in --tz when it has no offset). */
function checkIso(v: string): string | undefined {
  return isoPattern.test(v) && !Number.isNaN(Date.parse(v)) ? undefined : "must be an ISO 8601 date or time (2026-05-01, 2026-05-01T09:30:00Z)";
}

const splitList = (v: string) =>
  v
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);

function checkGroupBy(v: string): string | undefined {
  const names = splitList(v);
  const bad = names.find((name) => !(groupByValues as readonly string[]).includes(name));
  if (bad !== undefined) return `takes ${groupByValues.join(", ")} (not "${bad}")`;
  return names.length ? undefined : `must name at least one of ${groupByValues.join(", ")}`;
}

/** Checked here with the runtime's own zone database, so a typo fails before any request. */
function checkZone(v: string): string | undefined {
  try {
    new Intl.DateTimeFormat("en", { timeZone: v });
    return undefined;
  } catch {
    return `must be an IANA time zone such as UTC or Europe/Paris (not "${v}")`;
  }
}
