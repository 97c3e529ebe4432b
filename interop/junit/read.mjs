// Reads a JUnit XML report as CI systems do and prints what they would
// show, as JSON: the totals and each suite's cases with their status.
// The file is checked first against the JUnit schema's rules that CI
// readers rely on (well-formed XML; a testsuites root of testsuite
// elements with name, tests, failures, errors and time; testcases with
// name, classname and time; a suite's counts matching its testcases);
// then test-results-parser, the JUnit reader of CI reporting tools, reads
// it. Any mistake exits 1 with the reason on stderr.
//
//   node read.mjs report.xml
import { readFileSync } from "node:fs";
import { XMLParser, XMLValidator } from "fast-xml-parser";
import { parse } from "test-results-parser";

const file = process.argv[2];
if (!file) {
  console.error("usage: node read.mjs REPORT.xml");
  process.exit(2);
}
const xml = readFileSync(file, "utf8");
const problems = [];
const valid = XMLValidator.validate(xml);
if (valid !== true) {
  console.error(`not well-formed XML: ${JSON.stringify(valid.err)}`);
  process.exit(1);
}
const list = (v) => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
const doc = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: "" }).parse(xml);
const root = doc.testsuites;
if (!root) problems.push("the root element is not testsuites");
const number = (v) => v !== undefined && v !== "" && Number.isFinite(Number(v));
let total = 0;
for (const s of list(root?.testsuite)) {
  for (const a of ["name", "tests", "failures", "errors", "time"]) {
    if (a === "name" ? !s[a] : !number(s[a])) problems.push(`testsuite ${s.name}: attribute ${a} missing or not a number`);
  }
  const cases = list(s.testcase);
  let failures = 0, errors = 0;
  for (const c of cases) {
    for (const a of ["name", "classname", "time"]) {
      if (a === "time" ? !number(c[a]) : !c[a]) problems.push(`testcase ${c.name}: attribute ${a} missing`);
    }
    if (c.failure !== undefined) failures++;
    if (c.error !== undefined) errors++;
    if (c.failure !== undefined && c.error !== undefined) problems.push(`testcase ${c.name}: both failure and error`);
  }
  if (Number(s.tests) !== cases.length) problems.push(`testsuite ${s.name}: tests=${s.tests} but ${cases.length} testcases`);
  if (Number(s.failures) !== failures) problems.push(`testsuite ${s.name}: failures=${s.failures} but ${failures} failed testcases`);
  if (Number(s.errors) !== errors) problems.push(`testsuite ${s.name}: errors=${s.errors} but ${errors} erring testcases`);
  total += cases.length;
}
if (root && Number(root.tests) !== total) problems.push(`testsuites: tests=${root.tests} but ${total} testcases`);
if (problems.length) {
  console.error(problems.join("\n"));
  process.exit(1);
}

const result = parse({ type: "junit", files: [file] });
console.log(JSON.stringify({
  total: result.total,
  passed: result.passed,
  failed: result.failed,
  errors: result.errors,
  suites: result.suites.map((s) => ({
    name: s.name,
    total: s.total,
    passed: s.passed,
    failed: s.failed,
    errors: s.errors,
    cases: s.cases.map((c) => ({ name: c.name, status: c.status, failure: c.failure || "" })),
  })),
}));
