/** Order codes: `ORD-<YYYYMMDD>-<sequence>`, the sequence per UTC day, zero-padded to 6. */
export function codeDay(now: Date): string {
  return now.toISOString().slice(0, 10).replace(/-/g, "");
}

export function orderCode(day: string, sequence: number): string {
  return `ORD-${day}-${String(sequence).padStart(6, "0")}`;
}
