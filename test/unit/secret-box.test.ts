import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { ConfigError, loadConfig } from "../../shared/config/config";
import {
  newEncryptionKeyEntry,
  OPENED_KEPT_FOR_MS,
  parseEncryptionKeys,
  rememberingOpener,
  SecretBox,
  SecretBoxError,
} from "../../shared/security/secret-box";
import { EMBEDDED_KEY_FILE, secretBoxFor } from "../../shared/security/secrets-keyring";

const keysOf = (...entries: string[]) => parseEncryptionKeys(entries, "SECRETS_ENCRYPTION_KEYS").keys;

describe("secret box", () => {
  const k1 = newEncryptionKeyEntry("k1");
  const k2 = newEncryptionKeyEntry("k2");

  it("when a value is sealed, then it names its key, hides the value and opens to it again", () => {
    const box = new SecretBox(keysOf(k1));
    const sealed = box.seal("whsec_c2VjcmV0");
    expect(sealed).toMatch(/^v1\.k1\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(sealed).not.toContain("whsec_");
    expect(box.seal("whsec_c2VjcmV0")).not.toBe(sealed);
    expect(box.open(sealed)).toBe("whsec_c2VjcmV0");
  });

  it("when the keys are rotated, then old values still open and reseal moves them to the first key", () => {
    const old = new SecretBox(keysOf(k1)).seal("whk_abc");
    const rotated = new SecretBox(keysOf(k2, k1));
    expect(rotated.open(old)).toBe("whk_abc");
    const moved = rotated.reseal(old);
    expect(moved).toMatch(/^v1\.k2\./);
    expect(new SecretBox(keysOf(k2)).open(moved)).toBe("whk_abc");
    expect(rotated.reseal(moved)).toBe(moved);
    expect(rotated.open(rotated.reseal("whk_plain"))).toBe("whk_plain");
  });

  it("when a value was sealed with a key id that is not configured, then opening it says which one", () => {
    const sealed = new SecretBox(keysOf(k2)).seal("whk_abc");
    expect(() => new SecretBox(keysOf(k1)).open(sealed)).toThrow(SecretBoxError);
    expect(() => new SecretBox(keysOf(k1)).open(sealed)).toThrow(/key "k2".*SECRETS_ENCRYPTION_KEYS/);
  });

  it("when a sealed value is altered or is not sealed, then it does not open", () => {
    const box = new SecretBox(keysOf(k1));
    const sealed = box.seal("whk_abc");
    const flipped = sealed.slice(0, -2) + (sealed.at(-2) === "A" ? "B" : "A") + sealed.at(-1);
    expect(() => box.open(flipped)).toThrow(/damaged/);
    expect(() => box.open("whk_abc")).toThrow(/not in the encrypted form/);
  });

  it.each([
    ["no key id", "c2VjcmV0"],
    ["a short key", "k1:c2VjcmV0"],
    ["a bad key id", `a.b:${"A".repeat(43)}=`],
    ["the same id twice", `${k1},${k1}`],
  ])("when SECRETS_ENCRYPTION_KEYS has %s, then the configuration is refused naming it", (_what, value) => {
    expect(() => loadConfig({ SECRETS_ENCRYPTION_KEYS: value })).toThrow(/SECRETS_ENCRYPTION_KEYS/);
  });

  it("when SECRETS_ENCRYPTION_KEYS lists keys, then the configuration holds them in order", () => {
    expect(loadConfig({ SECRETS_ENCRYPTION_KEYS: `${k2},${k1}` }).secretsEncryptionKeys.map((k) => k.id)).toEqual([
      "k2",
      "k1",
    ]);
  });
});

describe("remembering opener", () => {
  it("when the same sealed value is opened again within a minute, then it is not decrypted again; a failure is not remembered; after the minute it is decrypted afresh", () => {
    const box = new SecretBox(keysOf(newEncryptionKeyEntry("k1")));
    const sealed = box.seal("whsec_abc");
    const opened: string[] = [];
    let failing = false;
    const opener = rememberingOpener({
      open: (s) => {
        opened.push(s);
        if (failing) throw new SecretBoxError("gone");
        return box.open(s);
      },
    });
    jest.useFakeTimers({ now: Date.parse("2026-05-01T00:00:00Z") });
    try {
      expect(opener.open(sealed)).toBe("whsec_abc");
      expect(opener.open(sealed)).toBe("whsec_abc");
      expect(opened).toHaveLength(1);

      failing = true;
      const other = box.seal("whsec_other");
      expect(() => opener.open(other)).toThrow(SecretBoxError);
      expect(() => opener.open(other)).toThrow(SecretBoxError);
      expect(opened).toHaveLength(3);

      jest.setSystemTime(Date.now() + OPENED_KEPT_FOR_MS + 1);
      expect(() => opener.open(sealed)).toThrow(SecretBoxError);
    } finally {
      jest.useRealTimers();
    }
  });
});

describe("secrets keyring", () => {
  let folder: string;
  beforeEach(() => {
    folder = fs.mkdtempSync(path.join(os.tmpdir(), "oi-keyring-"));
  });
  afterEach(() => fs.rmSync(folder, { recursive: true, force: true }));

  it("when the database is PostgreSQL and no key is configured, then it refuses naming the variable", () => {
    const cfg = { databaseUrl: `postgres://nobody@127.0.0.1:1/x-${Date.now()}`, secretsEncryptionKeys: [] };
    expect(() => secretBoxFor(cfg)).toThrow(ConfigError);
    expect(() => secretBoxFor(cfg)).toThrow(/SECRETS_ENCRYPTION_KEYS is required with a postgres:\/\/ DATABASE_URL/);
  });

  it("when an embedded folder has no key, then one is generated in it with a warning, and kept for the next process", () => {
    const warnings: string[] = [];
    const url = `pglite://${folder}/db`;
    const sealed = secretBoxFor({ databaseUrl: url, secretsEncryptionKeys: [] }, (l) => warnings.push(l)).seal(
      "whk_abc",
    );
    const file = path.join(folder, "db", EMBEDDED_KEY_FILE);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(warnings).toEqual([expect.stringContaining(file)]);
    // Another process: only the file is shared.
    const { keys } = parseEncryptionKeys([fs.readFileSync(file, "utf8").trim()], "file");
    expect(new SecretBox(keys).open(sealed)).toBe("whk_abc");
  });

  it("when keys are configured over an embedded folder that has a key file, then the file's key still opens what it sealed", () => {
    const url = `pglite://${folder}/db2`;
    const before = secretBoxFor({ databaseUrl: url, secretsEncryptionKeys: [] }, () => undefined).seal("whk_abc");
    const box = secretBoxFor({ databaseUrl: url, secretsEncryptionKeys: keysOf(newEncryptionKeyEntry("k9")) });
    expect(box.currentKeyId).toBe("k9");
    expect(box.open(before)).toBe("whk_abc");
  });

  it("when the database is in memory, then a key lives in the process only and nothing is written", () => {
    const box = secretBoxFor({ databaseUrl: "pglite://memory", secretsEncryptionKeys: [] });
    expect(box.open(box.seal("whk_abc"))).toBe("whk_abc");
    expect(fs.readdirSync(folder)).toEqual([]);
  });
});
