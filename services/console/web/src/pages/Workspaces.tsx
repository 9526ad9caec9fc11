import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { Link, useNavigate } from "react-router";
import { get, listOf, patch, post, wsPath } from "../api";
import { ConfirmButton } from "../components/Dialog";
import { Empty, ErrorBox, InlineError, Loading, Notice } from "../components/States";
import { fmtDate } from "../format";
import { sessionKey, useSession } from "../session";
import type { List, Plan, Workspace } from "../types";
import { usePageTitle, workspaceKey } from "../workspace";
import { scrollable } from "../components/scrollable";

/** The plans (contracts' planNames; listed here so the page does not pull zod in with the schemas). */
const planNames = ["plus", "pro", "enterprise"] as const satisfies readonly Plan[];

/** The platform operator's view: every workspace, creating one, plans and subscriptions. */
export function Workspaces() {
  const session = useSession();
  usePageTitle("All workspaces");
  const client = useQueryClient();
  const navigate = useNavigate();
  const list = useQuery({
    queryKey: ["workspaces"],
    queryFn: () => get<List<Workspace>>("/workspaces"),
    enabled: session.user.operator,
  });
  const refresh = async (id?: string) => {
    await client.invalidateQueries({ queryKey: ["workspaces"] });
    if (id) await client.invalidateQueries({ queryKey: workspaceKey(id) });
    await client.invalidateQueries({ queryKey: sessionKey });
  };
  const [name, setName] = useState("");
  const [plan, setPlan] = useState<Plan>("pro");
  const create = useMutation({
    mutationFn: () => post<Workspace>("/workspaces", { name: name.trim(), plan }),
    onSuccess: async (created) => {
      setName("");
      await refresh();
      navigate(`/w/${encodeURIComponent(created.id)}/settings`);
    },
  });
  if (!session.user.operator) {
    return (
      <section className="page">
        <h1>All workspaces</h1>
        <Notice tone="warning">
          <p>Only platform operators see every workspace.</p>
        </Notice>
      </section>
    );
  }
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (name.trim()) create.mutate();
  };
  const workspaces = listOf(list.data);
  return (
    <section className="page" aria-labelledby="workspaces-title">
      <div className="page-header">
        <div>
          <h1 id="workspaces-title">All workspaces</h1>
          <p className="subtle">As a platform operator you may open every workspace, create one, change its plan or cancel its subscription.</p>
        </div>
      </div>

      <section className="card" aria-labelledby="create-ws-title">
        <h2 id="create-ws-title">Create a workspace</h2>
        <form className="inline-fields" onSubmit={submit}>
          <div className="field field-grow">
            <label htmlFor="new-ws-name">Name</label>
            <input id="new-ws-name" className="input" required maxLength={200} value={name} onChange={(e) => setName(e.target.value)} />
          </div>
          <div className="field">
            <label htmlFor="new-ws-plan">Plan</label>
            <select id="new-ws-plan" className="select" value={plan} onChange={(e) => setPlan(e.target.value as Plan)}>
              {planNames.map((p) => (
                <option key={p} value={p}>
                  {p}
                </option>
              ))}
            </select>
          </div>
          <div className="field field-submit">
            <button type="submit" className="btn btn-primary" disabled={create.isPending}>
              {create.isPending ? "Creating…" : "Create workspace"}
            </button>
          </div>
        </form>
        <InlineError error={create.error} />
      </section>

      {list.isPending ? (
        <Loading label="Loading workspaces" />
      ) : list.isError ? (
        <ErrorBox error={list.error} retry={() => void list.refetch()} />
      ) : workspaces.length === 0 ? (
        <Empty title="No workspaces yet">
          <p>Create the first one above.</p>
        </Empty>
      ) : (
        <div className="table-wrap" {...scrollable("All workspaces")}>
          <table>
            <caption className="sr-only">All workspaces</caption>
            <thead>
              <tr>
                <th scope="col">Workspace</th>
                <th scope="col">Plan</th>
                <th scope="col">Subscription</th>
                <th scope="col">Time zone</th>
                <th scope="col">Created</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {workspaces.map((w) => (
                <WorkspaceRow key={w.id} workspace={w} onChanged={() => refresh(w.id)} />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function WorkspaceRow({ workspace, onChanged }: { workspace: Workspace; onChanged: () => Promise<unknown> }) {
  const [plan, setPlan] = useState<Plan>(workspace.plan);
  const change = useMutation({
    mutationFn: (body: Record<string, unknown>) => patch<Workspace>(wsPath(workspace.id, ""), body),
    onSuccess: onChanged,
  });
  return (
    <tr>
      <th scope="row" className="cell-name">
        <Link to={`/w/${encodeURIComponent(workspace.id)}/`}>{workspace.name}</Link>
        <span className="block subtle mono small">{workspace.id}</span>
      </th>
      <td>
        <div className="inline-form">
          <label className="sr-only" htmlFor={`plan-${workspace.id}`}>
            Plan of {workspace.name}
          </label>
          <select id={`plan-${workspace.id}`} className="select select-small" value={plan} onChange={(e) => setPlan(e.target.value as Plan)}>
            {planNames.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
          {plan !== workspace.plan && (
            <button type="button" className="btn btn-small btn-primary" disabled={change.isPending} onClick={() => change.mutate({ plan })}>
              Change plan<span className="sr-only"> of {workspace.name}</span>
            </button>
          )}
        </div>
        <InlineError error={change.error} />
      </td>
      <td>
        <span className={`badge ${workspace.subscription === "active" ? "badge-ok" : "badge-muted"}`}>{workspace.subscription}</span>
      </td>
      <td>{workspace.timezone}</td>
      <td className="nowrap">{fmtDate(workspace.created_at, workspace.timezone || "UTC")}</td>
      <td>
        {workspace.subscription === "active" ? (
          <ConfirmButton
            label="Cancel subscription"
            accessibleLabel={`Cancel subscription of ${workspace.name}`}
            title={`Cancel the subscription of ${workspace.name}?`}
            message={<p>The workspace's keys stop working until the subscription is active again.</p>}
            confirmLabel="Cancel subscription"
            danger
            onConfirm={() => change.mutateAsync({ subscription: "canceled" })}
          />
        ) : (
          <button
            type="button"
            className="btn btn-small"
            disabled={change.isPending}
            onClick={() => change.mutate({ subscription: "active" })}
            aria-label={`Reactivate the subscription of ${workspace.name}`}
          >
            Reactivate
          </button>
        )}
      </td>
    </tr>
  );
}
