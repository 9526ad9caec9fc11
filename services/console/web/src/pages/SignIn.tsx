import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useEffect, useId, useState } from "react";
import { Navigate, useLocation, useNavigate, useSearchParams } from "react-router";
import { API, ApiError, get, messageOf, post, routerPath, safeReturnPath, setCsrfToken } from "../api";
import { Loading } from "../components/States";
import { sessionKey, useSessionQuery } from "../session";
import type { ConsoleConfig, ConsoleSession } from "../types";
import { usePageTitle } from "../workspace";

function tokenOf(hash: string): string | null {
  const params = new URLSearchParams(hash.startsWith("#") ? hash.slice(1) : hash);
  const token = params.get("token");
  return token && token.length <= 200 ? token : null;
}

/** Sign-in: email and password, SSO when configured, and single-use links (first sign-in, invitations). */
export function SignIn() {
  const location = useLocation();
  const [search] = useSearchParams();
  const navigate = useNavigate();
  const client = useQueryClient();
  const returnTo = safeReturnPath(search.get("return_to"));
  const token = tokenOf(location.hash);
  const invite = location.pathname.startsWith("/invite");
  const session = useSessionQuery();
  const config = useQuery({ queryKey: ["config"], queryFn: () => get<ConsoleConfig>("/config"), staleTime: Infinity, retry: 1 });
  usePageTitle(token ? (invite ? "Accept invitation" : "Finish signing in") : "Sign in");

  const signedIn = (answer: ConsoleSession) => {
    setCsrfToken(answer.csrf_token);
    client.clear();
    client.setQueryData(sessionKey, answer);
    navigate(routerPath(returnTo), { replace: true });
  };

  if (!token && session.data) return <Navigate to={routerPath(returnTo)} replace />;

  const oidc = config.data?.oidc.enabled === true;
  return (
    <div className="auth-page">
      <header className="auth-header">
        <img src={`${import.meta.env.BASE_URL}favicon.svg`} alt="" width="28" height="28" />
        <span className="brand-text">Gateway console</span>
      </header>
      <main id="main" className="auth-card">
        {token ? (
          <LinkForm token={token} invite={invite} oidc={oidc} onSignedIn={signedIn} />
        ) : session.isPending ? (
          <Loading label="Checking your session" />
        ) : (
          <PasswordForm oidc={oidc} returnTo={returnTo} onSignedIn={signedIn} configLoading={config.isPending} />
        )}
      </main>
    </div>
  );
}

function useCountdown(): [number, (seconds: number) => void] {
  const [until, setUntil] = useState(0);
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (until <= Date.now()) return;
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [until]);
  const left = Math.max(0, Math.ceil((until - now) / 1000));
  return [
    left,
    (seconds) => {
      setNow(Date.now());
      setUntil(Date.now() + seconds * 1000);
    },
  ];
}

function PasswordForm({
  oidc,
  returnTo,
  onSignedIn,
  configLoading,
}: {
  oidc: boolean;
  returnTo: string;
  onSignedIn: (s: ConsoleSession) => void;
  configLoading: boolean;
}) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [waitLeft, waitFor] = useCountdown();
  const errorId = useId();
  const signIn = useMutation({
    mutationFn: () => post<ConsoleSession>("/sign-in", { email: email.trim(), password }),
    meta: { signIn: true },
    onSuccess: onSignedIn,
    onError: (err) => {
      if (err instanceof ApiError && err.status === 429) waitFor(err.retryAfter ?? 30);
    },
  });
  const error = signIn.error;
  let message: string | null = null;
  if (error instanceof ApiError && error.status === 401) message = "Wrong email or password. Check both and try again.";
  else if (error instanceof ApiError && error.status === 429)
    message =
      waitLeft > 0
        ? `Too many sign-in attempts. Try again in ${waitLeft} second${waitLeft === 1 ? "" : "s"}.`
        : "Too many sign-in attempts. You can try again now.";
  else if (error) message = messageOf(error);

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (waitLeft > 0) return;
    signIn.mutate();
  };

  return (
    <>
      <h1>Sign in</h1>
      <form onSubmit={submit} noValidate={false} aria-describedby={message ? errorId : undefined}>
        {message && (
          <div className="alert alert-error" role="alert" id={errorId}>
            <p>{message}</p>
          </div>
        )}
        <div className="field">
          <label htmlFor="signin-email">Email</label>
          <input
            id="signin-email"
            className="input"
            type="email"
            name="email"
            autoComplete="username"
            required
            value={email}
            onChange={(e) => setEmail(e.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor="signin-password">Password</label>
          <input
            id="signin-password"
            className="input"
            type="password"
            name="password"
            autoComplete="current-password"
            required
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
        </div>
        <button type="submit" className="btn btn-primary btn-block" disabled={signIn.isPending || waitLeft > 0}>
          {signIn.isPending ? "Signing in…" : "Sign in"}
        </button>
      </form>
      {oidc && (
        <>
          <p className="divider">
            <span>or</span>
          </p>
          <a className="btn btn-block" href={`${API}/oidc/start?return_to=${encodeURIComponent(returnTo)}`}>
            Sign in with SSO
          </a>
        </>
      )}
      {configLoading && <p className="hint">Checking for single sign-on…</p>}
      <p className="hint">No password yet? Use the link you were sent (an invitation or a first sign-in link).</p>
    </>
  );
}

function LinkForm({ token, invite, oidc, onSignedIn }: { token: string; invite: boolean; oidc: boolean; onSignedIn: (s: ConsoleSession) => void }) {
  const [name, setName] = useState("");
  const [password, setPassword] = useState("");
  const [tooShort, setTooShort] = useState(false);
  const hintId = useId();
  const finish = useMutation({
    mutationFn: () =>
      post<ConsoleSession>("/sign-in/link", {
        token,
        ...(name.trim() ? { name: name.trim() } : {}),
        ...(password ? { password } : {}),
      }),
    meta: { signIn: true },
    onSuccess: onSignedIn,
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (password && password.length < 12) {
      setTooShort(true);
      return;
    }
    setTooShort(false);
    finish.mutate();
  };
  return (
    <>
      <h1>{invite ? "Accept your invitation" : "Finish signing in"}</h1>
      <p>
        {invite ? "You have been invited to a workspace. " : "Welcome. "}
        Tell us your name and choose a password to sign in with from now on.
      </p>
      <form onSubmit={submit}>
        {finish.error ? (
          <div className="alert alert-error" role="alert">
            <p>{messageOf(finish.error)}</p>
          </div>
        ) : null}
        <div className="field">
          <label htmlFor="link-name">Your name (optional)</label>
          <input id="link-name" className="input" autoComplete="name" value={name} onChange={(e) => setName(e.target.value)} maxLength={200} />
        </div>
        <div className="field">
          <label htmlFor="link-password">Password{oidc ? " (optional if you will sign in with SSO)" : ""}</label>
          <input
            id="link-password"
            className="input"
            type="password"
            autoComplete="new-password"
            minLength={12}
            maxLength={1024}
            value={password}
            aria-invalid={tooShort || undefined}
            aria-describedby={hintId}
            onChange={(e) => setPassword(e.target.value)}
          />
          <p id={hintId} className={tooShort ? "field-error" : "hint"}>
            At least 12 characters; long beats clever.{" "}
            {oidc ? "Leave it empty to sign in with SSO only." : "Leave it empty only if you already have a password."}
          </p>
        </div>
        <button type="submit" className="btn btn-primary btn-block" disabled={finish.isPending}>
          {finish.isPending ? "Signing in…" : invite ? "Join and sign in" : "Sign in"}
        </button>
      </form>
    </>
  );
}
