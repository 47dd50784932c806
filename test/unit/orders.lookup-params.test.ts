import { parseInstant } from "../../services/orders/orders.lookup-params";

describe("when a lookup names an instant in ISO 8601", () => {
  it.each([
    ["2026-11-27", "2026-11-27T00:00:00.000000Z"],
    ["2026-11-27T09:30Z", "2026-11-27T09:30:00.000000Z"],
    ["2026-11-27T09:30:15.123456+02:00", "2026-11-27T07:30:15.123456Z"],
    ["2026-01-01T00:30:00-01:00", "2026-01-01T01:30:00.000000Z"],
    ["2024-02-29", "2024-02-29T00:00:00.000000Z"],
    ["2000-02-29T23:59:59.5Z", "2000-02-29T23:59:59.500000Z"],
  ])("then %s is the UTC instant %s, to the microsecond", (text, utc) => {
    expect(parseInstant(text)).toBe(utc);
  });

  it.each([
    "2026-02-29",
    "1900-02-29",
    "2026-04-31",
    "2026-13-01",
    "0000-01-01",
    "2026-11-27T09:30",
    "2026-11-27T24:00Z",
    "2026-11-27T09:60Z",
    "2026-11-27T09:30:00.1234567Z",
    "2026-11-27 09:30Z",
    "yesterday",
  ])("then %s is refused", (text) => {
    expect(parseInstant(text)).toBeNull();
  });
});
