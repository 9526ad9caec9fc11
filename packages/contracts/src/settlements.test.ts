import { describe, expect, it } from "vitest";
import { MAX_SETTLEMENT_BATCH, settlementBatchId, settlementsOf, TokenSettlements, type TokenSettlement } from "./bus";

const settlement = (n: number): TokenSettlement => ({
  job_id: `job_${n}`,
  ticket: { workspace_id: "ws_1", key_id: "key_1", bucket: 7, tokens: 100 + n },
  used: n,
});

describe("limits.settle messages", () => {
  it("when one settlement comes alone (the form jobs sent before), then it is read as a list of one", () => {
    const message = TokenSettlements.parse(settlement(1));
    expect(settlementsOf(message)).toEqual([settlement(1)]);
  });

  it("when settlements come together, then each is read in order, and unknown fields are dropped", () => {
    const message = TokenSettlements.parse({ settlements: [settlement(1), { ...settlement(2), extra: true }], other: 1 });
    expect(settlementsOf(message)).toEqual([settlement(1), settlement(2)]);
  });

  it("when a group is empty, too large or holds a bad settlement, then the message is refused", () => {
    expect(TokenSettlements.safeParse({ settlements: [] }).success).toBe(false);
    const many = Array.from({ length: MAX_SETTLEMENT_BATCH + 1 }, (_, i) => settlement(i));
    expect(TokenSettlements.safeParse({ settlements: many }).success).toBe(false);
    expect(TokenSettlements.safeParse({ settlements: many.slice(1) }).success).toBe(true);
    expect(TokenSettlements.safeParse({ settlements: [settlement(1), { ...settlement(2), used: -1 }] }).success).toBe(false);
    expect(TokenSettlements.safeParse({ settlements: [{ ...settlement(1), job_id: "x" }] }).success).toBe(false);
  });

  it("when a group is sent again, then it has the same message id; a single settlement keeps its job's id", () => {
    expect(settlementBatchId([settlement(1)])).toBe("job_1");
    expect(settlementBatchId([settlement(1), settlement(2), settlement(3)])).toBe("job_1+3");
    expect(settlementBatchId([settlement(1), settlement(2), settlement(3)])).toBe(settlementBatchId([settlement(1), settlement(2), settlement(3)]));
    expect(settlementBatchId([settlement(2), settlement(3)])).not.toBe(settlementBatchId([settlement(1), settlement(2), settlement(3)]));
  });
});
