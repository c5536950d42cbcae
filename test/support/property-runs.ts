/**
 * How many cases a fast-check property runs: `full` in `npm test`, a fifth of it (at least 20) with
 * `FROND_PROPERTY_RUNS=quick`, which `npm run test:unit` sets so the tier beside the sources stays
 * under a minute (the snowflake property alone took 38 s of its 72 at full length).
 */
export function propertyRuns(full: number, env: NodeJS.ProcessEnv = process.env): number {
  return env.FROND_PROPERTY_RUNS === 'quick' ? Math.max(20, Math.round(full / 5)) : full;
}
