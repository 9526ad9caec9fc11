-- Enterprise workspaces' own provider credentials, sealed with AES-256-GCM under the operator's
-- master key (GATEWAY_MASTER_KEY); the clear value is never stored, returned or logged.
CREATE TABLE ingress.provider_credentials (
  workspace_id text NOT NULL REFERENCES ingress.workspaces (id),
  provider     text NOT NULL,
  sealed       text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, provider)
);
