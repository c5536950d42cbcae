import { describeDatabaseNodes } from './database-nodes.scenario.js';

describeDatabaseNodes('mysql');
