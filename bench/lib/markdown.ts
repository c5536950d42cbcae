/** A GitHub-flavoured markdown table; columns whose header starts with a space are right-aligned. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const align = header.map((cell) => (cell.startsWith(' ') ? '---:' : '---'));
  const line = (cells: readonly string[]) => `| ${cells.map((cell) => cell.trim()).join(' | ')} |`;
  return [line(header), `|${align.join('|')}|`, ...rows.map(line)].join('\n');
}

/** One benchmark's part of RESULTS.md: a heading, what was measured, the table, notes. */
export interface Section {
  title: string;
  /** How it was measured, in a sentence or two. */
  method: string;
  table: string;
  notes: string[];
}

export function renderSection(section: Section): string {
  const notes = section.notes.map((note) => `- ${note}`).join('\n');
  return `## ${section.title}\n\n${section.method}\n\n${section.table}\n${notes === '' ? '' : `\n${notes}\n`}`;
}
