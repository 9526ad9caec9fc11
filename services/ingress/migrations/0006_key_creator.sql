-- Who created a key through the console (the person's console user id); NULL for keys made with the
-- admin token. A developer may manage the keys they created (packages/contracts/src/roles.ts).
ALTER TABLE ingress.api_keys
  ADD COLUMN created_by text;
