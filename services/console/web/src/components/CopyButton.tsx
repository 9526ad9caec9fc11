import { useEffect, useId, useRef, useState } from "react";

/** Copies text with the Clipboard API (falls back to selecting the field so the person can copy it). */
export function CopyButton({ text, label = "Copy", fieldId }: { text: string; label?: string; fieldId?: string }) {
  const [state, setState] = useState<"idle" | "copied" | "failed">("idle");
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);
  return (
    <>
      <button
        type="button"
        className="btn btn-small"
        onClick={async () => {
          try {
            await navigator.clipboard.writeText(text);
            setState("copied");
          } catch {
            const field = fieldId ? document.getElementById(fieldId) : null;
            if (field instanceof HTMLInputElement || field instanceof HTMLTextAreaElement) field.select();
            setState("failed");
          }
          clearTimeout(timer.current);
          timer.current = setTimeout(() => setState("idle"), 4000);
        }}
      >
        {state === "copied" ? "Copied" : label}
      </button>
      <span className="sr-only" role="status" aria-live="polite">
        {state === "copied" ? "Copied to the clipboard" : state === "failed" ? "Could not copy; the text is selected, press Ctrl+C" : ""}
      </span>
      {state === "failed" && <span className="hint">Copy failed: select the text and copy it.</span>}
    </>
  );
}

/** A read-only value (a secret, a link) with a Copy button beside it. */
export function CopyField({ label, value }: { label: string; value: string }) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <div className="copy-row">
        <input id={id} className="input mono" readOnly value={value} onFocus={(e) => e.currentTarget.select()} spellCheck={false} />
        <CopyButton text={value} fieldId={id} />
      </div>
    </div>
  );
}
