// `node build/controller/operators/prometheusjmxexporter/fetch-agent.js [path]`: puts the pinned agent jar at
// `path` (default where the controller looks). The image build and the test run call it.
import { agentPath, fetchAgent } from './agent.ts';

console.log(await fetchAgent(process.argv[2] ?? agentPath()));
