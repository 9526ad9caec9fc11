import { chmodSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { adminTokenLine } from "./banner";
import { generateAdminToken, keepSecret, suppliedOrKept } from "./secret-file";

const freshDir = () => join(mkdtempSync(join(tmpdir(), "gw-secret-")), "data");

describe("secret files in the data folder", () => {
  it("when no secret is kept yet, then one is generated into a file only its user can read, in a folder only its user can list, with no temporary file left", () => {
    const dir = freshDir();
    const kept = keepSecret(dir, "admin-token", generateAdminToken);
    expect(kept).toMatchObject({ created: true, path: join(dir, "admin-token") });
    expect(kept.value).toMatch(/^gw_admin_[\w-]{32}$/);
    expect(statSync(kept.path).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(readFileSync(kept.path, "utf8")).toBe(`${kept.value}\n`);
    expect(readdirSync(dir)).toEqual(["admin-token"]);
  });

  it("when the gateway starts again, then it reads the same secret back and generates nothing", () => {
    const dir = freshDir();
    const first = keepSecret(dir, "internal-secret", () => "first-secret-0123456789");
    const again = keepSecret(dir, "internal-secret", () => {
      throw new Error("must not generate");
    });
    expect(again).toMatchObject({ value: first.value, created: false, tightened: false });
  });

  it("when another start linked its secret first, then this one uses that one rather than replacing it", () => {
    const dir = freshDir();
    // The other start's file appears between this start's look and its link.
    const kept = keepSecret(dir, "admin-token", () => {
      writeFileSync(join(dir, "admin-token"), "the-other-start-secret-0123\n", { mode: 0o600 });
      return "this-start-secret-0123456789";
    });
    expect(kept).toMatchObject({ value: "the-other-start-secret-0123", created: false });
    expect(readdirSync(dir)).toEqual(["admin-token"]);
  });

  it("when the kept file was made readable by others (a copy), then it is made 0600 again and reported", () => {
    const dir = freshDir();
    const first = keepSecret(dir, "admin-token", generateAdminToken);
    chmodSync(first.path, 0o644);
    expect(keepSecret(dir, "admin-token", generateAdminToken)).toMatchObject({ value: first.value, tightened: true });
    expect(statSync(first.path).mode & 0o777).toBe(0o600);
  });

  it("when the kept file holds no usable secret, then the start stops naming the file instead of replacing it", () => {
    const dir = freshDir();
    keepSecret(dir, "admin-token", generateAdminToken);
    writeFileSync(join(dir, "admin-token"), "short\n");
    expect(() => keepSecret(dir, "admin-token", generateAdminToken)).toThrow(`${join(dir, "admin-token")} does not hold a secret`);
    expect(readFileSync(join(dir, "admin-token"), "utf8")).toBe("short\n");
  });

  it("when the operator supplies the secret, then nothing is written and the banner does not show it", () => {
    const dir = freshDir();
    const supplied = "operator-supplied-token-0123456789";
    const secret = suppliedOrKept(supplied, dir, "admin-token", generateAdminToken);
    expect(secret).toEqual({ value: supplied, supplied: true });
    expect(() => readdirSync(dir)).toThrow(/ENOENT/);
    expect(adminTokenLine(secret)).not.toContain(supplied);
    const generated = suppliedOrKept(undefined, dir, "admin-token", generateAdminToken);
    expect(adminTokenLine(generated)).toContain(join(dir, "admin-token"));
    expect(adminTokenLine(generated)).not.toContain(generated.value);
  });
});
