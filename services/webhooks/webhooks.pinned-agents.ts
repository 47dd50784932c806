/**
 * Keep-alive connection pools keyed by the address that passed the URL policy. Node pools
 * sockets by host and port: one opened to hooks.example.com while it resolved to a public
 * address would be reused after the name started resolving elsewhere, and a check on the new
 * address would guard nothing. Each checked address gets its own pair of agents whose `lookup`
 * answers that address only, so a request connects (or reuses a socket) to the very address
 * that was checked, never to what a second DNS lookup would say.
 */
import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import { LRUCache } from "lru-cache";
import type { ResolvedAddress } from "./webhooks.url-policy";

export interface PinnedAgents {
  httpAgent: http.Agent;
  httpsAgent: https.Agent;
}

/** Distinct subscriber addresses kept pooled; the least recently used pair is let go beyond it. */
const MAX_POOLED_ADDRESSES = 256;
/** An idle socket closes after this: a pair let go frees its sockets without cutting requests short. */
const IDLE_SOCKET_MS = 30_000;
/**
 * TCP keep-alive probes' initial delay, set by the agent each time a socket returns to the pool
 * (1 s by default). 60 s is what axios's own adapter used to set on every request's socket;
 * one value, set once per socket by Node (which skips the system call when it is unchanged),
 * where two values made two `Socket.setKeepAlive` calls per request (1 % of a webhooks process
 * in bench/README.md, issue 23).
 */
const KEEP_ALIVE_PROBE_DELAY_MS = 60_000;

function lookupOnly({ address, family }: ResolvedAddress): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
}

/** The least recently used address's agents are let go beyond MAX_POOLED_ADDRESSES. */
const pools = new LRUCache<string, PinnedAgents>({ max: MAX_POOLED_ADDRESSES });

/** The agents that connect to this address only, whatever the URL's host name. */
export function agentsFor(target: ResolvedAddress): PinnedAgents {
  const id = `${target.family}/${target.address}`;
  const pooled = pools.get(id);
  if (pooled) return pooled;
  const options = {
    keepAlive: true,
    keepAliveMsecs: KEEP_ALIVE_PROBE_DELAY_MS,
    timeout: IDLE_SOCKET_MS,
    lookup: lookupOnly(target),
  };
  const agents = { httpAgent: new http.Agent(options), httpsAgent: new https.Agent(options) };
  pools.set(id, agents);
  return agents;
}
