import { parseArgs } from "node:util";

/** One CLI command: the admin API call it makes, from positional args and flags. */
export interface AdminCall {
  method: "GET" | "POST" | "PATCH";
  path: string;
  body?: Record<string, unknown>;
}

export class UsageError extends Error {
  override readonly name = "UsageError";
}

export const usage = `Usage: pnpm gw <command> [--json]

  workspace create <name> --plan plus|pro|enterprise [--models a,b*] [--tools webtool,serptool] [--rpm N] [--tpm N]
  workspace list
  workspace get <workspace-id>
  workspace update <workspace-id> [--name N] [--plan P] [--models ...] [--tools ...] [--rpm N] [--tpm N]
  workspace cancel <workspace-id>        subscription → canceled
  workspace activate <workspace-id>      subscription → active
  key create <workspace-id> [--name N] [--models ...] [--tools ...] [--rpm N] [--tpm N]
  key list <workspace-id>
  key disable|enable|revoke <key-id>

Environment: GATEWAY_ADMIN_URL (default http://127.0.0.1:8090), GATEWAY_ADMIN_TOKEN (required).`;

const options = {
  json: { type: "boolean" },
  plan: { type: "string" },
  name: { type: "string" },
  models: { type: "string" },
  tools: { type: "string" },
  rpm: { type: "string" },
  tpm: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

export function parseCommand(argv: string[]): { call: AdminCall; json: boolean } {
  let parsed;
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
  const list = (v: string | undefined) => (v === undefined ? undefined : v.split(",").map((s) => s.trim()).filter(Boolean));
  const int = (flag: string, v: string | undefined) => {
    if (v === undefined) return undefined;
    if (!/^\d+$/.test(v)) throw new UsageError(`--${flag} must be a whole number`);
    return Number(v);
  };
  const limits = () => {
    const rpm = int("rpm", values.rpm);
    const tpm = int("tpm", values.tpm);
    return rpm === undefined && tpm === undefined ? undefined : { requests_per_minute: rpm, tokens_per_minute: tpm };
  };
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
          body: shape({ name: target, plan: values.plan, models: list(values.models), tools: list(values.tools), limits: limits() }),
        };
      case "workspace list":
        return { method: "GET", path: "/admin/workspaces" };
      case "workspace get":
        return { method: "GET", path: `/admin/workspaces/${need("workspace id")}` };
      case "workspace update": {
        const path = `/admin/workspaces/${need("workspace id")}`;
        const body = shape({ name: values.name, plan: values.plan, models: list(values.models), tools: list(values.tools), limits: limits() });
        if (Object.keys(body).length === 0) throw new UsageError("workspace update needs at least one of --name, --plan, --models, --tools, --rpm, --tpm");
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
        return {
          method: "POST",
          path: `/admin/workspaces/${need("workspace id")}/keys`,
          body: shape({ name: values.name, models: list(values.models), tools: list(values.tools), limits: limits() }),
        };
      case "key list":
        return { method: "GET", path: `/admin/workspaces/${need("workspace id")}/keys` };
      case "key disable":
      case "key enable":
      case "key revoke": {
        const status = { disable: "disabled", enable: "active", revoke: "revoked" }[verb as "disable" | "enable" | "revoke"];
        return { method: "PATCH", path: `/admin/keys/${need("key id")}`, body: { status } };
      }
      default:
        throw new UsageError(noun ? `unknown command: ${positionals.join(" ")}` : "");
    }
  })();
  return { call, json };
}
