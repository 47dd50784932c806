/**
 * Who may come into /api/v1, in this order: a source that failed authentication too often is
 * refused (429) before anything is looked up, unless its key may exist (gateway/active-keys.ts:
 * a valid key is served whatever others failed from its address or with its first characters);
 * the Bearer key is resolved to its client (the principal cache, else `clients.authenticate`), a
 * failure being counted against the source; then the client's request is counted against its
 * own rate limit. The gateway's `authenticate` method is this and nothing else.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Principal } from "../shared/security/auth";
import type { Config } from "../shared/config/config";
import { ErrorType, UnauthenticatedError } from "../shared/errors";
import type { ActiveKeys } from "./active-keys";
import { AuthThrottle, type AuthAttempt } from "./auth-throttle";
import { clientAddress, TrustedProxies } from "./client-address";
import type { PrincipalCache } from "./principal-cache";
import { ClientRateLimit } from "./rate-limit";
import type { UsageSharing } from "./usage-sharing";

/** Any case of `Bearer`, any run of spaces: all spellings of one key are the same key. */
const BEARER = /^Bearer\s+(\S{1,512})\s*$/i;

export type LookUpKey = (apiKey: string) => Promise<Principal>;

function isUnauthenticated(err: unknown): boolean {
  return (err as { type?: unknown } | null)?.type === ErrorType.unauthenticated;
}

export class Admission {
  private readonly throttle: AuthThrottle;
  private readonly rateLimit: ClientRateLimit;
  private readonly trustedProxies: TrustedProxies;

  constructor(
    private readonly principals: PrincipalCache,
    private readonly activeKeys: ActiveKeys,
    sharing: UsageSharing,
    cfg: Pick<Config, "rateLimitPerMinute" | "authFailuresPerMinute" | "trustProxy">,
  ) {
    this.throttle = new AuthThrottle(sharing, cfg.authFailuresPerMinute);
    this.rateLimit = new ClientRateLimit(sharing, cfg.rateLimitPerMinute);
    this.trustedProxies = new TrustedProxies(cfg.trustProxy);
  }

  async admit(req: IncomingMessage, res: ServerResponse, lookUp: LookUpKey): Promise<Principal> {
    const attempt: AuthAttempt = {
      address: clientAddress(req, this.trustedProxies),
      apiKey: BEARER.exec(req.headers.authorization ?? "")?.[1],
    };
    const block = await this.throttle.blocked(attempt);
    if (block && !(attempt.apiKey && (await this.activeKeys.mayExist(attempt.apiKey))))
      throw this.throttle.refusal(block, res);
    const principal = await this.authenticate(attempt, res, lookUp);
    await this.rateLimit.admit(principal.clientId, res);
    return principal;
  }

  private async authenticate(attempt: AuthAttempt, res: ServerResponse, lookUp: LookUpKey): Promise<Principal> {
    if (!attempt.apiKey) {
      await this.throttle.recordFailure(attempt, res);
      throw new UnauthenticatedError();
    }
    try {
      return await this.principals.resolve(attempt.apiKey, lookUp);
    } catch (err) {
      // Only a refused key is a failure: the clients service being down is not the caller's fault.
      if (isUnauthenticated(err)) await this.throttle.recordFailure(attempt, res);
      throw err;
    }
  }
}
