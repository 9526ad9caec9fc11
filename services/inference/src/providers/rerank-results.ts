import { rerankDocumentText, type RerankRequest, type RerankResult } from "@gw/contracts";

export interface ScoredIndex {
  index: number;
  relevance_score: number;
}

/**
 * Puts a provider's scores in the public shape, whatever the provider did with them: ordered by
 * descending relevance (ties by input position, so the answer is stable), at most `top_n`, and with
 * the caller's own document text when `return_documents` is set. Undefined when an index does not
 * point into the request's documents: the answer is malformed.
 */
export function shapeRerankResults(scores: readonly ScoredIndex[], request: RerankRequest): RerankResult[] | undefined {
  const count = request.documents.length;
  if (scores.some((s) => !Number.isInteger(s.index) || s.index < 0 || s.index >= count)) return undefined;
  const ordered = [...scores].sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index);
  const bounded = request.top_n === undefined ? ordered : ordered.slice(0, request.top_n);
  return bounded.map(({ index, relevance_score }) => {
    const document = request.documents[index];
    return request.return_documents === true && document !== undefined
      ? { index, relevance_score, document: { text: rerankDocumentText(document) } }
      : { index, relevance_score };
  });
}
