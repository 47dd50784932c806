/**
 * Issue 25: the portal's settings — whether the page offers to type a key (PORTAL_KEY_SIGN_IN)
 * and who may frame it (PORTAL_FRAME_ANCESTORS) — as read from the environment and as the page
 * is served with them.
 */
import type { ServerResponse } from "node:http";
import type { GatewayResponse, IncomingRequest } from "moleculer-web";
import { ConfigError, loadConfig } from "../../shared/config/config";
import { portalRoutes, type PortalSettings } from "../../gateway/portal-routes";

type Handler = (req: IncomingRequest, res: GatewayResponse) => void;

function servePage(settings: PortalSettings): { headers: Record<string, string>; body: string } {
  const handler = (portalRoutes(settings)[0].aliases as Record<string, Handler>)["GET /"];
  let headers: Record<string, string> = {};
  let body = "";
  const res = {
    writeHead: (_status: number, h: Record<string, string>) => (headers = h),
    end: (b: Buffer) => (body = b.toString("utf8")),
  } as unknown as ServerResponse;
  handler({} as IncomingRequest, res as GatewayResponse);
  return { headers, body };
}

describe("portal settings", () => {
  it("when PORTAL_KEY_SIGN_IN is auto, then a key may be typed in the embedded mode or outside production, not in a distributed production deployment", () => {
    const distributed = { TRANSPORTER: "nats://nats:4222", DATABASE_URL: "postgres://db/x" };
    expect(loadConfig({}).portal.keySignIn).toBe(true);
    expect(loadConfig({ NODE_ENV: "development", ...distributed }).portal.keySignIn).toBe(true);
    expect(loadConfig({ NODE_ENV: "production", ...distributed }).portal.keySignIn).toBe(false);
    expect(loadConfig({ PORTAL_KEY_SIGN_IN: "off" }).portal.keySignIn).toBe(false);
    expect(loadConfig({ PORTAL_KEY_SIGN_IN: "on", NODE_ENV: "production", ...distributed }).portal.keySignIn).toBe(
      true,
    );
  });

  it("when the TTLs are given, then they are read as durations; the defaults are 15 minutes and an hour", () => {
    expect(loadConfig({}).portal).toMatchObject({ linkTtlMs: 15 * 60_000, sessionTtlMs: 3_600_000 });
    expect(loadConfig({ PORTAL_LINK_TTL: "5m", PORTAL_SESSION_TTL: "8h" }).portal).toMatchObject({
      linkTtlMs: 5 * 60_000,
      sessionTtlMs: 8 * 3_600_000,
    });
  });

  it("when PORTAL_FRAME_ANCESTORS names something that is not an origin, then the start is refused naming it", () => {
    expect(loadConfig({ PORTAL_FRAME_ANCESTORS: "https://app.example.com, 'self'" }).portal.frameAncestors).toEqual([
      "https://app.example.com",
      "'self'",
    ]);
    expect(() => loadConfig({ PORTAL_FRAME_ANCESTORS: "https://ok.example.com,javascript:alert(1)" })).toThrow(
      ConfigError,
    );
    expect(() => loadConfig({ PORTAL_FRAME_ANCESTORS: "https://a.example.com; script-src *" })).toThrow(
      /PORTAL_FRAME_ANCESTORS/,
    );
  });

  it("when the page is served, then its CSP names the allowed frame ancestors (none by default) and it knows whether a key may be typed", () => {
    const closed = servePage({ keySignIn: false, frameAncestors: [] });
    expect(closed.headers["Content-Security-Policy"]).toContain("frame-ancestors 'none'");
    expect(closed.body).toContain('data-key-sign-in="off"');

    const embedded = servePage({ keySignIn: true, frameAncestors: ["https://app.example.com"] });
    expect(embedded.headers["Content-Security-Policy"]).toContain("frame-ancestors https://app.example.com;");
    expect(embedded.body).toContain('data-key-sign-in="on"');
  });
});
