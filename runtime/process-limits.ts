/**
 * The V8 heap cap of one service process in the distributed mode. Left alone, V8 grows the heap
 * lazily far past what a service needs (200+ MB on a large machine) and a pod meets its 192 Mi
 * memory limit; capped, a busy orders process stays near 140 MB RSS. The image sets the same
 * value (deploy/docker/Dockerfile; a test checks they agree).
 */
export const SERVICE_HEAP_MB = 112;

/**
 * AsyncLocalStorage on V8's continuation-preserved data (AsyncContextFrame) instead of
 * async_hooks' promise hooks. The request context and the tracing context
 * (shared/observability/request-context.ts, tracing.ts) live in AsyncLocalStorage, and with the
 * hooks every promise — a dozen or more per delivery — ran an init hook that copied the stores
 * onto it. Measured under bench:webhooks (bench/README.md, issue 23, "AsyncLocalStorage without
 * promise hooks"): 0.74–0.80 → 0.67–0.78 ms of CPU per delivery in the burst, every process
 * cheaper, and bench:orders 2.89–3.34 → 2.30–2.95 ms per order. The default from Node 24 on;
 * Node 22, which the project runs on (the `node` devDependency, the image), has it behind this
 * flag. The whole test suite runs with it too (package.json `jest`, test/helpers/processes.ts),
 * so the contexts' flow is the one tested.
 */
export const ASYNC_CONTEXT_FLAG = "--experimental-async-context-frame";

/** The Node flags of one service process in the distributed mode. */
export const SERVICE_NODE_FLAGS = [`--max-old-space-size=${SERVICE_HEAP_MB}`, ASYNC_CONTEXT_FLAG];
/** The same, as NODE_OPTIONS (start:cluster, the image): Node accepts both flags there. */
export const SERVICE_NODE_OPTIONS = SERVICE_NODE_FLAGS.join(" ");

/**
 * Node flags of the embedded process (`npm start`: every service and PGlite in one process), in
 * package.json's start script (a test checks they agree) and in the benchmark's embedded targets.
 * Measured under `npm run bench:orders` (docs/operations.md, "Memory"; bench/README.md):
 * - `--liftoff-only`: PGlite's WebAssembly stays compiled by V8's baseline compiler. Tiering its
 *   hot functions up to TurboFan kept 60–80 MB more resident (the optimised code and what the
 *   compiler's background tasks allocated); PGlite alone is slower without it, but an order's CPU
 *   is mostly JavaScript, and the benchmark's orders per second and CPU per order did not drop.
 * - `--heap-growing-percent=30`: the next full GC comes once the heap is 30 % above what the last
 *   one kept. V8's own factor goes up to 4 × on a machine with this much memory: 30–50 MB of live
 *   objects let the heap reach 90–140 MB between full GCs.
 * - ASYNC_CONTEXT_FLAG: as in the distributed mode (above).
 */
export const EMBEDDED_NODE_FLAGS = ["--liftoff-only", "--heap-growing-percent=30", ASYNC_CONTEXT_FLAG];
