import { mayDo, rolePermissions, workspaceRoles } from "@gw/contracts";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { del, get, listOf, patch, post, wsPath } from "../api";
import { CopyField } from "../components/CopyButton";
import { ConfirmButton } from "../components/Dialog";
import { Empty, ErrorBox, InlineError, Loading, Notice } from "../components/States";
import { fmtDate, fmtDateTime } from "../format";
import { useSession } from "../session";
import type { ConsoleInvitation, ConsoleMember, List, WorkspaceRole } from "../types";
import { usePageTitle, useWorkspace } from "../workspace";
import { scrollable } from "../components/scrollable";

/** What each role may do, in people's words (docs/console.md). */
export const roleSummaries: Record<WorkspaceRole, string> = {
  owner: "everything in the workspace, the team and deleting included",
  admin: "keys, limits, budgets, provider credentials, logging settings; reads everything, bodies included",
  developer: "models, keys (create, and manage the ones they created), usage, log metadata",
  billing: "usage, statements, budgets",
  viewer: "reads everything but request bodies",
};

/** Members and their roles, and invitations (a single-use link to hand over). */
export function Team() {
  const { ws, workspace, can, tz } = useWorkspace();
  const session = useSession();
  usePageTitle(`Team · ${workspace.name}`);
  const client = useQueryClient();
  const manage = can("team.manage");
  const enterprise = workspace.plan === "enterprise";
  const members = useQuery({ queryKey: ["members", ws], queryFn: async () => listOf(await get<List<ConsoleMember>>(wsPath(ws, "/members"))) });
  const invitations = useQuery({
    queryKey: ["invitations", ws],
    queryFn: async () => listOf(await get<List<ConsoleInvitation>>(wsPath(ws, "/invitations"))),
  });
  const refresh = () => Promise.all([client.invalidateQueries({ queryKey: ["members", ws] }), client.invalidateQueries({ queryKey: ["invitations", ws] })]);

  return (
    <section className="page" aria-labelledby="team-title">
      <div className="page-header">
        <div>
          <h1 id="team-title">Team</h1>
          <p className="subtle">The people of {workspace.name} and what each may do.</p>
        </div>
      </div>
      {!enterprise && (
        <Notice tone="warning">
          <p>
            <strong>Only owners apply on the {workspace.plan} plan.</strong> Roles other than owner (admin, developer, billing, viewer) are the Enterprise
            plan's: people with those roles stay members and can sign in, but can do nothing in this workspace until it is on Enterprise. Invite people as
            owners.
          </p>
        </Notice>
      )}

      <section className="card" aria-labelledby="members-title">
        <h2 id="members-title">Members</h2>
        {members.isPending ? (
          <Loading label="Loading members" />
        ) : members.isError ? (
          <ErrorBox error={members.error} retry={() => void members.refetch()} />
        ) : members.data.length === 0 ? (
          <Empty title="No members" />
        ) : (
          <div className="table-wrap" {...scrollable("Members")}>
            <table>
              <caption className="sr-only">Members</caption>
              <thead>
                <tr>
                  <th scope="col">Person</th>
                  <th scope="col">Role</th>
                  <th scope="col">Joined</th>
                  {manage && <th scope="col">Actions</th>}
                </tr>
              </thead>
              <tbody>
                {members.data.map((m) => (
                  <MemberRow key={m.user_id} member={m} manage={manage} self={m.user_id === session.user.id} tz={tz} onChanged={refresh} />
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>

      {manage && <InviteForm onInvited={refresh} />}

      <section className="card" aria-labelledby="invitations-title">
        <h2 id="invitations-title">Pending invitations</h2>
        {invitations.isPending ? (
          <Loading label="Loading invitations" />
        ) : invitations.isError ? (
          <ErrorBox error={invitations.error} retry={() => void invitations.refetch()} />
        ) : invitations.data.length === 0 ? (
          <Empty title="No pending invitations" />
        ) : (
          <div className="table-wrap" {...scrollable("Pending invitations")}>
            <table>
              <caption className="sr-only">Pending invitations</caption>
              <thead>
                <tr>
                  <th scope="col">Email</th>
                  <th scope="col">Role</th>
                  <th scope="col">Sent</th>
                  <th scope="col">Expires</th>
                  {manage && <th scope="col">Actions</th>}
                </tr>
              </thead>
              <tbody>
                {invitations.data.map((inv) => (
                  <tr key={inv.id}>
                    <th scope="row" className="cell-name">
                      {inv.email}
                    </th>
                    <td>{inv.role}</td>
                    <td className="nowrap">{fmtDate(inv.created_at, tz)}</td>
                    <td className="nowrap">{fmtDateTime(inv.expires_at, tz)}</td>
                    {manage && (
                      <td>
                        <ConfirmButton
                          label="Revoke"
                          accessibleLabel={`Revoke the invitation of ${inv.email}`}
                          title={`Revoke the invitation of ${inv.email}?`}
                          message={<p>The link sent to {inv.email} will stop working.</p>}
                          confirmLabel="Revoke invitation"
                          danger
                          onConfirm={async () => {
                            await del(wsPath(ws, `/invitations/${encodeURIComponent(inv.id)}`));
                            await refresh();
                          }}
                        />
                      </td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>

      <details className="card">
        <summary>What each role may do</summary>
        <div className="table-wrap" {...scrollable("Roles and their permissions")}>
          <table>
            <caption className="sr-only">Roles and their permissions</caption>
            <thead>
              <tr>
                <th scope="col">Role</th>
                <th scope="col">May</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {workspaceRoles.map((role) => (
                <tr key={role}>
                  <th scope="row">{role}</th>
                  <td>{roleSummaries[role]}</td>
                  <td className="mono small cell-wrap">{rolePermissions[role].join(", ")}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </section>
  );
}

function MemberRow({
  member,
  manage,
  self,
  tz,
  onChanged,
}: {
  member: ConsoleMember;
  manage: boolean;
  self: boolean;
  tz: string;
  onChanged: () => Promise<unknown>;
}) {
  const { ws } = useWorkspace();
  const [role, setRole] = useState<WorkspaceRole>(member.role);
  const change = useMutation({
    mutationFn: () => patch(wsPath(ws, `/members/${encodeURIComponent(member.user_id)}`), { role }),
    onSuccess: onChanged,
  });
  const who = member.name ? `${member.name} (${member.email})` : member.email;
  return (
    <tr>
      <th scope="row" className="cell-name">
        {member.name && <span className="block">{member.name}</span>}
        <span className={member.name ? "subtle" : undefined}>{member.email}</span>
        {self && <span className="badge badge-info">you</span>}
      </th>
      <td>
        {manage ? (
          <div className="inline-form">
            <label className="sr-only" htmlFor={`role-${member.user_id}`}>
              Role of {who}
            </label>
            <select id={`role-${member.user_id}`} className="select select-small" value={role} onChange={(e) => setRole(e.target.value as WorkspaceRole)}>
              {workspaceRoles.map((r) => (
                <option key={r} value={r}>
                  {r}
                </option>
              ))}
            </select>
            {role !== member.role && (
              <button type="button" className="btn btn-small btn-primary" disabled={change.isPending} onClick={() => change.mutate()}>
                Save<span className="sr-only"> role of {who}</span>
              </button>
            )}
          </div>
        ) : (
          member.role
        )}
        {member.effective_role === null && <span className="badge badge-warn">inactive on this plan</span>}
        <InlineError error={change.error} />
      </td>
      <td className="nowrap">{fmtDate(member.joined_at, tz)}</td>
      {manage && (
        <td>
          <ConfirmButton
            label={self ? "Leave" : "Remove"}
            accessibleLabel={self ? "Leave this workspace" : `Remove ${who}`}
            title={self ? "Leave this workspace?" : `Remove ${who}?`}
            message={<p>{self ? "You will lose access to this workspace." : `${who} will lose access to this workspace at once.`}</p>}
            confirmLabel={self ? "Leave" : "Remove member"}
            danger
            onConfirm={async () => {
              await del(wsPath(ws, `/members/${encodeURIComponent(member.user_id)}`));
              await onChanged();
            }}
          />
        </td>
      )}
    </tr>
  );
}

function InviteForm({ onInvited }: { onInvited: () => Promise<unknown> }) {
  const { ws, workspace, tz } = useWorkspace();
  const enterprise = workspace.plan === "enterprise";
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<WorkspaceRole>(enterprise ? "developer" : "owner");
  const invite = useMutation({
    mutationFn: () => post<ConsoleInvitation>(wsPath(ws, "/invitations"), { email: email.trim(), role }),
    onSuccess: async () => {
      setEmail("");
      await onInvited();
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    invite.mutate();
  };
  const sent = invite.data;
  return (
    <section className="card" aria-labelledby="invite-title">
      <h2 id="invite-title">Invite someone</h2>
      <form className="inline-fields" onSubmit={submit}>
        <div className="field">
          <label htmlFor="invite-email">Email</label>
          <input id="invite-email" className="input" type="email" required autoComplete="off" value={email} onChange={(e) => setEmail(e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor="invite-role">Role</label>
          <select
            id="invite-role"
            className="select"
            value={role}
            aria-describedby="invite-role-hint"
            onChange={(e) => setRole(e.target.value as WorkspaceRole)}
          >
            {workspaceRoles.map((r) => (
              <option key={r} value={r}>
                {r}
                {!enterprise && r !== "owner" ? " (Enterprise only)" : ""}
              </option>
            ))}
          </select>
        </div>
        <div className="field field-submit">
          <button type="submit" className="btn btn-primary" disabled={invite.isPending}>
            {invite.isPending ? "Inviting…" : "Create invitation"}
          </button>
        </div>
      </form>
      <p id="invite-role-hint" className="hint">
        {role === "owner" || role === "admin" ? "An" : "A"} {role} may do {roleSummaries[role]}.
        {!mayDo(role, workspace.plan, "workspace.read") && ` On the ${workspace.plan} plan this role does nothing until the workspace is on Enterprise.`}
      </p>
      <InlineError error={invite.error} />
      {sent?.link && (
        <div className="alert alert-success" role="status">
          <p>
            Invitation for <strong>{sent.email}</strong> ({sent.role}) created.{" "}
            {sent.emailed ? "It was sent to them by email; this is the same link, in case it does not arrive" : "Send them this link"}; it works once
            {sent.expires_at ? ` and expires ${fmtDateTime(sent.expires_at, tz)}` : ""}.
          </p>
          <CopyField label="Invitation link" value={sent.link} />
        </div>
      )}
    </section>
  );
}
