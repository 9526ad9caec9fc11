import { describe, expect, it } from "vitest";
import { createTransactionGuard } from "./transaction-guard";

describe("createTransactionGuard", () => {
  it("when a transaction ends while another is still open, then the open one still refuses nested calls", async () => {
    const guard = createTransactionGuard();
    let releaseFirst = () => {};
    const first = guard.run(async () => {
      await new Promise<void>((resolve) => (releaseFirst = resolve));
      expect(() => guard.assertOutside("query")).toThrow(/inside db.transaction/);
      return "first";
    });
    await guard.run(async () => {
      expect(() => guard.assertOutside("exec")).toThrow(/inside db.transaction/);
    });
    releaseFirst();
    await expect(first).resolves.toBe("first");
  });

  it("when every transaction has ended, then calls pass again, and a new transaction is guarded anew", async () => {
    const guard = createTransactionGuard();
    await guard.run(async () => undefined);
    expect(() => guard.assertOutside("query")).not.toThrow();
    await expect(
      guard.run(async () => {
        guard.assertOutside("transaction");
      }),
    ).rejects.toThrow(/db.transaction\(\) called inside db.transaction\(\)/);
    expect(() => guard.assertOutside("query")).not.toThrow();
  });
});
