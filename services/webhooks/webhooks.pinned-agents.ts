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
import type { ResolvedAddress } from "./webhooks.url-policy";

export interface PinnedAgents {
  httpAgent: http.Agent;
  httpsAgent: https.Agent;
}

/** Distinct subscriber addresses kept pooled; the least recently used pair is let go beyond it. */
const MAX_POOLED_ADDRESSES = 256;
/** An idle socket closes after this: a pair let go frees its sockets without cutting requests short. */
const IDLE_SOCKET_MS = 30_000;

function lookupOnly({ address, family }: ResolvedAddress): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
}

const pools = new Map<string, PinnedAgents>();

/** The agents that connect to this address only, whatever the URL's host name. */
export function agentsFor(target: ResolvedAddress): PinnedAgents {
  const id = `${target.family}/${target.address}`;
  let agents = pools.get(id);
  if (agents) {
    pools.delete(id);
  } else {
    const options = { keepAlive: true, timeout: IDLE_SOCKET_MS, lookup: lookupOnly(target) };
    agents = { httpAgent: new http.Agent(options), httpsAgent: new https.Agent(options) };
  }
  pools.set(id, agents);
  if (pools.size > MAX_POOLED_ADDRESSES) pools.delete(pools.keys().next().value as string);
  return agents;
}
