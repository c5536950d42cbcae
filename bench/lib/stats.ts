/** The median of `values` (the mean of the two middle ones for an even count); NaN when empty. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** The value at quantile `q` (0..1) of an ascending array, nearest rank; NaN when empty. */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank] as number;
}

export interface LatencySummary {
  /** Milliseconds. */
  p50: number;
  p99: number;
  p999: number;
  max: number;
  samples: number;
}

export function summarize(latenciesMs: Float64Array): LatencySummary {
  const sorted = latenciesMs.slice().sort();
  return {
    p50: quantile(sorted, 0.5),
    p99: quantile(sorted, 0.99),
    p999: quantile(sorted, 0.999),
    max: sorted.length === 0 ? Number.NaN : (sorted[sorted.length - 1] as number),
    samples: sorted.length,
  };
}

/** A growable Float64Array: pushing a number allocates nothing on the load generator's hot path. */
export class Samples {
  private data = new Float64Array(1 << 16);
  length = 0;

  push(value: number): void {
    if (this.length === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.length++] = value;
  }

  values(): Float64Array {
    return this.data.subarray(0, this.length);
  }
}

/** How many values occur more than once: n minus the number of distinct values. */
export function countDuplicates(values: BigInt64Array | Float64Array): number {
  const sorted = values.slice().sort();
  let duplicates = 0;
  for (let i = 1; i < sorted.length; i++) if (sorted[i] === sorted[i - 1]) duplicates++;
  return duplicates;
}

export function countDuplicateStrings(values: readonly string[]): number {
  return values.length - new Set(values).size;
}

/** 12345678 -> "12.3 M", 4321 -> "4.32 k". */
export function si(value: number, digits = 3): string {
  if (!Number.isFinite(value)) return '–';
  // Rounded first, so that 999,700 is "1.00 M", not "1.00e+3 k".
  const abs = Number(Math.abs(value).toPrecision(digits));
  if (abs >= 1e9) return `${(value / 1e9).toPrecision(digits)} G`;
  if (abs >= 1e6) return `${(value / 1e6).toPrecision(digits)} M`;
  if (abs >= 1e3) return `${(value / 1e3).toPrecision(digits)} k`;
  return value.toPrecision(digits);
}

export function ms(value: number): string {
  if (!Number.isFinite(value)) return '–';
  if (value >= 100) return value.toFixed(0);
  if (value >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

export function percent(ratio: number): string {
  return Number.isFinite(ratio) ? `${(ratio * 100).toFixed(1)} %` : '–';
}

export function integer(value: number): string {
  return Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : '–';
}
