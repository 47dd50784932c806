/**
 * PostgreSQL and NATS (JetStream on) in containers started with testcontainers: the servers of
 * the containers tier (`npm run test:containers`) and the fallback of test/helpers/database.ts.
 * The images are settings: TEST_POSTGRES_IMAGE (default postgres:16) and TEST_NATS_IMAGE (default
 * nats:2); test/containers/run.sh points them at the images deploy/images/build-local.sh makes
 * where no registry can be reached. Both must expose only their server's port (podman 4.3 leaves
 * another EXPOSEd port unbound and testcontainers then waits for it).
 */
// Loaded when a container is started: the other test files that import this one never pay for it.
import type { StartedTestContainer } from "testcontainers";
import { testRunId } from "../helpers/test-run";

/** Its value is the run id: test/containers/run.sh removes the run's containers, whatever happened to the run. */
export const CONTAINER_LABEL = "oi.test-containers";

export interface ContainerServer {
  url: string;
  container: StartedTestContainer;
}

export const postgresImage = (): string => process.env.TEST_POSTGRES_IMAGE || "postgres:16";
export const natsImage = (): string => process.env.TEST_NATS_IMAGE || "nats:2";

export async function startPostgres(): Promise<ContainerServer> {
  const { GenericContainer, Wait } = await import("testcontainers");
  const container = await new GenericContainer(postgresImage())
    .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: "trust" })
    .withExposedPorts(5432)
    .withLabels({ [CONTAINER_LABEL]: testRunId() })
    // Ready when it answers over TCP: the official image's first-start server listens on its socket only.
    .withWaitStrategy(Wait.forSuccessfulCommand("pg_isready -h 127.0.0.1 -U postgres"))
    .withStartupTimeout(60_000)
    .start();
  return { url: `postgres://postgres@${container.getHost()}:${container.getMappedPort(5432)}/postgres`, container };
}

export async function startNats(): Promise<ContainerServer> {
  const { GenericContainer, Wait } = await import("testcontainers");
  const container = await new GenericContainer(natsImage())
    .withCommand(["-js"])
    .withExposedPorts(4222)
    .withLabels({ [CONTAINER_LABEL]: testRunId() })
    .withWaitStrategy(Wait.forLogMessage(/Server is ready/))
    .withStartupTimeout(60_000)
    .start();
  return { url: `nats://${container.getHost()}:${container.getMappedPort(4222)}`, container };
}

/**
 * For the global setup when OI_TEST_CONTAINERS=1: both servers started, and TEST_DATABASE_URL /
 * TEST_NATS_URL pointed at them for the whole run (the workers inherit the environment).
 */
export async function useContainerServers(): Promise<void> {
  if (process.env.OI_TEST_CONTAINERS_STARTED) return; // the integration and e2e projects both set up
  const started = Date.now();
  const [postgres, nats] = await Promise.all([startPostgres(), startNats()]);
  process.env.TEST_DATABASE_URL = postgres.url;
  process.env.TEST_NATS_URL = nats.url;
  process.env.OI_TEST_CONTAINERS_STARTED = "1";
  console.log(
    `\n[tests] containers: PostgreSQL ${postgresImage()} at ${new URL(postgres.url).host}, ` +
      `NATS ${natsImage()} at ${new URL(nats.url).host} (started in ${((Date.now() - started) / 1000).toFixed(1)} s)`,
  );
}
