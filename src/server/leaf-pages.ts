import type { SegmentBufferState } from '../core/segment-buffer.js';
import type { SnowflakeParts } from '../core/snowflake-layout.js';
import type { TagRow } from '../core/tag-admin.js';

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(title: string, headers: string[], rows: (string | number | boolean)[][]): string {
  const head = headers.map((h) => `<th>${escapeHtml(h)}</th>`).join('');
  const body = rows
    .map((row) => `<tr>${row.map((cell) => `<td>${escapeHtml(String(cell))}</td>`).join('')}</tr>`)
    .join('\n');
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<style>body{font-family:sans-serif}table{border-collapse:collapse}td,th{border:1px solid #999;padding:2px 8px;text-align:right}</style>
</head><body><h1>${escapeHtml(title)}</h1>
<table><thead><tr>${head}</tr></thead><tbody>
${body}
</tbody></table></body></html>`;
}

/**
 * Leaf's `/cache` columns. frond keeps its current segment as segment 0 and the loaded next one as
 * segment 1, so `pos` is always 0; `step`, `loading` and `error` are frond's additions.
 */
export function cachePage(states: SegmentBufferState[]): string {
  const rows = states
    .sort((a, b) => (a.tag < b.tag ? -1 : 1))
    .map((s) => [
      s.tag,
      s.initialized,
      s.nextReady,
      0,
      s.current.value,
      s.current.max,
      s.current.step,
      s.next?.start ?? 0,
      s.next?.max ?? 0,
      s.next?.step ?? 0,
      s.step,
      s.loading,
      s.lastError ? `${s.lastError.code}: ${s.lastError.message}` : '',
    ]);
  return page(
    'frond segment cache',
    [
      'name',
      'init',
      'next',
      'pos',
      'value0',
      'max0',
      'step0',
      'value1',
      'max1',
      'step1',
      'step',
      'loading',
      'error',
    ],
    rows,
  );
}

/** Leaf's `/db`: the table as it is, `tag | max | step | update`. */
export function dbPage(rows: TagRow[]): string {
  return page(
    'frond leaf_alloc',
    ['tag', 'max', 'step', 'update'],
    rows.map((r) => [r.tag, r.maxId.toString(), r.step, r.updateTime?.toISOString() ?? '']),
  );
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** Leaf's decode answer: string values, the time as `<ms>(yyyy-MM-dd HH:mm:ss.SSS)` in the server's zone. */
export function leafDecodeBody(parts: SnowflakeParts): Record<string, string> {
  const d = new Date(parts.timestamp);
  const time = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
  return {
    timestamp: `${parts.timestamp}(${time})`,
    sequenceId: String(parts.sequence),
    workerId: String(parts.workerId),
  };
}
