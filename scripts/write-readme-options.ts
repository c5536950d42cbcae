// Rewrites the settings table in docs/configuration.md from src/cli/option-table.ts
// (test/readme.test.ts fails until it is run after a change to the table):
// node --import tsx scripts/write-readme-options.ts
import { readFileSync, writeFileSync } from 'node:fs';
import { README_TABLE_BEGIN as BEGIN, README_TABLE_END as END, readmeTable } from '../src/cli/help.js';
import { SERVE_OPTIONS } from '../src/cli/option-table.js';

const url = new URL('../docs/configuration.md', import.meta.url);
const doc = readFileSync(url, 'utf8');
const from = doc.indexOf(BEGIN);
const to = doc.indexOf(END);
if (from === -1 || to < from) throw new Error(`docs/configuration.md needs the lines ${BEGIN} and ${END}`);
writeFileSync(url, `${doc.slice(0, from + BEGIN.length)}\n${readmeTable(SERVE_OPTIONS)}\n${doc.slice(to)}`);
