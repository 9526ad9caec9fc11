/**
 * Text as the ledger stores it: Postgres text cannot hold U+0000, and a client-chosen string (a
 * model name a refusal records) could, so ingest writes U+FFFD in its place rather than fail the
 * record's batch for ever. A query's filters and ids go through the same replacement, so asking for
 * the name a caller sent finds its records, and nothing a caller asks for reaches Postgres unstorable.
 */
export function storedText(text: string): string;
export function storedText(text: string | undefined): string | undefined;
export function storedText(text: string | undefined): string | undefined {
  return text?.includes("\u0000") ? text.replaceAll("\u0000", "\uFFFD") : text;
}
