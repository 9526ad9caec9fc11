/**
 * The message id of items sent together on a JetStream subject: one item's own id alone, or the
 * first one's and the count, so the same group sent again is dropped by the stream's dedupe.
 */
export function groupMessageId(ids: { first: string; count: number }): string {
  return ids.count === 1 ? ids.first : `${ids.first}+${ids.count}`;
}
