import { describeSqlLeaseNodes } from './sql-lease-nodes.scenario.js';

describeSqlLeaseNodes('mysql');
