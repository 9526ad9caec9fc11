import { countTokens } from "./synthetic";

/**
 * Deterministic relevance for the fake rerankers: the cosine of the query's and the document's
 * sets of lower-cased words (letters and digits), so a document sharing more of the query's words
 * ranks higher and equal inputs always score the same. Scores lie in [0, 1].
 */
export function relevanceScore(query: string, document: string): number {
  const q = words(query);
  const d = words(document);
  if (q.size === 0 || d.size === 0) return 0;
  let shared = 0;
  for (const w of q) if (d.has(w)) shared++;
  return Math.round((shared / Math.sqrt(q.size * d.size)) * 1e8) / 1e8;
}

function words(text: string): Set<string> {
  return new Set(text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);
}

export interface Ranked {
  index: number;
  relevance_score: number;
}

/** Every document scored, best first (ties by input position), cut to `topN` when given. */
export function rankDocuments(query: string, documents: readonly string[], topN?: number): Ranked[] {
  const ranked = documents
    .map((doc, index) => ({ index, relevance_score: relevanceScore(query, doc) }))
    .sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index);
  return topN === undefined ? ranked : ranked.slice(0, topN);
}

/** Tokens a reranker reads: the query once per document plus each document. */
export function rerankTokens(query: string, documents: readonly string[]): number {
  return documents.reduce((n, doc) => n + countTokens(query) + countTokens(doc), 0);
}
