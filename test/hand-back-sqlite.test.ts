import { describeHandBack } from './hand-back.scenario.js';

describeHandBack('sqlite');
