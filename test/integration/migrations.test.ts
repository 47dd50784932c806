/**
 * Every service's migrations run up, down and up again in its own schema, leaving nothing
 * behind on the way down. (catalogue and references also check their exact tables in their
 * own test files.)
 */
import { SCHEMA_MIGRATIONS } from "../../runtime/migrations";
import { migrationRoundTrip } from "../helpers/migration-roundtrip";

describe.each(SCHEMA_MIGRATIONS.map(([schema, migrations]) => [schema, migrations] as const))(
  "the %s migrations",
  (schema, migrations) => {
    it("when run up, down and up again, then the tables come, go, and come back the same", async () => {
      const trip = await migrationRoundTrip(schema, migrations);
      expect(trip.afterUp.length).toBeGreaterThan(0);
      expect(trip.afterDown).toEqual([]);
      expect(trip.afterUpAgain).toEqual(trip.afterUp);
    });
  },
);
