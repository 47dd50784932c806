/**
 * How a partner's way of naming a reference becomes a record (docs/api.md, `POST /api/v1/orders`:
 * how the contact / each packaging is named): `internal` is the record's `id`; `external` is the
 * partner's own `externalReference`, or the record's `id` when the value is all digits. When a
 * value is both one record's external reference and another's id, the partner's own code wins.
 * Pure functions, so one query can fetch every candidate of a whole order at once.
 */
import { parseId } from "../../shared/http/params";
import type { ReferenceLookup } from "./references.params";

export interface LookupRow {
  id: number;
  external_reference: string;
}

/** The record id a value names, or null when it cannot be one (shared/http/params.ts: the id grammar). */
export function asRecordId(value: string): number | null {
  return parseId(value);
}

/** Every id and external reference any of these lookups could match: one query's filter. */
export function candidateKeys(lookups: ReferenceLookup[]): { ids: number[]; externalReferences: string[] } {
  const ids = new Set<number>();
  const externalReferences = new Set<string>();
  for (const l of lookups) {
    const id = asRecordId(l.value);
    if (id !== null) ids.add(id);
    if (l.by === "external") externalReferences.add(l.value);
  }
  return { ids: [...ids], externalReferences: [...externalReferences] };
}

export interface CandidateIndex<R extends LookupRow> {
  byId: Map<number, R>;
  byExternalReference: Map<string, R>;
}

export function indexCandidates<R extends LookupRow>(rows: R[]): CandidateIndex<R> {
  return {
    byId: new Map(rows.map((r) => [r.id, r])),
    byExternalReference: new Map(rows.map((r) => [r.external_reference, r])),
  };
}

/** The record one lookup names among the candidates, or null. */
export function pick<R extends LookupRow>(index: CandidateIndex<R>, lookup: ReferenceLookup): R | null {
  const id = asRecordId(lookup.value);
  const byId = id === null ? undefined : index.byId.get(id);
  if (lookup.by === "internal") return byId ?? null;
  return index.byExternalReference.get(lookup.value) ?? byId ?? null;
}
