/** The message of an error (or the value as text), for log lines and error messages. */
export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** `err` itself when it is an Error (as everything the library throws is), else an Error with its text. */
export function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
