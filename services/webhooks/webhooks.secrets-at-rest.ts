/**
 * Rewrites every stored subscription key and secret: the migration that encrypts them
 * (and its down), and `npm run -s cli -- secrets reencrypt` after a key rotation. It is kept
 * apart from the repository on purpose: a migration must keep doing what it did whatever the
 * service's queries become.
 */
import type { Knex } from "knex";

const PAGE = 500;

/** The sealed columns the encryption migration knew: it keeps rewriting exactly these. */
export const FIRST_SEALED_COLUMNS = ["key", "secret"] as const;
/** Every sealed column of a subscription today (`npm run -s cli -- secrets reencrypt`). */
export const SEALED_COLUMNS = [
  ...FIRST_SEALED_COLUMNS,
  "previous_key",
  "previous_secret",
  "previous_signing_key",
  "signing_key",
  // The custom headers' values, one sealed JSON object (webhooks.custom-headers.ts).
  "headers",
] as const;

type StoredSecrets = { id: number } & Record<string, string | null>;

/**
 * Applies `rewrite` to the sealed `columns` of every subscription, page by page, and returns how
 * many rows changed. A row rotated meanwhile is left as the rotation wrote it.
 */
export async function rewriteStoredSecrets(
  db: Knex,
  rewrite: (stored: string) => string,
  columns: readonly string[] = FIRST_SEALED_COLUMNS,
): Promise<number> {
  let changed = 0;
  for (let after = 0; ;) {
    const rows = await db("webhooks.subscriptions")
      .where("id", ">", after)
      .orderBy("id")
      .limit(PAGE)
      .select<StoredSecrets[]>("id", ...columns);
    if (rows.length === 0) return changed;
    for (const { id, ...stored } of rows) {
      const next = Object.fromEntries(
        Object.entries(stored).map(([column, value]) => [column, value === null ? null : rewrite(value)]),
      );
      if (columns.every((column) => next[column] === stored[column])) continue;
      const updated = await db("webhooks.subscriptions")
        .where({ id, ...stored })
        .update(next);
      changed += Number(updated) > 0 ? 1 : 0;
    }
    after = rows[rows.length - 1].id;
  }
}
