-- Every change to a workspace, a key or a provider credential, whoever makes it (the admin API, the
-- CLI through it, the console later): written by triggers in the transaction of the change itself,
-- so a change without its record (or a record without its change) cannot happen. `before` and
-- `after` are the rows as JSON without their secrets (a key's hash, a credential's sealed value).
-- The actor is the transaction's `gw.actor` setting (SET LOCAL by a caller that knows the person),
-- else the admin token, the only actor before the console.
CREATE TABLE ingress.audit (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at           timestamptz NOT NULL DEFAULT clock_timestamp(),
  actor        text NOT NULL,
  action       text NOT NULL,
  target_kind  text NOT NULL,
  target_id    text NOT NULL,
  workspace_id text NOT NULL,
  before       jsonb,
  after        jsonb
);

CREATE INDEX audit_workspace_idx ON ingress.audit (workspace_id, id DESC);

CREATE FUNCTION ingress.audit_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  kind text := CASE TG_TABLE_NAME WHEN 'workspaces' THEN 'workspace' WHEN 'api_keys' THEN 'key' ELSE 'credential' END;
  verb text := CASE TG_OP WHEN 'INSERT' THEN 'create' WHEN 'UPDATE' THEN 'update' ELSE 'delete' END;
  old_row jsonb := CASE WHEN TG_OP = 'INSERT' THEN NULL ELSE to_jsonb(OLD) - 'key_hash' - 'sealed' END;
  new_row jsonb := CASE WHEN TG_OP = 'DELETE' THEN NULL ELSE to_jsonb(NEW) - 'key_hash' - 'sealed' END;
  row_now jsonb := coalesce(new_row, old_row);
BEGIN
  INSERT INTO ingress.audit (actor, action, target_kind, target_id, workspace_id, before, after)
  VALUES (
    coalesce(nullif(current_setting('gw.actor', true), ''), 'admin-token'),
    kind || '.' || verb,
    kind,
    CASE kind WHEN 'credential' THEN row_now ->> 'provider' ELSE row_now ->> 'id' END,
    CASE kind WHEN 'workspace' THEN row_now ->> 'id' ELSE row_now ->> 'workspace_id' END,
    old_row,
    new_row
  );
  RETURN NULL;
END
$$;

CREATE TRIGGER workspaces_audit AFTER INSERT OR UPDATE OR DELETE ON ingress.workspaces
  FOR EACH ROW EXECUTE FUNCTION ingress.audit_change();
CREATE TRIGGER api_keys_audit AFTER INSERT OR UPDATE OR DELETE ON ingress.api_keys
  FOR EACH ROW EXECUTE FUNCTION ingress.audit_change();
CREATE TRIGGER provider_credentials_audit AFTER INSERT OR UPDATE OR DELETE ON ingress.provider_credentials
  FOR EACH ROW EXECUTE FUNCTION ingress.audit_change();
