-- A workspace's time zone (its months and days) and monthly budgets on workspaces and keys
-- (`{monthly_usd, mode, alert_at_percent?}`; NULL: none).
ALTER TABLE ingress.workspaces
  ADD COLUMN timezone text NOT NULL DEFAULT 'UTC',
  ADD COLUMN budget jsonb;

ALTER TABLE ingress.api_keys
  ADD COLUMN budget jsonb;
