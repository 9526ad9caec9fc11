-- People, apart from platform keys: the console's own schema (docs/console.md).
CREATE TABLE console.users (
  id            text PRIMARY KEY,
  email         text NOT NULL UNIQUE,           -- trimmed and lower-cased
  name          text,
  password_hash text,                           -- argon2id (PHC string); null for SSO-only people
  operator      boolean NOT NULL DEFAULT false,
  oidc_subject  text UNIQUE,                    -- "issuer subject" once signed in by SSO
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);

-- Server-side sessions. The cookie carries a random token; only its SHA-256 is stored, so a leaked
-- table opens no session.
CREATE TABLE console.sessions (
  token_hash   text PRIMARY KEY,
  user_id      text NOT NULL REFERENCES console.users (id) ON DELETE CASCADE,
  csrf_token   text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL                -- the absolute expiry; idle expiry is last_seen_at's
);
CREATE INDEX sessions_user_idx ON console.sessions (user_id);
CREATE INDEX sessions_expiry_idx ON console.sessions (expires_at);

CREATE TABLE console.memberships (
  user_id      text NOT NULL REFERENCES console.users (id) ON DELETE CASCADE,
  workspace_id text NOT NULL,                     -- ingress's workspace id (no foreign key across schemas)
  role         text NOT NULL CHECK (role IN ('owner', 'admin', 'developer', 'billing', 'viewer')),
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, user_id)
);
CREATE INDEX memberships_user_idx ON console.memberships (user_id);

-- Single-use links: an invitation to a workspace (workspace_id and role set) or a sign-in link for
-- a person the operator created (user_id set). Only the token's SHA-256 is stored.
CREATE TABLE console.links (
  id           text PRIMARY KEY,
  token_hash   text NOT NULL UNIQUE,
  email        text NOT NULL,
  user_id      text REFERENCES console.users (id) ON DELETE CASCADE,
  workspace_id text,
  role         text CHECK (role IN ('owner', 'admin', 'developer', 'billing', 'viewer')),
  created_by   text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL,
  used_at      timestamptz,
  CHECK ((workspace_id IS NULL) = (role IS NULL))
);
CREATE INDEX links_workspace_idx ON console.links (workspace_id) WHERE used_at IS NULL;

-- Failed sign-ins, per account and per address, for throttling across replicas.
CREATE TABLE console.sign_in_failures (
  subject text NOT NULL,                          -- "email:<address>" or "ip:<address>"
  at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sign_in_failures_idx ON console.sign_in_failures (subject, at);

-- What people did in the console that no other service records (the team, sign-ins); changes to
-- workspaces, keys and credentials are in ingress's audit trail, naming the same person.
CREATE TABLE console.audit (
  id           bigserial PRIMARY KEY,
  at           timestamptz NOT NULL DEFAULT now(),
  actor        text NOT NULL,
  action       text NOT NULL,
  workspace_id text,
  target_kind  text NOT NULL,
  target_id    text NOT NULL,
  detail       jsonb
);
CREATE INDEX console_audit_workspace_idx ON console.audit (workspace_id, at DESC);
