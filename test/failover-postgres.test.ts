import { describeFailover } from './failover.scenario.js';

describeFailover('postgres');
