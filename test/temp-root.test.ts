import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { makeTempRoot, nameTempRoot } from "./temp-root";

describe("the test run's temporary folder", () => {
  it("is named once per process: a second project's config gets the same folder, under the current tmpdir()", () => {
    const env: NodeJS.ProcessEnv = {};
    const first = nameTempRoot(env);
    expect(nameTempRoot(env)).toBe(first);
    expect(dirname(first)).toBe(tmpdir());
    expect(existsSync(first)).toBe(false);
  });

  it("is named anew when the name came from another process (a run started from within a test)", () => {
    const env: NodeJS.ProcessEnv = { GW_TEST_TEMP_ROOT: `${process.pid + 1} /somewhere/else` };
    const root = nameTempRoot(env);
    expect(root).not.toBe("/somewhere/else");
    expect(env.GW_TEST_TEMP_ROOT).toBe(`${process.pid} ${root}`);
  });

  it("is made by the setup and removed, with what the tests left in it, by its teardown", () => {
    const env: NodeJS.ProcessEnv = {};
    const root = nameTempRoot(env);
    const teardown = makeTempRoot(env);
    expect(existsSync(root)).toBe(true);
    mkdirSync(join(root, "gw-embedded-x", "pglite"), { recursive: true });
    writeFileSync(join(root, "gw-embedded-x", "pglite", "PG_VERSION"), "17");
    teardown();
    expect(existsSync(root)).toBe(false);
    teardown(); // a second project's teardown finds nothing to remove
  });

  it("is found again whole when the temporary folder's path holds spaces", () => {
    const env: NodeJS.ProcessEnv = { GW_TEST_TEMP_ROOT: `${process.pid} /tmp/my folder/gw-test-run-abc` };
    expect(nameTempRoot(env)).toBe("/tmp/my folder/gw-test-run-abc");
  });

  it("is refused by the setup when the config did not name one in this process", () => {
    expect(() => makeTempRoot({})).toThrow(/GW_TEST_TEMP_ROOT/);
    expect(() => makeTempRoot({ GW_TEST_TEMP_ROOT: `${process.pid + 1} /x` })).toThrow(/GW_TEST_TEMP_ROOT/);
  });

  it("is where tmpdir() points in a test worker", () => {
    expect(process.env.TMPDIR).toMatch(/gw-test-run-[0-9a-f]{12}$/);
    expect(tmpdir()).toBe(process.env.TMPDIR);
    expect(existsSync(tmpdir())).toBe(true);
  });
});
