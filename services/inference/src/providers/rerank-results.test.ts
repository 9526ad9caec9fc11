import type { RerankRequest } from "@gw/contracts";
import { describe, expect, it } from "vitest";
import { shapeRerankResults } from "./rerank-results";

const request = (extra: Partial<RerankRequest> = {}): RerankRequest => ({
  model: "m",
  query: "q",
  documents: ["zero", { text: "one" }, "two"],
  ...extra,
});

describe("shapeRerankResults", () => {
  it("when scores come in any order, then they are best first, ties by input position", () => {
    const scores = [
      { index: 2, relevance_score: 0.5 },
      { index: 0, relevance_score: 0.5 },
      { index: 1, relevance_score: 0.9 },
    ];
    expect(shapeRerankResults(scores, request())?.map((r) => r.index)).toEqual([1, 0, 2]);
  });

  it("when top_n is smaller than the results, then only the best n are kept", () => {
    const scores = [0.1, 0.3, 0.2].map((relevance_score, index) => ({ index, relevance_score }));
    expect(shapeRerankResults(scores, request({ top_n: 2 }))).toEqual([
      { index: 1, relevance_score: 0.3 },
      { index: 2, relevance_score: 0.2 },
    ]);
  });

  it("when return_documents is set, then strings and {text} documents both come back as {text}", () => {
    const scores = [0.1, 0.3].map((relevance_score, index) => ({ index, relevance_score }));
    expect(shapeRerankResults(scores, request({ return_documents: true }))).toEqual([
      { index: 1, relevance_score: 0.3, document: { text: "one" } },
      { index: 0, relevance_score: 0.1, document: { text: "zero" } },
    ]);
  });

  it("when an index is out of range or not an integer, then the answer is refused (undefined)", () => {
    expect(shapeRerankResults([{ index: 3, relevance_score: 1 }], request())).toBeUndefined();
    expect(shapeRerankResults([{ index: -1, relevance_score: 1 }], request())).toBeUndefined();
    expect(shapeRerankResults([{ index: 0.5, relevance_score: 1 }], request())).toBeUndefined();
  });
});
