import { useContainerServers } from "../containers/servers";
import { testcontainersWillServe } from "./database";
import { preparePgliteTemplate } from "./pglite-folders";
import { checkTestServers } from "./prerequisites";
import { startTestRun } from "./test-run";

/** Says once which servers the integration and end-to-end tiers run against; names the run. */
export default async function globalSetup(): Promise<void> {
  startTestRun();
  // npm run test:containers: PostgreSQL and NATS in containers for this run (test/containers/run.sh).
  if (process.env.OI_TEST_CONTAINERS === "1") await useContainerServers();
  // A named server that does not answer: fails in CI, else unset here and reported by the tests that need it.
  await checkTestServers();
  const db = process.env.TEST_DATABASE_URL;
  const nats = process.env.TEST_NATS_URL;
  // The embedded fallback's databases are copies of one data folder initialised here.
  const embedded = !db && !(await testcontainersWillServe());
  if (embedded) preparePgliteTemplate();
  if (db && nats) {
    console.log(`\n[tests] real servers: PostgreSQL ${new URL(db).host}, NATS ${nats}`);
  } else {
    console.log(
      `\n[tests] TEST_DATABASE_URL${db ? "" : " (unset)"} / TEST_NATS_URL${nats ? "" : " (unset)"}: ` +
        (embedded
          ? "no container runtime answers: the embedded mode (PGlite, no transporter)."
          : "falling back to testcontainers where a container runtime answers, else the embedded mode (PGlite, no transporter)."),
    );
  }
}
