import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, type ReactNode, useId, useMemo, useState } from "react";
import { del, get, listOf, patch, put, wsPath } from "../api";
import { ConfirmButton } from "../components/Dialog";
import { BudgetFields, budgetDraft, budgetOf, describeBudget, describeLimits, LimitsFields, limitsDraft, limitsOf } from "../components/Forms";
import { Empty, ErrorBox, InlineError, Loading, Notice } from "../components/States";
import { fmtDateTime } from "../format";
import { sessionKey } from "../session";
import type { List, ProviderCredential, WorkspaceWithRole } from "../types";
import { usePageTitle, useWorkspace, workspaceKey } from "../workspace";
import { scrollable } from "../components/scrollable";

/** A PATCH of the workspace; the answer (with the role's actions) replaces the cached workspace. */
function useWorkspacePatch() {
  const { ws } = useWorkspace();
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: Record<string, unknown>) => patch<WorkspaceWithRole>(wsPath(ws, ""), body),
    onSuccess: (answer) => {
      client.setQueryData(workspaceKey(ws), answer);
      void client.invalidateQueries({ queryKey: sessionKey });
      void client.invalidateQueries({ queryKey: ["workspaces"] });
    },
  });
}

function Saved({ when }: { when: boolean }) {
  return (
    <span className="saved" role="status" aria-live="polite">
      {when ? "Saved" : ""}
    </span>
  );
}

/** The end of a settings form: its own check's message, the save button, and the server's answer. */
function FormFooter({
  save,
  label,
  formError,
  disabled = false,
}: {
  save: { isPending: boolean; isSuccess: boolean; error: unknown };
  label: string;
  formError?: string | null;
  disabled?: boolean;
}) {
  return (
    <>
      {formError && (
        <p className="field-error" role="alert">
          {formError}
        </p>
      )}
      <div className="form-actions">
        <button type="submit" className="btn btn-primary" disabled={save.isPending || disabled}>
          {label}
        </button>
        <Saved when={save.isSuccess} />
      </div>
      <InlineError error={save.error} />
    </>
  );
}

function Section({ id, title, children, description }: { id: string; title: string; children: ReactNode; description?: ReactNode }) {
  return (
    <section className="card" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {description && <div className="subtle section-description">{description}</div>}
      {children}
    </section>
  );
}

/** The workspace's settings, each section shown to the roles that may change it. */
export function Settings() {
  const { workspace, can } = useWorkspace();
  usePageTitle(`Settings · ${workspace.name}`);
  return (
    <section className="page" aria-labelledby="settings-title">
      <div className="page-header">
        <div>
          <h1 id="settings-title">Settings</h1>
          <p className="subtle">
            {workspace.name} · <span className="badge badge-info">{workspace.plan}</span> plan · subscription {workspace.subscription} ·{" "}
            <span className="mono">{workspace.id}</span>
          </p>
        </div>
      </div>
      {can("workspace.settings") && <GeneralSection />}
      {can("limits.manage") && <LimitsSection />}
      {can("budgets.manage") && <BudgetSection />}
      {can("logging.manage") && <LoggingSection />}
      {can("credentials.manage") && <CredentialsSection />}
    </section>
  );
}

function timeZones(current: string): string[] {
  let zones: string[] = [];
  try {
    zones = Intl.supportedValuesOf("timeZone");
  } catch {
    zones = [];
  }
  const all = new Set(["UTC", ...zones]);
  all.add(current);
  return [...all];
}

function GeneralSection() {
  const { workspace } = useWorkspace();
  const [name, setName] = useState(workspace.name);
  const [timezone, setTimezone] = useState(workspace.timezone || "UTC");
  const zones = useMemo(() => timeZones(workspace.timezone || "UTC"), [workspace.timezone]);
  const save = useWorkspacePatch();
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const body: Record<string, unknown> = {};
    if (name.trim() !== workspace.name) body.name = name.trim();
    if (timezone !== workspace.timezone) body.timezone = timezone;
    if (Object.keys(body).length > 0) save.mutate(body);
  };
  return (
    <Section id="general-title" title="General">
      <form className="form" onSubmit={submit}>
        <div className="field-row">
          <div className="field">
            <label htmlFor="ws-name">Name</label>
            <input id="ws-name" className="input" required maxLength={200} value={name} onChange={(e) => setName(e.target.value)} />
          </div>
          <div className="field">
            <label htmlFor="ws-tz">Time zone</label>
            <select id="ws-tz" className="select" value={timezone} aria-describedby="ws-tz-hint" onChange={(e) => setTimezone(e.target.value)}>
              {zones.map((z) => (
                <option key={z} value={z}>
                  {z.replaceAll("_", " ")}
                </option>
              ))}
            </select>
            <p id="ws-tz-hint" className="hint">
              Days and months (usage, statements, budgets) are counted in it.
            </p>
          </div>
        </div>
        <FormFooter save={save} label="Save" />
      </form>
    </Section>
  );
}

function LimitsSection() {
  const { workspace } = useWorkspace();
  const [draft, setDraft] = useState(limitsDraft(workspace.limits));
  const [formError, setFormError] = useState<string | null>(null);
  const save = useWorkspacePatch();
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const limits = limitsOf(draft);
    if (typeof limits === "string") return setFormError(limits);
    setFormError(null);
    save.mutate({ limits });
  };
  return (
    <Section id="limits-title" title="Limits" description={<p>Now: {describeLimits(workspace.limits)}. Empty fields use the gateway's defaults.</p>}>
      <form className="form" onSubmit={submit}>
        <LimitsFields value={draft} onChange={setDraft} />
        <FormFooter save={save} label="Save limits" formError={formError} />
      </form>
    </Section>
  );
}

function BudgetSection() {
  const { workspace } = useWorkspace();
  const [draft, setDraft] = useState(budgetDraft(workspace.budget));
  const [formError, setFormError] = useState<string | null>(null);
  const save = useWorkspacePatch();
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const budget = budgetOf(draft);
    if (typeof budget === "string") return setFormError(budget);
    setFormError(null);
    save.mutate({ budget });
  };
  return (
    <Section
      id="budget-title"
      title="Budget and alerts"
      description={<p>Now: {describeBudget(workspace.budget)}. Months are counted in the workspace's time zone.</p>}
    >
      <form className="form" onSubmit={submit}>
        <BudgetFields
          value={draft}
          onChange={setDraft}
          hint="An alert fires once a month when spend crosses the percentage, and once when the budget is reached."
        />
        <FormFooter save={save} label="Save budget" formError={formError} />
      </form>
    </Section>
  );
}

function LoggingSection() {
  const { workspace } = useWorkspace();
  const enterprise = workspace.plan === "enterprise";
  const [bodies, setBodies] = useState(workspace.logging.bodies);
  const [days, setDays] = useState(String(workspace.logging.retention_days || 30));
  const [formError, setFormError] = useState<string | null>(null);
  const save = useWorkspacePatch();
  const hintId = useId();
  // Off Enterprise the setting can only be turned off (it is kept, and applies again on return).
  const locked = !enterprise && !bodies;
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const n = Number(days);
    if (!Number.isInteger(n) || n < 1 || n > 400) return setFormError("Keep bodies for a whole number of days from 1 to 400");
    setFormError(null);
    save.mutate({ logging: { bodies, retention_days: n } });
  };
  return (
    <Section
      id="logging-title"
      title="Detailed logs"
      description={<p>Keep each request's request and response bodies (redacted of keys and secrets) for the logs. Off by default.</p>}
    >
      {!enterprise && (
        <Notice tone="warning">
          <p>
            <span className="badge">Enterprise</span> Detailed logs are an Enterprise plan feature; this workspace is on {workspace.plan}, so bodies are not
            captured{workspace.logging.bodies ? " (its setting is kept and applies again if it returns to Enterprise)" : ""}.
          </p>
        </Notice>
      )}
      <form className="form" onSubmit={submit}>
        <div className="check">
          <input
            id="logging-bodies"
            type="checkbox"
            checked={bodies}
            disabled={locked}
            aria-describedby={hintId}
            onChange={(e) => setBodies(e.target.checked)}
          />
          <label htmlFor="logging-bodies">Keep request and response bodies</label>
        </div>
        <p id={hintId} className="hint">
          {enterprise ? "Each body is cut at 256 KB. A key can opt out of capture." : "Available on the Enterprise plan."}
        </p>
        <div className="field field-narrow">
          <label htmlFor="logging-days">Keep bodies for (days)</label>
          <input id="logging-days" className="input" inputMode="numeric" value={days} disabled={locked} onChange={(e) => setDays(e.target.value)} />
        </div>
        <FormFooter save={save} label="Save logging" formError={formError} disabled={locked} />
      </form>
    </Section>
  );
}

function CredentialsSection() {
  const { ws, workspace, tz } = useWorkspace();
  const enterprise = workspace.plan === "enterprise";
  const client = useQueryClient();
  const list = useQuery({
    queryKey: ["credentials", ws],
    queryFn: () => get<List<ProviderCredential> & { providers?: string[] }>(wsPath(ws, "/credentials")),
    enabled: enterprise,
  });
  const [provider, setProvider] = useState("");
  const [apiKey, setApiKey] = useState("");
  const save = useMutation({
    mutationFn: () => put<ProviderCredential>(wsPath(ws, `/credentials/${encodeURIComponent(provider.trim())}`), { api_key: apiKey.trim() }),
    onSuccess: () => {
      setApiKey("");
      setProvider("");
      void client.invalidateQueries({ queryKey: ["credentials", ws] });
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!provider.trim() || apiKey.trim().length < 8) return;
    save.mutate();
  };
  return (
    <Section
      id="credentials-title"
      title="Provider credentials"
      description={
        <p>
          Your own API keys for upstream providers: requests of this workspace use them instead of the gateway's. A key is stored sealed and never shown again.
        </p>
      }
    >
      {!enterprise ? (
        <Notice tone="warning">
          <p>
            <span className="badge">Enterprise</span> Bringing your own provider keys is an Enterprise plan feature; this workspace is on {workspace.plan}.
          </p>
        </Notice>
      ) : (
        <>
          {list.isPending ? (
            <Loading label="Loading credentials" />
          ) : list.isError ? (
            <ErrorBox error={list.error} retry={() => void list.refetch()} />
          ) : listOf(list.data).length === 0 ? (
            <Empty title="No provider credentials">
              <p>Requests use the gateway's own provider keys.</p>
            </Empty>
          ) : (
            <div className="table-wrap" {...scrollable("Provider credentials")}>
              <table>
                <caption className="sr-only">Provider credentials</caption>
                <thead>
                  <tr>
                    <th scope="col">Provider</th>
                    <th scope="col">Key</th>
                    <th scope="col">Added</th>
                    <th scope="col">Last replaced</th>
                    <th scope="col">Actions</th>
                  </tr>
                </thead>
                <tbody>
                  {listOf(list.data).map((c) => (
                    <tr key={c.provider}>
                      <th scope="row" className="mono">
                        {c.provider}
                      </th>
                      <td className="subtle">Set (hidden)</td>
                      <td className="nowrap">{fmtDateTime(c.created_at, tz)}</td>
                      <td className="nowrap">{fmtDateTime(c.updated_at, tz)}</td>
                      <td>
                        <div className="row-actions">
                          <button
                            type="button"
                            className="btn btn-small"
                            aria-label={`Replace the ${c.provider} key`}
                            onClick={() => {
                              setProvider(c.provider);
                              document.getElementById("cred-key")?.focus();
                            }}
                          >
                            Replace
                          </button>
                          <ConfirmButton
                            label="Remove"
                            accessibleLabel={`Remove the ${c.provider} key`}
                            title={`Remove the ${c.provider} key?`}
                            message={<p>Requests of this workspace go back to the gateway's own {c.provider} key.</p>}
                            confirmLabel="Remove key"
                            danger
                            onConfirm={async () => {
                              await del(wsPath(ws, `/credentials/${encodeURIComponent(c.provider)}`));
                              await client.invalidateQueries({ queryKey: ["credentials", ws] });
                            }}
                          />
                        </div>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <h3>Add or replace a key</h3>
          <form className="inline-fields" onSubmit={submit} autoComplete="off">
            <div className="field">
              <label htmlFor="cred-provider">Provider</label>
              <input
                id="cred-provider"
                className="input"
                list="cred-providers"
                required
                value={provider}
                spellCheck={false}
                onChange={(e) => setProvider(e.target.value)}
              />
              <datalist id="cred-providers">
                {(list.data?.providers ?? []).map((p) => (
                  <option key={p} value={p} />
                ))}
              </datalist>
            </div>
            <div className="field field-grow">
              <label htmlFor="cred-key">API key</label>
              <input
                id="cred-key"
                className="input mono"
                type="password"
                autoComplete="new-password"
                required
                minLength={8}
                value={apiKey}
                spellCheck={false}
                onChange={(e) => setApiKey(e.target.value)}
              />
            </div>
            <div className="field field-submit">
              <button type="submit" className="btn btn-primary" disabled={save.isPending}>
                Save key
              </button>
            </div>
          </form>
          <Saved when={save.isSuccess} />
          <InlineError error={save.error} />
        </>
      )}
    </Section>
  );
}
