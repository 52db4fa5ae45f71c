// Writes js_strings.json: JSON inputs and what JavaScript's String() makes of each
// parsed value, the table TestJSStringTable and FuzzJSString check responses.go (jsString) against.
// Run with: node testdata/js_strings.mjs > testdata/js_strings.json
const inputs = [
  '"abc"', '""', '"with \\"quotes\\" and \\\\"', '"\\u00e9\\u2028"', 'true', 'false', 'null',
  '0', '-0', '1', '-1', '1.0', '1.50', '42', '1e21', '1e-7', '123456789012', '1e20', '1.5e-6',
  '0.1', '0.30000000000000004', '9007199254740993', '1.7976931348623157e308', '5e-324', '1e400', '-1e400',
  '[]', '[null]', '[1, "a", [2, 3]]', '[[], [[]], {"a": []}, true]', '[1.0, -0, 1e21]', '{}', '{"a": 1}',
  '[null, null]', '[[null], [1, [null]]]', '["a,b", "c"]',
];
// Doubles from a fixed 64-bit LCG over all exponents, and decimals with few digits.
let x = 0x2545F4914F6CDD1Dn;
const f64 = new Float64Array(1), u64 = new BigUint64Array(f64.buffer);
for (let i = 0; i < 1500; i++) {
  x = (x * 6364136223846793005n + 1442695040888963407n) & 0xFFFFFFFFFFFFFFFFn;
  u64[0] = x;
  if (Number.isFinite(f64[0])) inputs.push(JSON.stringify(f64[0]));
}
for (let i = 0; i < 300; i++) {
  x = (x * 6364136223846793005n + 1442695040888963407n) & 0xFFFFFFFFFFFFFFFFn;
  const digits = Number(x % 100000n), exp = Number((x >> 20n) % 50n) - 25;
  inputs.push(`${digits}e${exp}`);
}
const table = inputs.map((input) => {
  const v = JSON.parse(input);
  return { input, string: String(v) };
});
process.stdout.write(JSON.stringify(table, null, 1) + '\n');
