-- Single sign-on in progress: one row per browser sent to the identity provider, read and deleted
-- when it comes back. The browser holds the state in a cookie; the PKCE verifier never leaves here.
CREATE TABLE console.oidc_flows (
  state_hash    text PRIMARY KEY,
  code_verifier text NOT NULL,
  nonce         text NOT NULL,
  return_to     text NOT NULL,
  redirect_uri  text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);
