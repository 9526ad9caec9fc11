import { useMutation, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, type ReactNode, useId, useState } from "react";
import { patch, post, wsPath } from "../api";
import { CopyField } from "../components/CopyButton";
import { ConfirmButton, Dialog } from "../components/Dialog";
import { BudgetFields, budgetDraft, budgetOf, describeBudget, describeLimits, LimitsFields, limitsDraft, limitsOf } from "../components/Forms";
import { Empty, ErrorBox, InlineError, Loading, Notice } from "../components/States";
import { fmtDate } from "../format";
import { keysKey, useKeys } from "../hooks";
import { useSession } from "../session";
import type { ApiKey, Budget, Limits } from "../types";
import { usePageTitle, useWorkspace } from "../workspace";
import { scrollable } from "../components/scrollable";

type CreatedKey = ApiKey & { key: string };

/** API keys: list, create (secret shown once), disable, enable, revoke, edit limits and budget. */
export function Keys() {
  const { workspace, ws, can, tz } = useWorkspace();
  const session = useSession();
  usePageTitle(`Keys · ${workspace.name}`);
  const keys = useKeys();
  const client = useQueryClient();
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<CreatedKey | null>(null);
  const [editing, setEditing] = useState<ApiKey | null>(null);
  const [rowError, setRowError] = useState<{ id: string; error: unknown } | null>(null);

  const mayManage = (key: ApiKey) => can("keys.manage") || (can("keys.manage_own") && key.created_by !== null && key.created_by === session.user.id);
  const refresh = () => client.invalidateQueries({ queryKey: keysKey(ws) });
  const setStatus = useMutation({
    mutationFn: ({ key, status }: { key: ApiKey; status: ApiKey["status"] }) => patch<ApiKey>(wsPath(ws, `/keys/${encodeURIComponent(key.id)}`), { status }),
    onMutate: () => setRowError(null),
    onError: (error, { key }) => setRowError({ id: key.id, error }),
    onSettled: refresh,
  });

  const list = keys.data ?? [];
  const active = list.filter((k) => k.status !== "revoked");
  const revoked = list.filter((k) => k.status === "revoked");

  return (
    <section className="page" aria-labelledby="keys-title">
      <div className="page-header">
        <div>
          <h1 id="keys-title">API keys</h1>
          <p className="subtle">Keys call the gateway's API on behalf of {workspace.name}. A key's secret is shown once, when it is created.</p>
        </div>
        {can("keys.create") && (
          <button type="button" className="btn btn-primary" onClick={() => setCreating(true)}>
            Create key
          </button>
        )}
      </div>
      {!can("keys.manage") && can("keys.manage_own") && (
        <Notice>
          <p>Your role may manage the keys you created; other keys are read-only for you.</p>
        </Notice>
      )}

      {keys.isPending ? (
        <Loading label="Loading keys" />
      ) : keys.isError ? (
        <ErrorBox error={keys.error} retry={() => void keys.refetch()} />
      ) : list.length === 0 ? (
        <Empty title="No keys yet">
          <p>{can("keys.create") ? "Create a key, then call the API with it as a bearer token." : "Nobody has created a key in this workspace yet."}</p>
        </Empty>
      ) : (
        <>
          <KeyTable
            keys={active}
            caption="Active and disabled keys"
            tz={tz}
            actions={(key) =>
              mayManage(key) ? (
                <>
                  <div className="row-actions">
                    <button type="button" className="btn btn-small" aria-label={`Edit ${nameOf(key)}`} onClick={() => setEditing(key)}>
                      Edit
                    </button>
                    {key.status === "active" ? (
                      <button
                        type="button"
                        className="btn btn-small"
                        aria-label={`Disable ${nameOf(key)}`}
                        disabled={setStatus.isPending}
                        onClick={() => setStatus.mutate({ key, status: "disabled" })}
                      >
                        Disable
                      </button>
                    ) : (
                      <button
                        type="button"
                        className="btn btn-small"
                        aria-label={`Enable ${nameOf(key)}`}
                        disabled={setStatus.isPending}
                        onClick={() => setStatus.mutate({ key, status: "active" })}
                      >
                        Enable
                      </button>
                    )}
                    <ConfirmButton
                      label="Revoke"
                      accessibleLabel={`Revoke ${nameOf(key)}`}
                      title={`Revoke ${nameOf(key)}?`}
                      message={
                        <p>
                          Requests with <span className="mono">{key.prefix}…</span> will be refused from now on. A revoked key cannot be enabled again.
                        </p>
                      }
                      confirmLabel="Revoke key"
                      danger
                      onConfirm={async () => {
                        await patch(wsPath(ws, `/keys/${encodeURIComponent(key.id)}`), { status: "revoked" });
                        await refresh();
                      }}
                    />
                  </div>
                  {rowError?.id === key.id && <InlineError error={rowError.error} />}
                </>
              ) : (
                <span className="subtle">—</span>
              )
            }
          />
          {revoked.length > 0 && (
            <details className="card">
              <summary>
                Revoked keys <span className="badge">{revoked.length}</span>
              </summary>
              <KeyTable keys={revoked} caption="Revoked keys" tz={tz} />
            </details>
          )}
        </>
      )}

      {creating && (
        <CreateKeyDialog
          onClose={() => setCreating(false)}
          onCreated={(key) => {
            setCreating(false);
            setCreated(key);
            void refresh();
          }}
        />
      )}
      {created && <SecretDialog created={created} onClose={() => setCreated(null)} />}
      {editing && (
        <EditKeyDialog
          apiKey={editing}
          onClose={() => setEditing(null)}
          onSaved={() => {
            setEditing(null);
            void refresh();
          }}
        />
      )}
    </section>
  );
}

const nameOf = (key: ApiKey) => (key.name ? `key ${key.name}` : `key ${key.prefix}…`);

function StatusBadge({ status }: { status: ApiKey["status"] }) {
  const tone = status === "active" ? "badge-ok" : status === "disabled" ? "badge-warn" : "badge-muted";
  return <span className={`badge ${tone}`}>{status}</span>;
}

function KeyTable({ keys, caption, tz, actions }: { keys: ApiKey[]; caption: string; tz: string; actions?: (k: ApiKey) => ReactNode }) {
  return (
    <div className="table-wrap" {...scrollable(caption)}>
      <table>
        <caption className="sr-only">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Status</th>
            <th scope="col">Models</th>
            <th scope="col">Limits and budget</th>
            <th scope="col">Created</th>
            {actions && <th scope="col">Actions</th>}
          </tr>
        </thead>
        <tbody>
          {keys.map((key) => (
            <tr key={key.id}>
              <th scope="row" className="cell-name">
                <span className="block">{key.name ?? <span className="subtle">Unnamed</span>}</span>
                <span className="block mono small subtle">{key.prefix}…</span>
              </th>
              <td>
                <StatusBadge status={key.status} />
              </td>
              <td className="cell-wrap">{key.models === null ? <span className="subtle">All workspace models</span> : key.models.join(", ")}</td>
              <td className="cell-limits">
                <span className="block nowrap">{describeLimits(key.limits)}</span>
                <span className="block subtle">Budget: {describeBudget(key.budget)}</span>
              </td>
              <td className="nowrap">{fmtDate(key.created_at, tz)}</td>
              {actions && <td>{actions(key)}</td>}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function parseModels(text: string): string[] | undefined {
  const names = text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
  return names.length > 0 ? names : undefined;
}

function CreateKeyDialog({ onClose, onCreated }: { onClose: () => void; onCreated: (k: CreatedKey) => void }) {
  const { ws, can } = useWorkspace();
  const id = useId();
  const [name, setName] = useState("");
  const [models, setModels] = useState("");
  const [limits, setLimits] = useState(limitsDraft(undefined));
  const [budget, setBudget] = useState(budgetDraft(null));
  const [formError, setFormError] = useState<string | null>(null);
  const create = useMutation({
    mutationFn: (body: Record<string, unknown>) => post<CreatedKey>(wsPath(ws, "/keys"), body),
    onSuccess: onCreated,
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setFormError(null);
    const body: { name?: string; models?: string[]; limits?: Limits; budget?: Budget } = {};
    if (name.trim()) body.name = name.trim();
    const list = parseModels(models);
    if (list) body.models = list;
    if (can("limits.manage")) {
      const l = limitsOf(limits);
      if (typeof l === "string") return setFormError(l);
      if (Object.keys(l).length > 0) body.limits = l;
    }
    if (can("budgets.manage")) {
      const b = budgetOf(budget);
      if (typeof b === "string") return setFormError(b);
      if (b) body.budget = b;
    }
    create.mutate(body);
  };
  return (
    <Dialog
      title="Create a key"
      onClose={onClose}
      footer={
        <>
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" form={id} className="btn btn-primary" disabled={create.isPending}>
            {create.isPending ? "Creating…" : "Create key"}
          </button>
        </>
      }
    >
      <form id={id} onSubmit={submit} className="form">
        <div className="field">
          <label htmlFor={`${id}-name`}>Name</label>
          <input id={`${id}-name`} className="input" value={name} maxLength={200} onChange={(e) => setName(e.target.value)} placeholder="e.g. ci-runner" />
        </div>
        <div className="field">
          <label htmlFor={`${id}-models`}>Allowed models (optional)</label>
          <textarea
            id={`${id}-models`}
            className="input"
            rows={2}
            value={models}
            aria-describedby={`${id}-models-hint`}
            onChange={(e) => setModels(e.target.value)}
            placeholder="gpt-4o, claude-*"
            spellCheck={false}
          />
          <p id={`${id}-models-hint`} className="hint">
            Names or globs with *, separated by commas or new lines. Empty: every model the workspace may use.
          </p>
        </div>
        {can("limits.manage") && <LimitsFields value={limits} onChange={setLimits} hint="Empty: the workspace's limits apply." />}
        {can("budgets.manage") && <BudgetFields value={budget} onChange={setBudget} hint="At most the workspace's budget; both apply." />}
        {formError && (
          <p className="field-error" role="alert">
            {formError}
          </p>
        )}
        <InlineError error={create.error} />
      </form>
    </Dialog>
  );
}

function SecretDialog({ created, onClose }: { created: CreatedKey; onClose: () => void }) {
  return (
    <Dialog
      title="Your new key"
      onClose={onClose}
      footer={
        <button type="button" className="btn btn-primary" onClick={onClose}>
          I have copied it
        </button>
      }
    >
      <div className="alert alert-warning">
        <p>
          <strong>Copy this key now.</strong> It won't be shown again: the gateway keeps only a hash of it. If you lose it, revoke it and create another.
        </p>
      </div>
      <CopyField label={`Secret of ${created.name ?? "the new key"}`} value={created.key} />
      <p className="hint">
        Send it as <span className="mono">Authorization: Bearer {created.prefix}…</span> to the gateway's API.
      </p>
    </Dialog>
  );
}

function EditKeyDialog({ apiKey, onClose, onSaved }: { apiKey: ApiKey; onClose: () => void; onSaved: () => void }) {
  const { ws, can } = useWorkspace();
  const id = useId();
  const [name, setName] = useState(apiKey.name ?? "");
  const [limits, setLimits] = useState(limitsDraft(apiKey.limits));
  const [budget, setBudget] = useState(budgetDraft(apiKey.budget));
  const [formError, setFormError] = useState<string | null>(null);
  const save = useMutation({
    mutationFn: (body: Record<string, unknown>) => patch<ApiKey>(wsPath(ws, `/keys/${encodeURIComponent(apiKey.id)}`), body),
    onSuccess: onSaved,
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setFormError(null);
    const body: { name?: string; limits?: Limits; budget?: Budget | null } = {};
    if (name.trim() && name.trim() !== apiKey.name) body.name = name.trim();
    if (can("limits.manage")) {
      const l = limitsOf(limits);
      if (typeof l === "string") return setFormError(l);
      body.limits = l;
    }
    if (can("budgets.manage")) {
      const b = budgetOf(budget);
      if (typeof b === "string") return setFormError(b);
      body.budget = b;
    }
    if (Object.keys(body).length === 0) return onClose();
    save.mutate(body);
  };
  return (
    <Dialog
      title={`Edit ${apiKey.name ?? `${apiKey.prefix}…`}`}
      onClose={onClose}
      footer={
        <>
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" form={id} className="btn btn-primary" disabled={save.isPending}>
            {save.isPending ? "Saving…" : "Save"}
          </button>
        </>
      }
    >
      <form id={id} onSubmit={submit} className="form">
        <div className="field">
          <label htmlFor={`${id}-name`}>Name</label>
          <input id={`${id}-name`} className="input" value={name} maxLength={200} onChange={(e) => setName(e.target.value)} />
        </div>
        {can("limits.manage") ? (
          <LimitsFields value={limits} onChange={setLimits} hint="Empty: the workspace's limits apply." />
        ) : (
          <p className="hint">Your role cannot change limits ({describeLimits(apiKey.limits)}).</p>
        )}
        {can("budgets.manage") ? (
          <BudgetFields value={budget} onChange={setBudget} />
        ) : (
          <p className="hint">Your role cannot change budgets ({describeBudget(apiKey.budget)}).</p>
        )}
        {formError && (
          <p className="field-error" role="alert">
            {formError}
          </p>
        )}
        <InlineError error={save.error} />
      </form>
    </Dialog>
  );
}
