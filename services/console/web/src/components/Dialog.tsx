import { type ReactNode, useEffect, useId, useRef, useState } from "react";
import { InlineError } from "./States";

/**
 * A modal dialog on the native <dialog> (showModal: the page behind is inert, focus moves in and
 * Escape closes). Mounted when open; on close focus returns to what opened it.
 */
export function Dialog({
  title,
  onClose,
  children,
  footer,
  describedBy,
  role = "dialog",
}: {
  title: string;
  onClose: () => void;
  children: ReactNode;
  footer?: ReactNode;
  describedBy?: string;
  role?: "dialog" | "alertdialog";
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const close = useRef(onClose);
  close.current = onClose;

  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    if (!dialog.open) dialog.showModal();
    // Focus the first field, else the first button after the close button, else the dialog itself.
    const first =
      dialog.querySelector<HTMLElement>("[autofocus], input:not([type=hidden]):not([readonly]), select, textarea") ??
      dialog.querySelector<HTMLElement>(".dialog-body button, .dialog-footer button") ??
      dialog;
    first.focus();
    return () => {
      if (dialog.open) dialog.close();
      // Back to what opened it; if that is gone (a revoked key's row), to the page's content.
      if (opener && document.contains(opener)) opener.focus();
      else document.getElementById("main")?.focus();
    };
  }, []);

  return (
    <dialog
      ref={ref}
      className="dialog"
      role={role}
      aria-modal="true"
      aria-labelledby={titleId}
      aria-describedby={describedBy}
      tabIndex={-1}
      onCancel={(event) => {
        event.preventDefault();
        close.current();
      }}
    >
      <div className="dialog-header">
        <h2 id={titleId}>{title}</h2>
        <button type="button" className="btn btn-ghost btn-icon" aria-label="Close" onClick={() => close.current()}>
          <span aria-hidden="true">×</span>
        </button>
      </div>
      <div className="dialog-body">{children}</div>
      {footer && <div className="dialog-footer">{footer}</div>}
    </dialog>
  );
}

/** A button that asks before doing something that cannot be undone. */
export function ConfirmButton({
  label,
  title,
  message,
  confirmLabel,
  onConfirm,
  danger = false,
  className,
  accessibleLabel,
}: {
  label: string;
  title: string;
  message: ReactNode;
  confirmLabel: string;
  onConfirm: () => Promise<unknown>;
  danger?: boolean;
  className?: string;
  /** A fuller name for the button where its visible label is short ("Revoke" → "Revoke key ci-runner"). */
  accessibleLabel?: string;
}) {
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const messageId = useId();
  return (
    <>
      <button
        type="button"
        className={className ?? `btn btn-small ${danger ? "btn-danger-outline" : ""}`}
        aria-label={accessibleLabel}
        onClick={() => {
          setError(null);
          setOpen(true);
        }}
      >
        {label}
      </button>
      {open && (
        <Dialog
          title={title}
          role="alertdialog"
          describedBy={messageId}
          onClose={() => !busy && setOpen(false)}
          footer={
            <>
              <button type="button" className="btn" onClick={() => setOpen(false)} disabled={busy}>
                Cancel
              </button>
              <button
                type="button"
                className={danger ? "btn btn-danger" : "btn btn-primary"}
                disabled={busy}
                onClick={async () => {
                  setBusy(true);
                  setError(null);
                  try {
                    await onConfirm();
                    setOpen(false);
                  } catch (err) {
                    setError(err);
                  } finally {
                    setBusy(false);
                  }
                }}
              >
                {busy ? "Working…" : confirmLabel}
              </button>
            </>
          }
        >
          <div id={messageId}>{message}</div>
          <InlineError error={error} />
        </Dialog>
      )}
    </>
  );
}
