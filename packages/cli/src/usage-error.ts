/** A command line the CLI cannot run: its message (empty for --help) is printed above the usage text. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}
