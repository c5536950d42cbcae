// Rewrites the README's configuration table from src/cli/option-table.ts (test/readme.test.ts fails
// until it is run after a change to the table): node --import tsx scripts/write-readme-options.ts
import { readFileSync, writeFileSync } from 'node:fs';
import { README_TABLE_BEGIN as BEGIN, README_TABLE_END as END, readmeTable } from '../src/cli/help.js';
import { SERVE_OPTIONS } from '../src/cli/option-table.js';

const url = new URL('../README.md', import.meta.url);
const readme = readFileSync(url, 'utf8');
const from = readme.indexOf(BEGIN);
const to = readme.indexOf(END);
if (from === -1 || to < from) throw new Error(`README.md needs the lines ${BEGIN} and ${END}`);
writeFileSync(
  url,
  `${readme.slice(0, from + BEGIN.length)}\n${readmeTable(SERVE_OPTIONS)}\n${readme.slice(to)}`,
);
