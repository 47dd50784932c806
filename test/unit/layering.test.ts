/**
 * The layering of docs/architecture.md ("Import rules"), read from the imports of every source
 * file that ships: shared/ is the ground floor, services stand on it side by side without
 * importing each other, the gateway knows no service, the composition root (runtime/ and the
 * broker options of moleculer.config.ts) sits on top, no two top-level folders import each other
 * round in a circle, and no file imports itself back through others, type-only imports included.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import {
  edgesOf,
  fileCycles,
  folderCycles,
  importGraph,
  LAYERING_RULES,
  relativeSpecifiers,
  sourceFiles,
  violations,
  type ImportEdge,
} from "../helpers/import-graph";

const ROOT = path.resolve(__dirname, "../..");
const edges = importGraph(ROOT);

const edge = (from: string, to: string): ImportEdge => ({ from, to });
const ruleNamed = (start: string) => LAYERING_RULES.find((rule) => rule.name.startsWith(start))!.name;

describe("reading the imports", () => {
  it("when a file imports in every form TypeScript allows, then each relative module is found and packages, node: and comments are not", () => {
    const source = [
      'import os from "node:os";',
      'import type { Knex } from "knex";',
      "import {",
      "  config,",
      "  type Config,",
      '} from "../shared/config";',
      'import type { Scope } from "../shared/auth";',
      'import * as orders from "../services/orders/orders.openapi";',
      'import "../shared/types";',
      'export { DOCS_PATH } from "./docs-paths";',
      'export * from "./outcomes";',
      'const later = await import("./later");',
      'const old = require("./old");',
      '// import { nothing } from "../gateway/commented-out";',
      '/* import { neither } from "../gateway/in-a-block"; */',
    ].join("\n");
    expect(relativeSpecifiers(source).sort()).toEqual(
      [
        "../services/orders/orders.openapi",
        "../shared/auth",
        "../shared/config",
        "../shared/types",
        "./docs-paths",
        "./later",
        "./old",
        "./outcomes",
      ].sort(),
    );
  });

  it("when the tree is read, then imports known to exist are in the graph, resolved to their files", () => {
    expect(edges).toEqual(
      expect.arrayContaining([
        edge("runtime/services.ts", "services/orders/orders.service.ts"),
        edge("runtime/services.ts", "gateway/gateway.service.ts"),
        edge("gateway/gateway.service.ts", "shared/shutdown.ts"),
        edge("moleculer.config.ts", "shared/config/config.ts"),
        edge("runtime/broker.ts", "moleculer.config.ts"),
      ]),
    );
  });
});

describe("the layering rules", () => {
  it.each([
    ["shared/ imports a service", edge("shared/messaging/events.ts", "services/orders/orders.service.ts"), "shared/"],
    ["shared/ imports the gateway", edge("shared/observability/readiness.ts", "gateway/problem.ts"), "shared/"],
    ["shared/ imports the composition root", edge("shared/database/db.ts", "runtime/migrations.ts"), "shared/"],
    ["shared/ imports moleculer.config.ts", edge("shared/messaging/channels.ts", "moleculer.config.ts"), "shared/"],
    [
      "a service imports another",
      edge("services/orders/orders.resolve.ts", "services/catalogue/catalogue.repository.ts"),
      "a service imports no other",
    ],
    [
      "a service imports the gateway",
      edge("services/webhooks/webhooks.service.ts", "gateway/problem.ts"),
      "a service imports nothing",
    ],
    [
      "a service imports the composition root",
      edge("services/clients/clients.service.ts", "runtime/broker.ts"),
      "a service imports nothing",
    ],
    [
      "the gateway imports a service",
      edge("gateway/openapi/components.ts", "services/orders/orders.openapi.ts"),
      "gateway/",
    ],
    [
      "the gateway imports the composition root",
      edge("gateway/openapi/document.ts", "runtime/services.ts"),
      "gateway/",
    ],
    [
      "a service imports moleculer.config.ts",
      edge("services/orders/orders.service.ts", "moleculer.config.ts"),
      "services/ and gateway/ import nothing from moleculer.config.ts",
    ],
    [
      "the gateway imports moleculer.config.ts",
      edge("gateway/gateway.service.ts", "moleculer.config.ts"),
      "services/ and gateway/ import nothing from moleculer.config.ts",
    ],
  ])("when %s, then that rule reports the import", (_case, forbidden, rule) => {
    expect(violations([forbidden])).toEqual({ [ruleNamed(rule)]: [`${forbidden.from} → ${forbidden.to}`] });
  });

  it.each([
    ["a service imports shared/", edge("services/orders/orders.service.ts", "shared/database/db.ts")],
    [
      "a service imports its own files",
      edge("services/orders/orders.service.ts", "services/orders/orders.repository.ts"),
    ],
    [
      "a service imports its own migrations",
      edge("services/orders/migrations/index.ts", "services/orders/migrations/20240101000000_orders.ts"),
    ],
    ["the gateway imports shared/", edge("gateway/gateway.service.ts", "shared/config.ts")],
    [
      "the composition root imports a service and the gateway",
      edge("runtime/services.ts", "services/orders/orders.service.ts"),
    ],
    ["moleculer.config.ts imports shared/", edge("moleculer.config.ts", "shared/messaging/channels.ts")],
    ["the composition root imports moleculer.config.ts", edge("runtime/broker.ts", "moleculer.config.ts")],
  ])("when %s, then no rule reports it", (_case, allowed) => {
    expect(violations([allowed])).toEqual({});
  });

  it("when two folders import each other, directly or round three, then the cycle is reported along its folders", () => {
    expect(folderCycles([edge("shared/a.ts", "gateway/b.ts"), edge("gateway/b.ts", "shared/c.ts")])).toEqual([
      ["shared", "gateway", "shared"],
    ]);
    expect(
      folderCycles([
        edge("runtime/a.ts", "gateway/b.ts"),
        edge("gateway/b.ts", "shared/c.ts"),
        edge("shared/c.ts", "runtime/d.ts"),
      ]),
    ).toEqual([["runtime", "gateway", "shared", "runtime"]]);
    expect(folderCycles([edge("shared/a.ts", "shared/b.ts"), edge("shared/b.ts", "shared/a.ts")])).toEqual([]);
  });
});

describe("import cycles between files", () => {
  it("when two files import each other, then the cycle is reported with both files", () => {
    expect(fileCycles([edge("shared/b.ts", "shared/a.ts"), edge("shared/a.ts", "shared/b.ts")])).toEqual([
      "shared/a.ts → shared/b.ts → shared/a.ts",
    ]);
  });

  it("when three files import each other round a circle, then the cycle is reported along its files", () => {
    expect(
      fileCycles([
        edge("services/orders/orders.intake.ts", "services/orders/orders.idempotency.ts"),
        edge("services/orders/orders.idempotency.ts", "services/orders/orders.repository.ts"),
        edge("services/orders/orders.repository.ts", "services/orders/orders.intake.ts"),
        edge("services/orders/orders.service.ts", "services/orders/orders.intake.ts"),
      ]),
    ).toEqual([
      "services/orders/orders.idempotency.ts → services/orders/orders.repository.ts → services/orders/orders.intake.ts → services/orders/orders.idempotency.ts",
    ]);
  });

  it("when the circle is made of type-only imports, then it is a cycle all the same", () => {
    const sources = {
      "services/orders/orders.repository.ts": 'import type { ContactSnapshot } from "./orders.representation";',
      "services/orders/orders.representation.ts": 'import type { OrderRow } from "./orders.repository";',
    };
    expect(fileCycles(edgesOf(sources))).toEqual([
      "services/orders/orders.repository.ts → services/orders/orders.representation.ts → services/orders/orders.repository.ts",
    ]);
  });

  it("when two circles share a file, then each is reported; a file importing itself is one too", () => {
    expect(
      fileCycles([
        edge("shared/a.ts", "shared/b.ts"),
        edge("shared/b.ts", "shared/a.ts"),
        edge("shared/a.ts", "shared/c.ts"),
        edge("shared/c.ts", "shared/a.ts"),
        edge("shared/d.ts", "shared/d.ts"),
      ]).sort(),
    ).toEqual([
      "shared/a.ts → shared/b.ts → shared/a.ts",
      "shared/a.ts → shared/c.ts → shared/a.ts",
      "shared/d.ts → shared/d.ts",
    ]);
  });

  it("when imports only point one way, even through a shared file, then there is no cycle", () => {
    expect(
      fileCycles([
        edge("runtime/start.ts", "runtime/broker.ts"),
        edge("runtime/broker.ts", "moleculer.config.ts"),
        edge("runtime/start.ts", "moleculer.config.ts"),
        edge("moleculer.config.ts", "shared/config/config.ts"),
      ]),
    ).toEqual([]);
  });

  it("when a service's source imports the broker options, then the layering rules report it", () => {
    const sources = {
      "services/orders/orders.service.ts": 'import type { brokerOptions } from "../../moleculer.config";',
      "moleculer.config.ts": 'import { config } from "./shared/config/config";',
      "shared/config/config.ts": "",
    };
    expect(violations(edgesOf(sources))).toEqual({
      [ruleNamed("services/ and gateway/ import nothing from moleculer.config.ts")]: [
        "services/orders/orders.service.ts → moleculer.config.ts",
      ],
    });
  });
});

describe("the source tree", () => {
  it("when its imports are checked against the layering rules, then none is broken", () => {
    expect(violations(edges)).toEqual({});
  });

  it("when its imports are drawn between top-level folders, then there is no cycle", () => {
    expect(folderCycles(edges)).toEqual([]);
  });

  it("when its imports are drawn between files, type-only ones included, then there is no cycle", () => {
    expect(fileCycles(edges)).toEqual([]);
  });
});

/**
 * True when the source imports the process-wide `config` reader of shared/config.ts (under any
 * alias) instead of being handed its settings at construction (shared/service-settings.ts).
 */
function importsConfigReader(source: string): boolean {
  const imports = source.matchAll(/import\s*\{([^}]*)\}\s*from\s*["'][^"']*\/config["']/g);
  return [...imports].some(([, names]) => names.split(",").some((name) => /^\s*config\b/.test(name)));
}

describe("reading the configuration", () => {
  it.each([
    ['import { config } from "../../shared/config/config";', true],
    ['import {\n  ConfigError,\n  config as settings,\n} from "./config";', true],
    ['import { type Config, loadConfig } from "../shared/config";', false],
    ['import type { Config } from "../../shared/config/config";', false],
    ['import { config } from "./other";', false],
  ])("when a file says %j, then reading the process configuration is %s", (source, reads) => {
    expect(importsConfigReader(source)).toBe(reads);
  });

  it("when the services, the gateway and shared/ are read, then none imports config(): each is handed its settings by the composition root", () => {
    const readers = sourceFiles(ROOT, ["services", "gateway", "shared"]).filter((file) =>
      importsConfigReader(readFileSync(path.join(ROOT, file), "utf8")),
    );
    expect(readers).toEqual([]);
  });
});
