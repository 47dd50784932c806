import type { Knex } from "knex";
import { SecretBox } from "../../../shared/security/secret-box";
import { secretBox } from "../../../shared/security/secrets-keyring";
import { rewriteStoredSecrets } from "../webhooks.secrets-at-rest";

/**
 * Subscription keys and signing secrets were stored in clear: seal them (shared/security/secret-box.ts).
 * The keys are looked up only when a row needs them, so an empty database migrates without any.
 */
export async function up(knex: Knex): Promise<void> {
  await rewriteStoredSecrets(knex, (value) => (SecretBox.isSealed(value) ? value : secretBox().seal(value)));
}

export async function down(knex: Knex): Promise<void> {
  await rewriteStoredSecrets(knex, (value) => (SecretBox.isSealed(value) ? secretBox().open(value) : value));
}
