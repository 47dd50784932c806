/**
 * The V8 heap cap of one service process in the distributed mode. Left alone, V8 grows the heap
 * lazily far past what a service needs (200+ MB on a large machine) and a pod meets its 192 Mi
 * memory limit; capped, a busy orders process stays near 140 MB RSS. The image sets the same
 * value (deploy/docker/Dockerfile; a test checks they agree).
 */
export const SERVICE_HEAP_MB = 112;
export const SERVICE_NODE_OPTIONS = `--max-old-space-size=${SERVICE_HEAP_MB}`;

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
 */
export const EMBEDDED_NODE_FLAGS = ["--liftoff-only", "--heap-growing-percent=30"];
