import type { ReactNode } from "react";
import { fmtInt } from "../format";
import { messageOf } from "../api";

export function Loading({ label = "Loading", full = false }: { label?: string; full?: boolean }) {
  return (
    <div className={full ? "loading loading-full" : "loading"} role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" />
      <span>{label}…</span>
    </div>
  );
}

export function ErrorBox({ error, retry, title = "Something went wrong" }: { error: unknown; retry?: () => void; title?: string }) {
  return (
    <div className="alert alert-error" role="alert">
      <p>
        <strong>{title}.</strong> {messageOf(error)}
      </p>
      {retry && (
        <button type="button" className="btn btn-small" onClick={retry}>
          Try again
        </button>
      )}
    </div>
  );
}

/** A mutation's error, next to the control that caused it. */
export function InlineError({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <p className="field-error" role="alert">
      {messageOf(error)}
    </p>
  );
}

export function Empty({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty">
      <p className="empty-title">{title}</p>
      {children && <div className="empty-body">{children}</div>}
    </div>
  );
}

export function Notice({ children, tone = "info" }: { children: ReactNode; tone?: "info" | "warning" | "success" }) {
  return <div className={`alert alert-${tone}`}>{children}</div>;
}

/** The foot of a cursor-paged table: how many are shown, and a button for the next page. */
export function LoadMore({
  shown,
  noun,
  page,
}: {
  shown: number;
  noun: string;
  page: { hasNextPage: boolean; isFetchingNextPage: boolean; isFetchNextPageError: boolean; error: unknown; fetchNextPage: () => Promise<unknown> };
}) {
  return (
    <>
      <div className="load-more">
        <p className="subtle" aria-live="polite">
          {fmtInt(shown)} {noun}
          {shown === 1 ? "" : "s"} shown
        </p>
        {page.hasNextPage && (
          <button type="button" className="btn" onClick={() => void page.fetchNextPage()} disabled={page.isFetchingNextPage}>
            {page.isFetchingNextPage ? "Loading…" : "Load more"}
          </button>
        )}
      </div>
      {page.isFetchNextPageError && <ErrorBox error={page.error} />}
    </>
  );
}
