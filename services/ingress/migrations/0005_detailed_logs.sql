-- Detailed logs (Enterprise): a workspace's `{bodies, retention_days}` and a key's `{bodies: false}`
-- opt-out; NULL: the defaults (capture off; the key follows its workspace).
ALTER TABLE ingress.workspaces
  ADD COLUMN logging jsonb;

ALTER TABLE ingress.api_keys
  ADD COLUMN logging jsonb;
