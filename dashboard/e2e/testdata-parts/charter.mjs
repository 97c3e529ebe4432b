// A stdio MCP server with one tool, draw_chart, whose result holds a PNG
// image and a PDF resource besides its text: the tool output with parts
// that the dashboard's browser test shows. JSON-RPC lines on stdin and
// stdout, as the MCP stdio transport sends them.
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";

const here = new URL(".", import.meta.url).pathname;
const chart = readFileSync(here + "chart.png").toString("base64");
const pdf = readFileSync(here + "report.pdf").toString("base64");
const send = (msg) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...msg }) + "\n");

createInterface({ input: process.stdin }).on("line", (line) => {
  let req;
  try { req = JSON.parse(line); } catch { return; }
  if (req.id === undefined) return; // a notification
  switch (req.method) {
    case "initialize":
      return send({ id: req.id, result: { protocolVersion: req.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "charter", version: "1.0.0" } } });
    case "tools/list":
      return send({ id: req.id, result: { tools: [{ name: "draw_chart", description: "Draws the sales chart", inputSchema: { type: "object", properties: {} } }] } });
    case "tools/call":
      return send({ id: req.id, result: { content: [
        { type: "text", text: "the sales chart and its data" },
        { type: "image", data: chart, mimeType: "image/png" },
        { type: "resource", resource: { uri: "file:///reports/sales.pdf", mimeType: "application/pdf", blob: pdf } },
      ] } });
    case "ping":
      return send({ id: req.id, result: {} });
    default:
      return send({ id: req.id, error: { code: -32601, message: "no method " + req.method } });
  }
});
