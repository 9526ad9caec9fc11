import { type OutputKind, type ParsedCommand, parseCommand, usage, UsageError } from "./commands";
import { formatLog, formatLogs, formatStatement, formatUsage } from "./ledger-format";

export interface CliIo {
  adminUrl: string;
  adminToken: string | undefined;
  /** Where the token was read from when GATEWAY_ADMIN_TOKEN was not set. */
  adminTokenFile?: string;
  /** Why there is no token, when there is none. */
  adminTokenProblem?: string;
  out: (text: string) => void;
  err: (text: string) => void;
}

/** Runs one CLI command against the admin API; returns the process exit code. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  let command: ParsedCommand;
  try {
    command = parseCommand(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    if (err.message) io.err(`error: ${err.message}\n`);
    io.err(`${usage}\n`);
    return 2;
  }
  if (!io.adminToken) {
    io.err(`error: ${io.adminTokenProblem ?? "GATEWAY_ADMIN_TOKEN is not set"}\n`);
    return 2;
  }
  const { call, json, output } = command;
  let res: Response;
  try {
    res = await fetch(`${io.adminUrl.replace(/\/+$/, "")}${call.path}`, {
      method: call.method,
      headers: { authorization: `Bearer ${io.adminToken}`, "content-type": "application/json" },
      body: call.body ? JSON.stringify(call.body) : undefined,
    });
  } catch (err) {
    io.err(`error: cannot reach the admin API at ${io.adminUrl}: ${(err as Error).message}\n`);
    return 1;
  }
  const text = await res.text().catch(() => "");
  // A CSV statement is printed byte for byte; anything else, and every refusal, is JSON.
  if (res.ok && output === "csv") {
    io.out(text);
    return 0;
  }
  const body = parseObject(text);
  if (!res.ok) {
    const message = (body.error as { message?: string } | undefined)?.message ?? res.statusText;
    io.err(json ? `${JSON.stringify(body)}\n` : `error (${res.status}): ${message}\n`);
    if (res.status === 401 && io.adminTokenFile) {
      io.err(`(the admin token was read from ${io.adminTokenFile}; if the gateway was started with GATEWAY_ADMIN_TOKEN, set the same here)\n`);
    }
    return 1;
  }
  const format = output && output !== "csv" ? formatters[output] : describe;
  io.out(json ? `${JSON.stringify(body)}\n` : format(body));
  return 0;
}

function parseObject(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

const formatters: Record<Exclude<OutputKind, "csv">, (body: Record<string, unknown>) => string> = {
  usage: formatUsage,
  logs: formatLogs,
  log: formatLog,
  statement: formatStatement,
};

/** A short human summary; --json gives the full object. */
function describe(body: Record<string, unknown>): string {
  // Only the overrides the record holds; the plan's defaults are not in the answer.
  const limits = (o: Record<string, unknown>) => {
    const l = (o.limits ?? {}) as { requests_per_minute?: number; tokens_per_minute?: number };
    return `${l.requests_per_minute === undefined ? "" : `  rpm=${l.requests_per_minute}`}${l.tokens_per_minute === undefined ? "" : `  tpm=${l.tokens_per_minute}`}`;
  };
  const line = (o: Record<string, unknown>) => {
    if (o.object === "workspace") {
      return `${o.id}  ${o.name}  plan=${o.plan}  subscription=${o.subscription}  models=${(o.models as string[]).join(",")}${limits(o)}`;
    }
    if (o.object === "api_key") return `${o.id}  ${o.prefix}…  status=${o.status}${o.name ? `  name=${o.name}` : ""}${limits(o)}`;
    return JSON.stringify(o);
  };
  if (body.object === "list") return `${(body.data as Record<string, unknown>[]).map(line).join("\n")}\n`;
  if (typeof body.link === "string" && typeof body.user === "object" && body.user !== null) {
    const user = body.user as { email: string; operator: boolean };
    return `${user.email}${user.operator ? " (operator)" : ""}\nsign-in link: ${body.link}\n(single use, for 24 hours; it signs in as this person and asks them for a password)\n`;
  }
  const secret = typeof body.key === "string" ? `\nkey: ${body.key}\n(the secret is shown only now; store it safely)` : "";
  return `${line(body)}${secret}\n`;
}
