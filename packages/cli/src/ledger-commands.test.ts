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

/** The query of a parsed command's path, as the API would read it. */
const query = (line: string) => Object.fromEntries(new URL(parseCommand(args(line)).call.path, "http://x").searchParams);

describe("parseCommand: usage", () => {
  it("when usage has no flags, then it GETs /admin/usage with no query and prints a table", () => {
    expect(parseCommand(args("usage"))).toEqual({ call: { method: "GET", path: "/admin/usage" }, json: false, output: "usage" });
  });

  it("when usage has every filter, then each goes under the API's parameter name", () => {
    expect(
      query("usage --workspace ws_1 --key key_2 --model gpt-4o-mini --from 2026-05-01 --to 2026-05-31T23:59:59Z --group-by day,model --tz Europe/Paris"),
    ).toEqual({
      workspace_id: "ws_1",
      key_id: "key_2",
      model: "gpt-4o-mini",
      from: "2026-05-01",
      to: "2026-05-31T23:59:59Z",
      group_by: "day,model",
      tz: "Europe/Paris",
    });
  });

  it("when --group-by has spaces or empty entries, then one trimmed list is sent", () => {
    const { call } = parseCommand(["usage", "--group-by", " hour, provider,,status "]);
    expect(new URL(call.path, "http://x").searchParams.get("group_by")).toBe("hour,provider,status");
  });

  it("when a filter value holds URL-significant characters, then it is encoded", () => {
    const { call } = parseCommand(["usage", "--model", "a&b=c #d"]);
    expect(call.path).toBe("/admin/usage?model=a%26b%3Dc+%23d");
    expect(new URL(call.path, "http://x").searchParams.get("model")).toBe("a&b=c #d");
  });

  it("when --json is given, then json is true and the output kind stays", () => {
    expect(parseCommand(args("--json usage --group-by month"))).toMatchObject({ json: true, output: "usage" });
  });
});

describe("parseCommand: logs", () => {
  it("when logs has filters, then it GETs /admin/logs with them", () => {
    expect(parseCommand(args("logs --workspace ws_1 --status 429 --route /v1/chat/completions --limit 50 --cursor abc --from 2026-05-01T00:00+02:00"))).toEqual(
      {
        call: {
          method: "GET",
          path: "/admin/logs?workspace_id=ws_1&from=2026-05-01T00%3A00%2B02%3A00&status=429&route=%2Fv1%2Fchat%2Fcompletions&limit=50&cursor=abc",
        },
        json: false,
        output: "logs",
      },
    );
  });

  it("when logs is given a request id, then it GETs that record, encoded into one segment", () => {
    expect(parseCommand(args("logs req_123"))).toEqual({ call: { method: "GET", path: "/admin/logs/req_123" }, json: false, output: "log" });
    expect(parseCommand(["logs", "../x?y"]).call.path).toBe("/admin/logs/..%2Fx%3Fy");
  });
});

describe("parseCommand: statement", () => {
  it("when statement has a workspace and a month, then it GETs the workspace's statement", () => {
    expect(parseCommand(args("statement ws_1 --month 2026-05"))).toEqual({
      call: { method: "GET", path: "/admin/workspaces/ws_1/statement?month=2026-05" },
      json: false,
      output: "statement",
    });
  });

  it("when --csv is given, then format=csv is asked for and the body is printed as is", () => {
    expect(parseCommand(args("statement ws_1 --csv --month 2026-12"))).toEqual({
      call: { method: "GET", path: "/admin/workspaces/ws_1/statement?month=2026-12&format=csv" },
      json: false,
      output: "csv",
    });
  });
});

describe("parseCommand: ledger usage errors", () => {
  it("when a value is malformed, then the usage error names the flag", () => {
    const cases: [string, string][] = [
      ["usage --from yesterday", "--from"],
      ["usage --to 2026-13-45", "--to"],
      ["usage --from 2026-05-01T25:00:00Z", "--from"],
      ["usage --group-by week", "week"],
      ["usage --group-by ,", "--group-by"],
      ["usage --tz Mars/Olympus", "Mars/Olympus"],
      ["logs --limit 0", "--limit"],
      ["logs --limit ten", "--limit"],
      ["statement ws_1 --month 2026-5", "--month"],
      ["statement ws_1 --month 2026-13", "--month"],
    ];
    for (const [line, needle] of cases) expect(usageError(args(line)).message, line).toContain(needle);
    expect(usageError(["usage", "--model="]).message).toContain("--model must not be empty");
  });

  it("when a flag belongs to another command, then it is refused rather than ignored", () => {
    expect(usageError(args("usage --limit 5")).message).toBe("usage does not take --limit");
    expect(usageError(args("logs --group-by day")).message).toBe("logs does not take --group-by");
    expect(usageError(args("statement ws_1 --month 2026-05 --workspace ws_2")).message).toBe("statement does not take --workspace");
    expect(usageError(args("usage --csv")).message).toBe("usage does not take --csv");
    expect(usageError(args("workspace list --month 2026-05")).message).toMatch(/month/);
    expect(usageError(args("usage --plan pro")).message).toMatch(/plan/);
  });

  it("when a command lacks what it needs or has too much, then the usage error says so", () => {
    expect(usageError(args("statement --month 2026-05")).message).toContain("workspace id");
    expect(usageError(args("statement ws_1")).message).toContain("--month");
    expect(usageError(args("statement ws_1 --month 2026-05 --csv --json")).message).toContain("cannot be combined");
    expect(usageError(args("logs req_1 --status 500")).message).toContain("--status");
    expect(usageError(args("logs req_1 req_2")).message).toContain("req_2");
    expect(usageError(args("usage ws_1")).message).toContain("ws_1");
    expect(usageError(args("usage --help")).message).toBe("");
  });
});
