/**
 * The V8 heap cap of one service process in the distributed mode. Left alone, V8 grows the heap
 * lazily far past what a service needs (200+ MB on a large machine) and a pod meets its 192 Mi
 * memory limit; capped, a busy orders process stays near 140 MB RSS. The image sets the same
 * value (deploy/docker/Dockerfile; a test checks they agree).
 */
export const SERVICE_HEAP_MB = 112;
export const SERVICE_NODE_OPTIONS = `--max-old-space-size=${SERVICE_HEAP_MB}`;
