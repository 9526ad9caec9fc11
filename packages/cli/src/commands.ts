import { parseArgs } from "node:util";
import { ledgerNotes, ledgerNouns, ledgerOptions, ledgerUsage, parseLedgerCommand } from "./ledger-commands";
import { UsageError } from "./usage-error";

export { UsageError };

/** One CLI command: the admin API call it makes, from positional args and flags. */
export interface AdminCall {
  method: "GET" | "POST" | "PATCH";
  path: string;
  body?: Record<string, unknown>;
}

/** How a successful answer is printed without --json: the admin objects' one-liners by default. */
export type OutputKind = "usage" | "logs" | "log" | "statement" | "csv";

export interface ParsedCommand {
  call: AdminCall;
  json: boolean;
  output?: OutputKind;
}

export const usage = `Usage: pnpm gw <command> [--json]

  workspace create <name> --plan plus|pro|enterprise [--models a,b*] [--tools webtool,serptool] [--rpm N] [--tpm N]
                   [--timezone Europe/Berlin] [--budget-usd 50 [--budget-mode hard|soft] [--budget-alert 80]]
  workspace list
  workspace get <workspace-id>
  workspace update <workspace-id> [--name N] [--plan P] [--models ...] [--tools ...] [--rpm N] [--tpm N | --clear-limits]
                   [--timezone Z] [--budget-usd N [--budget-mode M] [--budget-alert P] | --clear-budget]
  workspace cancel <workspace-id>        subscription → canceled
  workspace activate <workspace-id>      subscription → active
  key create <workspace-id> [--name N] [--models ...] [--tools ...] [--rpm N] [--tpm N] [--budget-usd N ...]
  key list <workspace-id>
  key update <key-id> [--name N] [--rpm N] [--tpm N | --clear-limits] [--budget-usd N ... | --clear-budget]
  key disable|enable|revoke <key-id>
  user create --email E [--name N] [--operator]   a person for the console; prints a single-use sign-in link
${ledgerUsage}

  On update, --rpm/--tpm replace the whole limits object (a limit not given falls back to the
  workspace's, or the plan's); --clear-limits removes every override. A key's limits may not
  exceed its workspace's. --budget-usd sets a monthly budget (mode hard unless --budget-mode soft;
  --budget-alert: the percent at which to alert), replacing the old one; --clear-budget removes it.
  A key's budget may not exceed its workspace's. Months are counted in the workspace's --timezone.

${ledgerNotes}

Environment: GATEWAY_ADMIN_URL (default http://127.0.0.1:8090), GATEWAY_ADMIN_TOKEN (default: the
  token pnpm start generated into $GATEWAY_DATA_DIR/admin-token; GATEWAY_DATA_DIR defaults to .data/).`;

const options = {
  json: { type: "boolean" },
  plan: { type: "string" },
  name: { type: "string" },
  models: { type: "string" },
  tools: { type: "string" },
  rpm: { type: "string" },
  tpm: { type: "string" },
  "clear-limits": { type: "boolean" },
  timezone: { type: "string" },
  "budget-usd": { type: "string" },
  "budget-mode": { type: "string" },
  "budget-alert": { type: "string" },
  "clear-budget": { type: "boolean" },
  email: { type: "string" },
  operator: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

export function parseCommand(argv: string[]): ParsedCommand {
  // The ledger's reads take flags of their own: find the command with both sets, then parse with its own.
  let command: string | undefined;
  try {
    command = parseArgs({ args: argv, options: { ...options, ...ledgerOptions }, allowPositionals: true, strict: true }).positionals[0];
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if ((ledgerNouns as readonly string[]).includes(command ?? "")) return parseLedgerCommand(argv);
  let parsed: ReturnType<typeof parseArgs<{ args: string[]; options: typeof options; allowPositionals: true; strict: true }>>;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) throw new UsageError("");
  const [noun, verb, target, extra] = positionals;
  if (extra !== undefined) throw new UsageError(`unexpected argument: ${extra}`);
  const need = (what: string) => {
    if (!target) throw new UsageError(`${noun} ${verb} needs a ${what}`);
    return encodeURIComponent(target);
  };
  const list = (v: string | undefined) =>
    v === undefined
      ? undefined
      : v
          .split(",")
          .map((s) => s.trim())
          .filter(Boolean);
  const int = (flag: string, v: string | undefined) => {
    if (v === undefined) return undefined;
    if (!/^\d+$/.test(v)) throw new UsageError(`--${flag} must be a whole number`);
    return Number(v);
  };
  const limits = () => {
    const rpm = int("rpm", values.rpm);
    const tpm = int("tpm", values.tpm);
    if (values["clear-limits"]) {
      if (verb !== "update") throw new UsageError("--clear-limits is only for workspace update and key update");
      if (rpm !== undefined || tpm !== undefined) throw new UsageError("--clear-limits cannot be combined with --rpm or --tpm");
      return {};
    }
    return rpm === undefined && tpm === undefined ? undefined : { requests_per_minute: rpm, tokens_per_minute: tpm };
  };
  const budget = () => {
    const usd = values["budget-usd"];
    if (values["clear-budget"]) {
      if (verb !== "update") throw new UsageError("--clear-budget is only for workspace update and key update");
      if (usd !== undefined) throw new UsageError("--clear-budget cannot be combined with --budget-usd");
      return null;
    }
    if (usd === undefined) {
      if (values["budget-mode"] !== undefined || values["budget-alert"] !== undefined)
        throw new UsageError("--budget-mode and --budget-alert need --budget-usd");
      return undefined;
    }
    if (!/^\d+(\.\d{1,2})?$/.test(usd)) throw new UsageError("--budget-usd must be an amount in dollars, e.g. 50 or 12.50");
    const mode = values["budget-mode"] ?? "hard";
    if (mode !== "hard" && mode !== "soft") throw new UsageError("--budget-mode must be hard or soft");
    return { monthly_usd: Number(usd), mode, alert_at_percent: int("budget-alert", values["budget-alert"]) };
  };
  // What workspace create and update both take from their flags.
  const workspaceFields = () => ({
    plan: values.plan,
    models: list(values.models),
    tools: list(values.tools),
    limits: limits(),
    timezone: values.timezone,
    budget: budget(),
  });
  const shape = (body: Record<string, unknown>) => Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined));
  const json = values.json === true;
  const call = ((): AdminCall => {
    switch (`${noun} ${verb}`) {
      case "workspace create":
        if (!target) throw new UsageError("workspace create needs a name");
        if (!values.plan) throw new UsageError("workspace create needs --plan");
        return {
          method: "POST",
          path: "/admin/workspaces",
          body: shape({ name: target, ...workspaceFields() }),
        };
      case "workspace list":
        return { method: "GET", path: "/admin/workspaces" };
      case "workspace get":
        return { method: "GET", path: `/admin/workspaces/${need("workspace id")}` };
      case "workspace update": {
        const path = `/admin/workspaces/${need("workspace id")}`;
        const body = shape({ name: values.name, ...workspaceFields() });
        if (Object.keys(body).length === 0) {
          throw new UsageError(
            "workspace update needs at least one of --name, --plan, --models, --tools, --rpm, --tpm, --clear-limits, --timezone, --budget-usd, --clear-budget",
          );
        }
        return { method: "PATCH", path, body };
      }
      case "workspace cancel":
      case "workspace activate":
        return {
          method: "PATCH",
          path: `/admin/workspaces/${need("workspace id")}`,
          body: { subscription: verb === "cancel" ? "canceled" : "active" },
        };
      case "key create":
        if (values.timezone !== undefined) throw new UsageError("key create does not take --timezone (a key's months are its workspace's)");
        return {
          method: "POST",
          path: `/admin/workspaces/${need("workspace id")}/keys`,
          body: shape({ name: values.name, models: list(values.models), tools: list(values.tools), limits: limits(), budget: budget() }),
        };
      case "key update": {
        const path = `/admin/keys/${need("key id")}`;
        // A key's model and tool lists are fixed at creation; say so rather than drop the flag.
        const fixed = (["plan", "models", "tools", "timezone"] as const).find((flag) => values[flag] !== undefined);
        if (fixed) throw new UsageError(`key update does not take --${fixed}`);
        const body = shape({ name: values.name, limits: limits(), budget: budget() });
        if (Object.keys(body).length === 0)
          throw new UsageError("key update needs at least one of --name, --rpm, --tpm, --clear-limits, --budget-usd, --clear-budget");
        return { method: "PATCH", path, body };
      }
      case "key list":
        return { method: "GET", path: `/admin/workspaces/${need("workspace id")}/keys` };
      case "key disable":
      case "key enable":
      case "key revoke": {
        const status = { disable: "disabled", enable: "active", revoke: "revoked" }[verb as "disable" | "enable" | "revoke"];
        return { method: "PATCH", path: `/admin/keys/${need("key id")}`, body: { status } };
      }
      case "user create":
        if (target !== undefined) throw new UsageError(`unexpected argument: ${target} (give the address with --email)`);
        if (!values.email) throw new UsageError("user create needs --email");
        return { method: "POST", path: "/admin/users", body: shape({ email: values.email, name: values.name, operator: values.operator === true }) };
      default:
        throw new UsageError(noun ? `unknown command: ${positionals.join(" ")}` : "");
    }
  })();
  return { call, json };
}
