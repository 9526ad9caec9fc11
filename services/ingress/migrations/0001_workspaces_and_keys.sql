CREATE TABLE ingress.workspaces (
  id           text PRIMARY KEY,
  name         text NOT NULL,
  plan         text NOT NULL CHECK (plan IN ('plus', 'pro', 'enterprise')),
  subscription text NOT NULL DEFAULT 'active' CHECK (subscription IN ('active', 'canceled')),
  models       jsonb NOT NULL DEFAULT '["*"]',
  tools        jsonb NOT NULL DEFAULT '["webtool", "serptool"]',
  limits       jsonb NOT NULL DEFAULT '{}',
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now()
);

-- Keys are stored as the SHA-256 of the secret (hex) plus a short display prefix; never in clear.
CREATE TABLE ingress.api_keys (
  id           text PRIMARY KEY,
  workspace_id text NOT NULL REFERENCES ingress.workspaces (id),
  name         text,
  key_hash     text NOT NULL UNIQUE,
  prefix       text NOT NULL,
  status       text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled', 'revoked')),
  models       jsonb,
  tools        jsonb,
  limits       jsonb NOT NULL DEFAULT '{}',
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX api_keys_workspace_idx ON ingress.api_keys (workspace_id);
