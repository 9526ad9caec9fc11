import { useQuery } from "@tanstack/react-query";
import { Suspense, useEffect, useId, useRef, useState } from "react";
import { Link, NavLink, Outlet, useLocation, useMatch, useNavigate, useNavigationType } from "react-router";
import { get, listOf } from "./api";
import { ErrorBoundary } from "./components/ErrorBoundary";
import { Loading } from "./components/States";
import { useSession, useSignOut } from "./session";
import type { List, Workspace } from "./types";
import { workspacePages, useWorkspaceQuery } from "./workspace";

/** The frame of every signed-in page: header, workspace switcher, navigation, the person, sign out. */
export function Shell() {
  const session = useSession();
  const location = useLocation();
  const navigate = useNavigate();
  const signOut = useSignOut();
  const match = useMatch("/w/:ws/*");
  const ws = match?.params.ws;
  const sub = (match?.params["*"] ?? "").split("/")[0] ?? "";
  const [menuOpen, setMenuOpen] = useState(false);
  const [signingOut, setSigningOut] = useState(false);
  const navId = useId();
  const switcherId = useId();
  const mainRef = useRef<HTMLElement>(null);
  const firstPath = useRef(location.pathname);
  const navigationType = useNavigationType();

  const operatorList = useQuery({
    queryKey: ["workspaces"],
    queryFn: () => get<List<Workspace>>("/workspaces"),
    enabled: session.user.operator,
    staleTime: 60_000,
  });
  const current = useWorkspaceQuery(ws);
  const membership = session.memberships.find((m) => m.workspace_id === ws);
  const actions = current.data?.actions ?? membership?.actions ?? [];

  const choices = new Map<string, string>();
  for (const m of session.memberships) choices.set(m.workspace_id, m.workspace_name);
  for (const w of listOf(operatorList.data)) if (!choices.has(w.id)) choices.set(w.id, w.name);
  if (ws && !choices.has(ws)) choices.set(ws, current.data?.name ?? ws);

  // A new page: close the menu on small screens and move focus to the content (not on the first
  // load, nor on a redirect, which replaces the entry).
  useEffect(() => {
    setMenuOpen(false);
    if (location.pathname !== firstPath.current) {
      firstPath.current = "";
      if (navigationType !== "REPLACE") mainRef.current?.focus({ preventScroll: false });
    }
  }, [location.pathname, navigationType]);

  // Escape closes the menu on small screens, back to its button.
  useEffect(() => {
    if (!menuOpen) return;
    const onKey = (event: KeyboardEvent) => {
      if (event.key !== "Escape") return;
      setMenuOpen(false);
      document.querySelector<HTMLElement>(".menu-toggle")?.focus();
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [menuOpen]);

  const pages = ws ? workspacePages.filter((p) => p.anyOf.some((a) => actions.includes(a))) : [];

  const account = (where: string) => (
    <div className={`account account-${where}`}>
      <span className="account-email" title={session.user.name ?? undefined}>
        {session.user.email}
        {session.user.operator && <span className="badge badge-info">operator</span>}
      </span>
      <div className="account-actions">
        <button
          type="button"
          className="btn btn-small"
          disabled={signingOut}
          onClick={async () => {
            setSigningOut(true);
            await signOut(false).catch(() => undefined);
            navigate("/sign-in", { replace: true });
          }}
        >
          Sign out
        </button>
        <button
          type="button"
          className="btn btn-small btn-ghost"
          disabled={signingOut}
          onClick={async () => {
            setSigningOut(true);
            await signOut(true).catch(() => undefined);
            navigate("/sign-in", { replace: true });
          }}
        >
          Sign out everywhere
        </button>
      </div>
    </div>
  );

  return (
    <div className="app">
      <a href="#main" className="skip-link">
        Skip to content
      </a>
      <header className="topbar">
        <button type="button" className="btn btn-ghost menu-toggle" aria-expanded={menuOpen} aria-controls={navId} onClick={() => setMenuOpen((open) => !open)}>
          <span aria-hidden="true" className="menu-icon" />
          Menu
        </button>
        <Link to="/" className="brand">
          <img src={`${import.meta.env.BASE_URL}favicon.svg`} alt="" width="24" height="24" />
          <span>Gateway console</span>
        </Link>
        {choices.size > 0 && (
          <div className="switcher">
            <label htmlFor={switcherId}>Workspace</label>
            <select
              id={switcherId}
              className="select"
              value={ws ?? ""}
              onChange={(event) => {
                const next = event.target.value;
                if (!next) return;
                const keep = workspacePages.some((p) => p.path === sub && p.path !== "") ? sub : "";
                navigate(`/w/${encodeURIComponent(next)}/${keep}`);
              }}
            >
              {!ws && <option value="">Choose a workspace…</option>}
              {[...choices].map(([id, name]) => (
                <option key={id} value={id}>
                  {name}
                </option>
              ))}
            </select>
          </div>
        )}
        {account("header")}
      </header>
      <div className="layout">
        <nav id={navId} className={menuOpen ? "sidenav open" : "sidenav"} aria-label="Console">
          <div className="sidenav-inner">
            {ws && (
              <>
                <p className="nav-heading">{current.data?.name ?? membership?.workspace_name ?? "Workspace"}</p>
                <ul>
                  {pages.map((page) => (
                    <li key={page.path}>
                      <NavLink to={`/w/${encodeURIComponent(ws)}/${page.path}`} end={page.path === ""}>
                        {page.label}
                      </NavLink>
                    </li>
                  ))}
                </ul>
              </>
            )}
            {session.user.operator && (
              <>
                <p className="nav-heading">Platform</p>
                <ul>
                  <li>
                    <NavLink to="/workspaces" end>
                      All workspaces
                    </NavLink>
                  </li>
                </ul>
              </>
            )}
            {account("nav")}
          </div>
        </nav>
        {menuOpen && <div className="nav-backdrop" aria-hidden="true" onClick={() => setMenuOpen(false)} />}
        <main id="main" ref={mainRef} tabIndex={-1}>
          <ErrorBoundary resetKey={location.pathname}>
            <Suspense fallback={<Loading label="Loading the page" />}>
              <Outlet />
            </Suspense>
          </ErrorBoundary>
        </main>
      </div>
    </div>
  );
}
