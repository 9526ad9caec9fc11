import { Navigate } from "react-router";
import { Notice } from "../components/States";
import { useSession } from "../session";
import { LAST_WORKSPACE, usePageTitle, workspacePages } from "../workspace";

/** The console's start: the last workspace used (or the first), at the first page the role may open. */
export function Home() {
  const session = useSession();
  usePageTitle("Home");
  const last = localStorage.getItem(LAST_WORKSPACE);
  const membership = session.memberships.find((m) => m.workspace_id === last) ?? session.memberships[0];
  if (membership) {
    const page = workspacePages.find((p) => p.anyOf.some((a) => membership.actions.includes(a)));
    return <Navigate to={`/w/${encodeURIComponent(membership.workspace_id)}/${page?.path ?? ""}`} replace />;
  }
  if (session.user.operator) {
    if (last) return <Navigate to={`/w/${encodeURIComponent(last)}/`} replace />;
    return <Navigate to="/workspaces" replace />;
  }
  return (
    <section className="page">
      <h1>No workspace yet</h1>
      <Notice>
        <p>
          You are signed in as {session.user.email}, but you are not a member of any workspace. Ask a workspace owner to invite you; the invitation link signs
          you in and adds you.
        </p>
      </Notice>
    </section>
  );
}
