import type { ReactNode } from "react";
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
