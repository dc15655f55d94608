// The official TypeScript SDK client calling the everything server's `echo` over stdio N times;
// prints p50/p99 in ms. Run by the MCP benchmark (crates/mcp/examples/bench_mcp.rs) side by side
// with Codewright's client. Usage: node bench-mcp-sdk.mjs SERVERS_DIR N
import { pathToFileURL } from "node:url";
const [dir, n] = [process.argv[2], Number(process.argv[3] || 200)];
const sdk = (p) => import(pathToFileURL(`${dir}/node_modules/@modelcontextprotocol/sdk/dist/esm/${p}`).href);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");
const transport = new StdioClientTransport({
  command: "node",
  args: [`${dir}/node_modules/@modelcontextprotocol/server-everything/dist/index.js`, "stdio"],
  stderr: "ignore",
});
const client = new Client({ name: "bench", version: "1" });
await client.connect(transport);
for (let i = 0; i < 20; i++) await client.callTool({ name: "echo", arguments: { message: "warm" } });
const times = [];
for (let i = 0; i < n; i++) {
  const t = process.hrtime.bigint();
  await client.callTool({ name: "echo", arguments: { message: "hello" } });
  times.push(Number(process.hrtime.bigint() - t) / 1e6);
}
times.sort((a, b) => a - b);
console.log(JSON.stringify({ p50: times[Math.floor(n * 0.5)], p99: times[Math.min(n - 1, Math.floor(n * 0.99))] }));
await client.close();
