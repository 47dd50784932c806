/** A one-line reason for an error; a refused connection is an AggregateError whose message is empty. */
export function errorText(err: unknown): string {
  const e = err as { message?: string; code?: string } | null;
  return e?.message || e?.code || String(err);
}
