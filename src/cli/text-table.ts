/**
 * Rows of cells as lines of aligned columns, two spaces apart, the first row the header: what
 * `frond tag list` and `frond db check` print, for a person (their `--json` or exit code is for a
 * program). Trailing blanks are cut.
 */
export function textTable(rows: readonly (readonly string[])[]): string[] {
  const widths =
    rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length))) ?? [];
  return rows.map((row) =>
    row
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd(),
  );
}
