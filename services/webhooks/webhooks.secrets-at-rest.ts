/**
 * Rewrites every stored subscription key and secret: the migration that encrypts them
 * (and its down), and `npm run -s cli -- secrets reencrypt` after a key rotation. It is kept
 * apart from the repository on purpose: a migration must keep doing what it did whatever the
 * service's queries become.
 */
import type { Knex } from "knex";

const PAGE = 500;

interface StoredSecrets {
  id: number;
  key: string;
  secret: string;
}

/**
 * Applies `rewrite` to the key and secret of every subscription, page by page, and returns how
 * many rows changed. A row rotated meanwhile is left as the rotation wrote it.
 */
export async function rewriteStoredSecrets(db: Knex, rewrite: (stored: string) => string): Promise<number> {
  let changed = 0;
  for (let after = 0; ;) {
    const rows = (await db("webhooks.subscriptions").where("id", ">", after).orderBy("id").limit(PAGE)
      .select("id", "key", "secret")) as StoredSecrets[];
    if (rows.length === 0) return changed;
    for (const row of rows) {
      const next = { key: rewrite(row.key), secret: rewrite(row.secret) };
      if (next.key === row.key && next.secret === row.secret) continue;
      const updated = await db("webhooks.subscriptions").where({ id: row.id, key: row.key, secret: row.secret }).update(next);
      changed += Number(updated) > 0 ? 1 : 0;
    }
    after = rows[rows.length - 1].id;
  }
}
