import type { UsageRecord } from "@gw/contracts";
import { describe, expect, it } from "vitest";
import type { Pricer } from "../pricing";
import { dayOf, toLedgerRow } from "./ledger-row";

const base: UsageRecord = {
  request_id: "req_1",
  started_at: Date.UTC(2025, 0, 2, 23, 59, 59, 999),
  duration_ms: 10,
  workspace_id: "ws_1",
  key_id: "key_1",
  route: "/v1/chat/completions",
  model: "gpt-test",
  status: 200,
  stream: false,
};
const priced: Pricer = {
  price: () => ({
    cost_usd: "0.000250000000",
    price_version: "config:abc",
    lines: [{ item: "input_tokens", units: 100, unit: "1M tokens", unit_price_usd: "2.5", amount_usd: "0.00025" }],
  }),
};

describe("when a record is prepared for the ledger", () => {
  it("then it carries its price, its partition's day and what the statement bills it under", () => {
    const { row, pricingError } = toLedgerRow(base, priced);
    expect(pricingError).toBeUndefined();
    expect(row).toMatchObject({ cost: "0.000250000000", priceVersion: "config:abc", day: "20250102", kind: "model", name: "gpt-test" });
    expect(row.record).toBe(base); // a clean record is not copied
    const tool = toLedgerRow({ ...base, model: undefined, route: "/v1/tools/serptool/search" }, priced).row;
    expect([tool.kind, tool.name]).toEqual(["tool", "serptool"]);
  });

  it("then a pricer that throws or answers something that is not a decimal leaves it unpriced, not stuck", () => {
    const throwing: Pricer = {
      price: () => {
        throw new Error("boom");
      },
    };
    const sloppy: Pricer = { price: () => ({ cost_usd: "1e-5", price_version: "v", lines: [] }) };
    for (const pricer of [throwing, sloppy]) {
      const { row, pricingError } = toLedgerRow(base, pricer);
      expect(pricingError).toBeInstanceOf(Error);
      expect(row).toMatchObject({ cost: null, priceVersion: null, lines: [] });
    }
  });

  it("then a NUL in a name becomes U+FFFD, and day names follow UTC", () => {
    const { row } = toLedgerRow({ ...base, model: "a\u0000b", outcome: { provider: "p\u0000" } }, priced);
    expect([row.record.model, row.record.outcome?.provider, row.name]).toEqual(["a\uFFFDb", "p\uFFFD", "a\uFFFDb"]);
    expect(dayOf(Date.UTC(2025, 11, 31, 23, 59))).toBe("20251231");
    expect(dayOf(Date.UTC(2026, 0, 1))).toBe("20260101");
  });
});
