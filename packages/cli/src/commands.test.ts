import { describe, expect, it } from "vitest";
import { parseCommand, UsageError } from "./commands";

const args = (line: string) => line.split(" ").filter(Boolean);

function usageError(argv: string[]): UsageError {
  try {
    parseCommand(argv);
  } catch (err) {
    if (err instanceof UsageError) return err;
    throw err;
  }
  throw new Error(`expected a usage error for: ${argv.join(" ")}`);
}

describe("parseCommand: workspace commands", () => {
  it("when workspace create has a name and a plan, then it POSTs them to /admin/workspaces", () => {
    expect(parseCommand(args("workspace create acme --plan pro"))).toEqual({
      call: { method: "POST", path: "/admin/workspaces", body: { name: "acme", plan: "pro" } },
      json: false,
    });
  });

  it("when workspace create has lists and limits, then they are split, trimmed and typed", () => {
    const { call } = parseCommand([
      "workspace",
      "create",
      "acme corp",
      "--plan",
      "enterprise",
      "--models",
      "gpt-4o-mini, claude-*,,",
      "--tools",
      "webtool,serptool",
      "--rpm",
      "120",
      "--tpm",
      "50000",
    ]);
    expect(call).toEqual({
      method: "POST",
      path: "/admin/workspaces",
      body: {
        name: "acme corp",
        plan: "enterprise",
        models: ["gpt-4o-mini", "claude-*"],
        tools: ["webtool", "serptool"],
        limits: { requests_per_minute: 120, tokens_per_minute: 50000 },
      },
    });
  });

  it("when only --rpm is given, then limits carries only requests_per_minute on the wire", () => {
    const { call } = parseCommand(args("workspace create acme --plan plus --rpm 5"));
    expect(JSON.parse(JSON.stringify(call.body))).toEqual({ name: "acme", plan: "plus", limits: { requests_per_minute: 5 } });
  });

  it("when workspace list or get is given, then it GETs the right path", () => {
    expect(parseCommand(args("workspace list")).call).toEqual({ method: "GET", path: "/admin/workspaces" });
    expect(parseCommand(args("workspace get ws_123")).call).toEqual({ method: "GET", path: "/admin/workspaces/ws_123" });
  });

  it("when workspace update is given flags, then it PATCHes only those fields", () => {
    expect(parseCommand(args("workspace update ws_1 --plan pro --tools serptool")).call).toEqual({
      method: "PATCH",
      path: "/admin/workspaces/ws_1",
      body: { plan: "pro", tools: ["serptool"] },
    });
    expect(parseCommand(args("workspace update ws_1 --name renamed --tpm 7")).call.body).toEqual({
      name: "renamed",
      limits: { requests_per_minute: undefined, tokens_per_minute: 7 },
    });
  });

  it("when workspace cancel or activate is given, then it PATCHes the subscription", () => {
    expect(parseCommand(args("workspace cancel ws_1")).call).toEqual({
      method: "PATCH",
      path: "/admin/workspaces/ws_1",
      body: { subscription: "canceled" },
    });
    expect(parseCommand(args("workspace activate ws_1")).call.body).toEqual({ subscription: "active" });
  });

  it("when an id holds URL-significant characters, then it is encoded into one path segment", () => {
    expect(parseCommand(["workspace", "get", "../keys?x=1"]).call.path).toBe("/admin/workspaces/..%2Fkeys%3Fx%3D1");
  });

  it("when --json is given anywhere, then json is true", () => {
    expect(parseCommand(args("workspace list --json")).json).toBe(true);
    expect(parseCommand(args("--json key list ws_1")).json).toBe(true);
  });
});

describe("parseCommand: key commands", () => {
  it("when key create is given, then it POSTs to the workspace's keys with the narrowing flags", () => {
    expect(parseCommand(args("key create ws_9 --name ci --models gpt-4o-mini --tools webtool --rpm 10")).call).toEqual({
      method: "POST",
      path: "/admin/workspaces/ws_9/keys",
      body: { name: "ci", models: ["gpt-4o-mini"], tools: ["webtool"], limits: { requests_per_minute: 10 } },
    });
    expect(parseCommand(args("key create ws_9")).call).toEqual({ method: "POST", path: "/admin/workspaces/ws_9/keys", body: {} });
  });

  it("when key update is given --name, --rpm or --tpm, then it PATCHes the key with only those fields", () => {
    expect(parseCommand(args("key update key_7 --name renamed")).call).toEqual({
      method: "PATCH",
      path: "/admin/keys/key_7",
      body: { name: "renamed" },
    });
    const { call } = parseCommand(args("key update key_7 --rpm 30 --tpm 9000"));
    expect(call).toEqual({
      method: "PATCH",
      path: "/admin/keys/key_7",
      body: { limits: { requests_per_minute: 30, tokens_per_minute: 9000 } },
    });
    // only the given limit goes on the wire: the PATCH replaces the key's whole limits object
    expect(JSON.parse(JSON.stringify(parseCommand(args("key update key_7 --name n --tpm 5")).call.body))).toEqual({
      name: "n",
      limits: { tokens_per_minute: 5 },
    });
  });

  it("when --clear-limits is given to an update, then limits is sent as {} to clear the overrides", () => {
    expect(parseCommand(args("key update key_7 --clear-limits")).call.body).toEqual({ limits: {} });
    expect(parseCommand(args("workspace update ws_1 --clear-limits --plan pro")).call.body).toEqual({ plan: "pro", limits: {} });
  });

  it("when key list is given, then it GETs the workspace's keys", () => {
    expect(parseCommand(args("key list ws_9")).call).toEqual({ method: "GET", path: "/admin/workspaces/ws_9/keys" });
  });

  it("when key disable, enable or revoke is given, then it PATCHes the key's status", () => {
    const cases: [string, string][] = [
      ["disable", "disabled"],
      ["enable", "active"],
      ["revoke", "revoked"],
    ];
    for (const [verb, status] of cases) {
      expect(parseCommand(args(`key ${verb} key_42`)).call, verb).toEqual({
        method: "PATCH",
        path: "/admin/keys/key_42",
        body: { status },
      });
    }
  });
});

describe("parseCommand: usage errors", () => {
  it("when a command lacks its id or name, then the usage error says what is missing", () => {
    const cases: [string, RegExp][] = [
      ["workspace create --plan pro", /name/],
      ["workspace get", /workspace id/],
      ["workspace update", /workspace id/],
      ["workspace cancel", /workspace id/],
      ["workspace activate", /workspace id/],
      ["key create", /workspace id/],
      ["key list", /workspace id/],
      ["key revoke", /key id/],
      ["key disable", /key id/],
      ["key enable", /key id/],
      ["key update", /key id/],
    ];
    for (const [line, message] of cases) expect(usageError(args(line)).message, line).toMatch(message);
  });

  it("when key update has no field to change, then the usage error lists the flags it takes", () => {
    expect(usageError(args("key update key_1")).message).toMatch(/--name, --rpm, --tpm, --clear-limits/);
  });

  it("when key update is given a flag a key cannot change, then the usage error names it", () => {
    expect(usageError(args("key update key_1 --name x --models gpt-*")).message).toContain("--models");
    expect(usageError(args("key update key_1 --tools webtool")).message).toContain("--tools");
    expect(usageError(args("key update key_1 --plan pro")).message).toContain("--plan");
  });

  it("when --clear-limits is combined with --rpm or --tpm, or given to a create, then it is a usage error", () => {
    expect(usageError(args("key update key_1 --clear-limits --rpm 5")).message).toContain("--clear-limits");
    expect(usageError(args("workspace update ws_1 --clear-limits --tpm 5")).message).toContain("--clear-limits");
    expect(usageError(args("key create ws_1 --clear-limits")).message).toContain("--clear-limits");
  });

  it("when key update has a bad --rpm or --tpm, then the usage error names the flag", () => {
    expect(usageError(args("key update key_1 --rpm 1.5")).message).toContain("--rpm");
    expect(usageError(args("key update key_1 --tpm x")).message).toContain("--tpm");
  });

  it("when workspace create has no --plan, then the usage error names --plan", () => {
    expect(usageError(args("workspace create acme")).message).toContain("--plan");
  });

  it("when --rpm or --tpm is not a whole number, then the usage error names the flag", () => {
    for (const bad of ["abc", "1.5", "1e3", "-5", "10x", ""]) {
      const err = usageError(["workspace", "create", "acme", "--plan", "pro", `--rpm=${bad}`]);
      expect(err.message, bad).toContain("--rpm");
    }
    expect(usageError(args("key create ws_1 --tpm ten")).message).toContain("--tpm");
  });

  it("when an unknown flag, an extra argument or an unknown command is given, then it is a usage error", () => {
    expect(usageError(args("workspace list --bogus")).message).toMatch(/bogus/);
    expect(usageError(args("key revoke key_1 key_2")).message).toContain("key_2");
    expect(usageError(args("workspace delete ws_1")).message).toContain("workspace delete");
    expect(usageError(args("key")).message).toMatch(/unknown command/);
  });

  it("when no command or --help is given, then it is a usage error with no message (just the usage text)", () => {
    expect(usageError([]).message).toBe("");
    expect(usageError(["--help"]).message).toBe("");
    expect(usageError(args("workspace list -h")).message).toBe("");
  });

  it("when a string flag has no value, then it is a usage error", () => {
    expect(usageError(args("workspace create acme --plan")).name).toBe("UsageError");
  });
});

describe("parseCommand: budgets and time zones", () => {
  it("when a workspace is created with a zone and a budget, then both are sent, the mode hard unless told", () => {
    expect(parseCommand(args("workspace create acme --plan pro --timezone Europe/Berlin --budget-usd 50 --budget-alert 80")).call.body).toEqual({
      name: "acme",
      plan: "pro",
      timezone: "Europe/Berlin",
      budget: { monthly_usd: 50, mode: "hard", alert_at_percent: 80 },
    });
    expect(parseCommand(args("key create ws_1 --budget-usd 12.50 --budget-mode soft")).call.body).toEqual({
      budget: { monthly_usd: 12.5, mode: "soft" },
    });
  });

  it("when --clear-budget is given to an update, then budget is sent as null", () => {
    expect(parseCommand(args("workspace update ws_1 --clear-budget")).call.body).toEqual({ budget: null });
    expect(parseCommand(args("key update key_1 --clear-budget --name n")).call.body).toEqual({ name: "n", budget: null });
  });

  it.each([
    ["workspace update ws_1 --budget-usd 5 --clear-budget", /cannot be combined/],
    ["workspace create a --plan pro --clear-budget", /only for workspace update and key update/],
    ["workspace update ws_1 --budget-usd 5.555", /amount in dollars/],
    ["workspace update ws_1 --budget-usd -5", /amount in dollars|argument/],
    ["workspace update ws_1 --budget-usd 5 --budget-mode strict", /hard or soft/],
    ["workspace update ws_1 --budget-mode soft", /need --budget-usd/],
    ["key update key_1 --timezone UTC", /does not take --timezone/],
    ["key create ws_1 --timezone UTC", /does not take --timezone/],
  ])("when the command is `%s`, then it is a usage error", (line, message) => {
    expect(usageError(args(line)).message).toMatch(message);
  });
});

describe("parseCommand: user create", () => {
  it("when user create has --email and --operator, then it POSTs them to /admin/users", () => {
    expect(parseCommand(args("user create --email ops@example.com --operator")).call).toEqual({
      method: "POST",
      path: "/admin/users",
      body: { email: "ops@example.com", operator: true },
    });
    expect(parseCommand(args("user create --email dev@example.com --name Dev")).call.body).toEqual({ email: "dev@example.com", name: "Dev", operator: false });
  });

  it("when user create lacks --email or names the address as an argument, then a usage error says how", () => {
    expect(() => parseCommand(args("user create"))).toThrow(/--email/);
    expect(() => parseCommand(args("user create ops@example.com"))).toThrow(/--email/);
  });
});
